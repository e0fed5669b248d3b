"""Parameter counts from real config.json files against the published counts (tests/assets/plan/PROVENANCE.md)."""

from __future__ import annotations

import json
import os

import pytest

from envcheck.errors import UsageError
from envcheck.plan.params import from_config, load_config, load_model, parse_count

ASSETS = os.path.join(os.path.dirname(__file__), "assets", "plan")

# file -> (published total, published active or None); sources in PROVENANCE.md
PUBLISHED = {
    "Llama-2-7b-hf": (6.74e9, None),
    "Llama-2-13b-hf": (13.0e9, None),
    "Llama-2-70b-hf": (69.0e9, None),
    "Llama-3.1-8B": (8.03e9, None),
    "Llama-3.2-1B": (1.24e9, None),
    "Mistral-7B-v0.1": (7.24e9, None),
    "Qwen2-7B-Instruct": (7.62e9, None),
    "Qwen2.5-3B-Instruct": (3.09e9, None),
    "Qwen3-0.6B": (0.6e9, None),
    "gemma-2-9b": (9.24e9, None),
    "Mixtral-8x7B-v0.1": (46.7e9, 12.9e9),
    "Qwen1.5-MoE-A2.7B-Chat": (14.3e9, 2.7e9),
    "DeepSeek-V2-Lite": (15.7e9, None),
}


def test_every_shipped_config_is_checked():
    shipped = {name.removesuffix(".config.json") for name in os.listdir(ASSETS) if name.endswith(".config.json")}
    assert shipped == set(PUBLISHED)
    assert len(shipped) >= 10


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_count_within_one_percent_of_published(name):
    total, active = PUBLISHED[name]
    spec = load_config(os.path.join(ASSETS, f"{name}.config.json"))
    assert spec.params == pytest.approx(total, rel=0.01)
    if active is not None:
        assert spec.active_params == pytest.approx(active, rel=0.01)
    else:
        assert spec.active_params <= spec.params


def test_exact_counts_of_known_models():
    """Exact values: Llama-2-7B's safetensors hold 6,738,415,616 parameters; Mixtral-8x7B 46,702,792,704."""
    assert load_config(os.path.join(ASSETS, "Llama-2-7b-hf.config.json")).params == 6_738_415_616
    assert load_config(os.path.join(ASSETS, "Mixtral-8x7B-v0.1.config.json")).params == 46_702_792_704


def test_tied_embeddings_count_once():
    with open(os.path.join(ASSETS, "Llama-3.2-1B.config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    tied = from_config(config, "tied")
    untied = from_config({**config, "tie_word_embeddings": False}, "untied")
    assert untied.params - tied.params == config["vocab_size"] * config["hidden_size"]


def test_lora_counts_match_ms_swift():
    """ms-swift reports 19.9885M trainable for Llama-2-7B LoRA r=8 on all linear layers."""
    spec = load_config(os.path.join(ASSETS, "Llama-2-7b-hf.config.json"))
    assert spec.lora_params(8, "all") == pytest.approx(19.9885e6, rel=1e-4)
    assert spec.lora_params(8, "qv") == 32 * 8 * (4096 + 4096) * 2
    assert spec.lora_params(8, "q_proj,v_proj") == spec.lora_params(8, "qv")
    assert spec.lora_params(16, "all") == 2 * spec.lora_params(8, "all")


def test_moe_largest_module_and_linear_weights():
    spec = load_config(os.path.join(ASSETS, "Qwen1.5-MoE-A2.7B-Chat.config.json"))
    assert spec.largest_module == 151936 * 2048  # the embedding
    assert spec.linear_weight_params < spec.params - spec.embedding_params


def test_bare_counts():
    assert parse_count("7B") == 7 * 10**9
    assert parse_count("8.03e9") == 8_030_000_000
    assert parse_count("560m") == 560 * 10**6
    assert parse_count("config.json") is None
    spec = load_model("13B")
    assert spec.params == 13 * 10**9
    assert spec.shape.hidden == 5120


@pytest.mark.parametrize("text, message", [("12", "too small"), ("no-such.json", "neither a parameter count")])
def test_bad_model_argument(text, message):
    with pytest.raises(UsageError, match=message):
        load_model(text)


def test_bad_config_names_the_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}))
    with pytest.raises(UsageError, match="vocab_size"):
        load_model(str(path))
    path.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        load_model(str(path))
    path.write_text("[]")
    with pytest.raises(UsageError, match="JSON object"):
        load_model(str(tmp_path))
