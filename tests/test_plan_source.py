"""MODEL as users name it (a hub id from the local Hugging Face cache or the bundled table, a config.json, a
LLaMA-Factory training YAML), the GPU's capabilities deciding precision and attention, the DeepSpeed file's
refusal for plans that do not fit, and warnings for host RAM taken from another machine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envcheck import cli
from envcheck.plan import zoo
from envcheck.plan.gpu import LOGITS_BYTES_PER_TOKEN_VOCAB
from envcheck.plan.lfyaml import read_flat_yaml, training_setup
from envcheck.plan.params import from_config, load_config
from envcheck.plan.source import cached_config, resolve_model

ASSETS = Path(__file__).parent / "assets" / "plan"
LORA_YAML = ASSETS / "llama3_lora_sft.yaml"  # LLaMA-Factory examples/train_lora (see PROVENANCE.md)
FULL_YAML = ASSETS / "qwen3_full_sft.yaml"  # LLaMA-Factory examples/train_full
GIB = 2**30


def plan(capsys, *args: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def plan_json(capsys, *args: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    code, out, err = plan(capsys, *args, "--json")
    assert code in (0, 1), err
    return json.loads(out)


def _fake_cache(root: Path, hub_id: str, config: Path, rev: str = "0123abcd") -> Path:
    repo = root / "hub" / ("models--" + hub_id.replace("/", "--"))
    (repo / "snapshots" / rev).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    shutil.copy(config, repo / "snapshots" / rev / "config.json")
    return repo / "snapshots" / rev / "config.json"


def test_hub_id_from_the_local_hugging_face_cache(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    real = ASSETS / "Qwen2-7B-Instruct.config.json"
    path = _fake_cache(tmp_path, "Qwen/Qwen2-7B-Instruct", real)
    assert cached_config("Qwen/Qwen2-7B-Instruct") == str(path)
    data = plan_json(capsys, "Qwen/Qwen2-7B-Instruct", "--gpu-mem", "80", "--host-mem", "64")
    assert data["model"]["params"] == load_config(str(real)).params
    assert "Hugging Face cache" in data["model"]["source"] and str(path) in data["model"]["source"]
    # a private model the table cannot know is found in the cache too
    _fake_cache(tmp_path, "acme/private-llama", ASSETS / "Llama-3.1-8B.config.json")
    assert plan_json(capsys, "acme/private-llama", "--gpu-mem", "80", "--host-mem", "64")["model"]["params"] \
        == 8_030_261_248


def test_hub_id_from_the_bundled_table(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    data = plan_json(capsys, "Qwen/Qwen2.5-7B", "--gpu-mem", "80", "--host-mem", "64")
    assert data["model"]["params"] == pytest.approx(7.616e9, rel=0.001)
    assert "bundled table" in data["model"]["source"] and "Qwen/Qwen2.5-7B/blob/" in data["model"]["source"]
    # the 152k vocabulary, not a Llama-2 32k one
    assert data["gpu_bytes_per_device"]["activations_logits"] == LOGITS_BYTES_PER_TOKEN_VOCAB * 2048 * 152064
    instruct = plan_json(capsys, "qwen/qwen2.5-7b-instruct", "--gpu-mem", "80", "--host-mem", "64")
    assert instruct["model"]["params"] == data["model"]["params"]


def test_unknown_hub_id_says_how_to_give_a_config(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    code, out, err = plan(capsys, "acme/unheard-of-13b", "--gpu-mem", "80")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "config.json" in err and "bundled table" in err


@pytest.mark.parametrize("name", zoo.names())
def test_bundled_entries_count_what_their_model_cards_publish(name):
    config, checked, published = zoo.entries()[name]
    assert checked in ("mlc", "asset", "ref", "card")
    spec = from_config(config, name)
    # Gemma 3 12B's published 12.2B includes its vision encoder; the table holds the text decoder
    assert spec.params / 1e9 == pytest.approx(published, rel=0.04 if "gemma-3" in name else 0.015)


def test_bundled_entries_agree_with_the_asset_configs():
    for name, asset in (("meta-llama/Llama-3.1-8B", "Llama-3.1-8B"), ("Qwen/Qwen2-7B", "Qwen2-7B-Instruct"),
                        ("google/gemma-2-9b", "gemma-2-9b"), ("mistralai/Mixtral-8x7B-v0.1", "Mixtral-8x7B-v0.1"),
                        ("deepseek-ai/DeepSeek-V2-Lite", "DeepSeek-V2-Lite"), ("Qwen/Qwen3-0.6B", "Qwen3-0.6B")):
        assert resolve_model(name).params == load_config(str(ASSETS / f"{asset}.config.json")).params, name


def test_llama_factory_lora_yaml_is_the_run_it_starts(capsys):
    model, options, _ = training_setup(str(LORA_YAML))
    assert model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert options == {"method": "lora", "lora_rank": 8, "seq_len": 2048, "grad_accum": 8, "batch": 1,
                       "lora_targets": "all", "precision": "bf16", "attention": "sdpa", "grad_ckpt": True,
                       "fused_loss": False}
    data = plan_json(capsys, str(LORA_YAML), "--gpu", "A100 80GB", "--host-mem", "128")
    config = data["config"]
    assert (config["method"], config["precision"], config["grad_accum"], config["seq_len"]) == \
        ("lora", "bf16", 8, 2048)
    assert data["model"]["params"] == 8_030_261_248 and data["fits"]
    # a flag wins over the file
    assert plan_json(capsys, str(LORA_YAML), "--gpu-mem", "80", "--host-mem", "128",
                     "--seq-len", "4096")["config"]["seq_len"] == 4096


def test_llama_factory_full_yaml_takes_its_deepspeed_stage(capsys, tmp_path):
    data = plan_json(capsys, str(FULL_YAML), "--gpu", "A100 80GB", "--gpus", "2", "--host-mem", "512")
    assert data["config"]["zero"] == 3 and data["recommendation"]["auto"] is False
    assert any("read from its name" in line for line in data["choices"])
    # inside a LLaMA-Factory checkout the deepspeed file itself is read
    tree = tmp_path / "LLaMA-Factory"
    (tree / "examples" / "train_full").mkdir(parents=True)
    (tree / "examples" / "deepspeed").mkdir()
    text = FULL_YAML.read_text().replace("ds_z3_config.json", "ds_z3_offload_config.json")
    (tree / "examples" / "train_full" / "x.yaml").write_text(text)
    zero = {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}
    (tree / "examples" / "deepspeed" / "ds_z3_offload_config.json").write_text(json.dumps({"zero_optimization": zero}))
    data = plan_json(capsys, str(tree / "examples" / "train_full" / "x.yaml"), "--gpu-mem", "24", "--host-mem", "512")
    assert (data["config"]["zero"], data["config"]["offload"]) == (3, "all")


def test_yaml_switches(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("model_name_or_path: 'Qwen/Qwen2.5-7B'  # quoted\nfinetuning_type: lora\nquantization_bit: 4\n"
                    "pure_bf16: true\nflash_attn: fa2\ndisable_gradient_checkpointing: true\n"
                    "lora_target: q_proj, v_proj\n---\n")
    model, options, _ = training_setup(str(path))
    assert model == "Qwen/Qwen2.5-7B"
    assert options["method"] == "qlora" and options["quant_bits"] == 4 and options["precision"] == "pure_bf16"
    assert options["attention"] == "flash" and options["grad_ckpt"] is False and options["batch"] == 8
    assert options["lora_targets"] == "q_proj,v_proj"
    assert read_flat_yaml(str(LORA_YAML))["learning_rate"] == 1.0e-4


@pytest.mark.parametrize("text, message", [
    ("model_name_or_path: x/y\nlora_target:\n  - q_proj\n", "nested YAML"),
    ("finetuning_type: lora\n", "model_name_or_path: missing"),
    ("model_name_or_path: x/y\nfinetuning_type: oft\n", "envcheck plans lora, freeze and full"),
    ("model_name_or_path: x/y\ncutoff_len: long\n", "cutoff_len: expected a positive whole number"),
    ("just words\n", "expected 'key: value'"),
])
def test_bad_yaml_is_one_line_and_exit_2(capsys, tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, out, err = plan(capsys, str(path), "--gpu-mem", "80")
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


@pytest.mark.parametrize("gpu, precision, attention", [("T4", "fp16", "sdpa"), ("V100 32GB", "fp16", "sdpa"),
                                                       ("V100 16GB", "fp16", "sdpa"), ("A100 40GB", "bf16", "flash"),
                                                       ("H100 80GB", "bf16", "flash"), ("RTX 4090", "bf16", "flash")])
def test_the_gpu_decides_precision_and_attention(capsys, tmp_path, gpu, precision, attention):
    target = tmp_path / "ds.json"
    data = plan_json(capsys, "Qwen/Qwen2.5-1.5B", "--gpu", gpu, "--host-mem", "64",
                     "--emit-ds-config", str(target), "--force")
    assert (data["config"]["precision"], data["config"]["attention"]) == (precision, attention)
    assert any(line.startswith(f"precision {precision}") for line in data["choices"])
    assert data["hardware"]["compute_capability"]
    written = json.loads(target.read_text())
    assert written["bf16"]["enabled"] == "auto" and written["fp16"]["enabled"] == "auto"


def test_a_gpu_without_bf16_refuses_the_flag_and_warns_for_the_yaml(capsys):
    code, out, err = plan(capsys, "7B", "--gpu", "T4", "--precision", "bf16", "--host-mem", "64")
    assert code == 2 and "compute capability 7.5" in err and "use fp16" in err
    code, out, err = plan(capsys, "7B", "--gpu", "V100 32GB", "--attention", "flash", "--host-mem", "64")
    assert code == 2 and "FlashAttention-2 needs 8.0" in err
    code, out, err = plan(capsys, str(LORA_YAML), "--gpu", "T4", "--host-mem", "64")
    assert code in (0, 1)
    assert out.startswith("WARNING    bf16: true in") and "set fp16: true" in out
    assert "setup      lora r=8 (all), fp16," in out and "sdpa attention" in out


def test_emit_ds_config_refuses_a_plan_that_does_not_fit(capsys, tmp_path):
    target = tmp_path / "ds.json"
    code, out, err = plan(capsys, "70B", "--method", "full", "--gpus", "1", "--gpu-mem", "24", "--host-mem", "64",
                          "--emit-ds-config", str(target))
    assert code == 1 and "DOES NOT FIT" in out
    assert not target.exists() and "not written" in err and "--force" in err
    code, _, _ = plan(capsys, "70B", "--method", "full", "--gpus", "1", "--gpu-mem", "24", "--host-mem", "64",
                      "--emit-ds-config", str(target), "--force")
    assert code == 1 and json.loads(target.read_text())["train_batch_size"] == "auto"


def test_host_ram_of_this_machine_for_other_hardware_is_a_warning_at_the_top(capsys):
    code, out, _ = plan(capsys, "7B", "--gpu", "H100 80GB", "--gpus", "8")
    assert out.startswith("WARNING    host RAM is this machine's") and "--host-mem" in out.splitlines()[0]
    data = plan_json(capsys, "7B", "--gpu", "H100 80GB", "--gpus", "8")
    assert data["warnings"] and "8 GPU(s) per node" in data["warnings"][0]
    assert plan_json(capsys, "7B", "--gpu", "H100 80GB", "--gpus", "8", "--host-mem", "1024")["warnings"] == []


def test_verdict_and_exit_code_follow_the_largest_phase_resume_included(capsys):
    # 13B full fine-tune on 4 x A100-80GB: resuming loads every rank's fp32 optimizer partition into host RAM
    args = ["meta-llama/Llama-2-13b-hf", "--method", "full", "--gpus", "4", "--gpu", "A100 80GB", "--zero", "3"]
    code, out, _ = plan(capsys, *args, "--host-mem", "180")
    data = plan_json(capsys, *args, "--host-mem", "180")
    host = data["host_bytes_per_node"]
    assert host["total"] == max(host["load_peak"], host["steady"], host["checkpoint_peak"], host["resume_peak"])
    assert host["resume_peak"] == host["total"] > 180 * GIB * 0.9
    assert code == 1 and data["fits"] is False and "at resume" in out and "DOES NOT FIT" in out
    code, out, _ = plan(capsys, *args, "--host-mem", "256")
    assert code == 0 and "at resume" in out and "FITS" in out


def test_help_examples_name_a_hub_id_and_a_yaml_and_run(capsys, tmp_path):
    import argparse
    import shlex

    from envcheck.plan import cli as plan_cli

    parser = argparse.ArgumentParser()
    plan_cli.add_parser(parser.add_subparsers())
    epilog = parser._subparsers._group_actions[0].choices["plan"].epilog  # type: ignore[union-attr]
    examples = [line.strip() for line in epilog.splitlines() if line.strip().startswith("envcheck plan")]
    assert any("Qwen/Qwen2.5-7B" in line for line in examples) and any(".yaml" in line for line in examples)
    swap = {"examples/train_lora/llama3_lora_sft.yaml": str(LORA_YAML), "ds.json": str(tmp_path / "ds.json"),
            "~/models/qwen2.5-7b/config.json": str(ASSETS / "Qwen2-7B-Instruct.config.json")}
    for line in examples:
        words = [swap.get(word, word) for word in shlex.split(line)[1:]]
        assert cli.main(words) == 0, line  # every example is a plan that fits
        capsys.readouterr()
