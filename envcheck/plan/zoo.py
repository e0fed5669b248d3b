"""Bundled config.json fields of popular models, for `envcheck plan ORG/NAME` when the model is not in the local
Hugging Face cache (nothing is downloaded at run time).

Each entry keeps only the fields that decide memory (hidden_size, intermediate_size, num_hidden_layers,
num_attention_heads, num_key_value_heads, vocab_size, tie_word_embeddings, head_dim, MoE experts, MLA ranks).
`source` is the model repository's config.json; `checked` says where the values were compared:
- "mlc": the copy MLC LLM keeps in python/mlc_llm/model/model_preset.py (mlc-ai/mlc-llm, file at commit
  d1ea69a87280e821611643958bfec385b62dafd3), the same copy tests/assets/plan/PROVENANCE.md uses;
- "asset": a config.json under tests/assets/plan/ (same MLC copy);
- "ref": /work/shared/reference/memory-model.md §7.5 (computed count = published count);
- "card": the values published on the model's config.json and model card, written here without a copy on this
  machine to compare against (no hub access): the parameter count they give is checked against the card's count
  in tests/test_plan_zoo.py.
The revision is the repository's main branch as of 2026; the hub serves the same file at
`{source}` with `blob/main` replaced by `blob/<commit>` for a pinned read.
"""

from __future__ import annotations

from typing import Any

_HF = "https://huggingface.co/{}/blob/main/config.json"

# id: (model_type, hidden, intermediate, layers, heads, kv_heads, vocab, tied, extra fields, checked, published B)
_DENSE: dict[str, tuple[Any, ...]] = {
    "meta-llama/Llama-2-7b-hf": ("llama", 4096, 11008, 32, 32, 32, 32000, False, {}, "asset", 6.74),
    "meta-llama/Llama-2-13b-hf": ("llama", 5120, 13824, 40, 40, 40, 32000, False, {}, "asset", 13.0),
    "meta-llama/Llama-2-70b-hf": ("llama", 8192, 28672, 80, 64, 8, 32000, False, {}, "asset", 69.0),
    "meta-llama/Meta-Llama-3-8B": ("llama", 4096, 14336, 32, 32, 8, 128256, False, {}, "ref", 8.03),
    "meta-llama/Meta-Llama-3-70B": ("llama", 8192, 28672, 80, 64, 8, 128256, False, {}, "ref", 70.6),
    "meta-llama/Llama-3.1-8B": ("llama", 4096, 14336, 32, 32, 8, 128256, False, {}, "asset", 8.03),
    "meta-llama/Llama-3.1-70B": ("llama", 8192, 28672, 80, 64, 8, 128256, False, {}, "mlc", 70.6),
    "meta-llama/Llama-3.1-405B": ("llama", 16384, 53248, 126, 128, 8, 128256, False, {}, "card", 405.9),
    "meta-llama/Llama-3.2-1B": ("llama", 2048, 8192, 16, 32, 8, 128256, True, {"head_dim": 64}, "asset", 1.24),
    "meta-llama/Llama-3.2-3B": ("llama", 3072, 8192, 28, 24, 8, 128256, True, {"head_dim": 128}, "mlc", 3.21),
    "meta-llama/Llama-3.3-70B-Instruct": ("llama", 8192, 28672, 80, 64, 8, 128256, False, {}, "card", 70.6),
    "Qwen/Qwen1.5-7B": ("qwen2", 4096, 11008, 32, 32, 32, 151936, False, {}, "card", 7.72),
    "Qwen/Qwen1.5-14B": ("qwen2", 5120, 13696, 40, 40, 40, 152064, False, {}, "card", 14.2),
    "Qwen/Qwen2-0.5B": ("qwen2", 896, 4864, 24, 14, 2, 151936, True, {}, "mlc", 0.49),
    "Qwen/Qwen2-1.5B": ("qwen2", 1536, 8960, 28, 12, 2, 151936, True, {}, "mlc", 1.54),
    "Qwen/Qwen2-7B": ("qwen2", 3584, 18944, 28, 28, 4, 152064, False, {}, "asset", 7.62),
    "Qwen/Qwen2-72B": ("qwen2", 8192, 29568, 80, 64, 8, 152064, False, {}, "card", 72.7),
    "Qwen/Qwen2.5-0.5B": ("qwen2", 896, 4864, 24, 14, 2, 151936, True, {}, "ref", 0.49),
    "Qwen/Qwen2.5-1.5B": ("qwen2", 1536, 8960, 28, 12, 2, 151936, True, {}, "card", 1.54),
    "Qwen/Qwen2.5-3B": ("qwen2", 2048, 11008, 36, 16, 2, 151936, True, {}, "asset", 3.09),
    "Qwen/Qwen2.5-7B": ("qwen2", 3584, 18944, 28, 28, 4, 152064, False, {}, "ref", 7.61),
    "Qwen/Qwen2.5-14B": ("qwen2", 5120, 13824, 48, 40, 8, 152064, False, {}, "card", 14.7),
    "Qwen/Qwen2.5-32B": ("qwen2", 5120, 27648, 64, 40, 8, 152064, False, {}, "card", 32.5),
    "Qwen/Qwen2.5-72B": ("qwen2", 8192, 29568, 80, 64, 8, 152064, False, {}, "ref", 72.7),
    "Qwen/Qwen3-0.6B": ("qwen3", 1024, 3072, 28, 16, 8, 151936, True, {"head_dim": 128}, "asset", 0.6),
    "Qwen/Qwen3-1.7B": ("qwen3", 2048, 6144, 28, 16, 8, 151936, True, {"head_dim": 128}, "mlc", 1.7),
    "Qwen/Qwen3-4B": ("qwen3", 2560, 9728, 36, 32, 8, 151936, True, {"head_dim": 128}, "card", 4.0),
    "Qwen/Qwen3-4B-Instruct-2507": ("qwen3", 2560, 9728, 36, 32, 8, 151936, True, {"head_dim": 128}, "card", 4.0),
    "Qwen/Qwen3-8B": ("qwen3", 4096, 12288, 36, 32, 8, 151936, False, {"head_dim": 128}, "card", 8.2),
    "Qwen/Qwen3-14B": ("qwen3", 5120, 17408, 40, 40, 8, 151936, False, {"head_dim": 128}, "card", 14.8),
    "Qwen/Qwen3-32B": ("qwen3", 5120, 25600, 64, 64, 8, 151936, False, {"head_dim": 128}, "card", 32.8),
    "mistralai/Mistral-7B-v0.1": ("mistral", 4096, 14336, 32, 32, 8, 32000, False, {}, "asset", 7.24),
    "mistralai/Mistral-7B-v0.3": ("mistral", 4096, 14336, 32, 32, 8, 32768, False, {}, "mlc", 7.25),
    "google/gemma-2b": ("gemma", 2048, 16384, 18, 8, 1, 256000, True, {"head_dim": 256}, "mlc", 2.51),
    "google/gemma-7b": ("gemma", 3072, 24576, 28, 16, 16, 256000, True, {"head_dim": 256}, "card", 8.54),
    "google/gemma-2-2b": ("gemma2", 2304, 9216, 26, 8, 4, 256000, True, {"head_dim": 256}, "mlc", 2.61),
    "google/gemma-2-9b": ("gemma2", 3584, 14336, 42, 16, 8, 256000, True, {"head_dim": 256}, "asset", 9.24),
    "google/gemma-2-27b": ("gemma2", 4608, 36864, 46, 32, 16, 256000, True, {"head_dim": 128}, "mlc", 27.2),
    "google/gemma-3-1b-it": ("gemma3_text", 1152, 6912, 26, 4, 1, 262144, True, {"head_dim": 256}, "mlc", 1.0),
    # Gemma 3 4B-27B are multimodal (Gemma3ForConditionalGeneration): the decoder's text_config only.
    "google/gemma-3-12b-pt": ("gemma3", 3840, 15360, 48, 16, 8, 262208, True, {"head_dim": 256}, "card", 12.2),
    "google/gemma-3-27b-pt": ("gemma3", 5376, 21504, 62, 32, 16, 262208, True, {"head_dim": 128}, "card", 27.0),
    # Phi-3/4 fuse q/k/v (qkv_proj) and gate/up (gate_up_proj): the same parameters as the split layout.
    "microsoft/Phi-3-mini-4k-instruct": ("phi3", 3072, 8192, 32, 32, 32, 32064, False, {}, "mlc", 3.82),
    "microsoft/Phi-3-medium-4k-instruct": ("phi3", 5120, 17920, 40, 40, 10, 32064, False, {}, "card", 14.0),
    "microsoft/phi-4": ("phi3", 5120, 17920, 40, 40, 10, 100352, False, {}, "card", 14.7),
    "microsoft/Phi-4-mini-instruct": ("phi3", 3072, 8192, 32, 24, 8, 200064, True, {}, "mlc", 3.84),
    "deepseek-ai/deepseek-llm-7b-base": ("llama", 4096, 11008, 30, 32, 32, 102400, False, {}, "card", 6.91),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": ("qwen2", 3584, 18944, 28, 28, 4, 152064, False, {}, "card", 7.62),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": ("llama", 4096, 14336, 32, 32, 8, 128256, False, {}, "card", 8.03),
    "01-ai/Yi-6B": ("llama", 4096, 11008, 32, 32, 4, 64000, False, {}, "card", 6.06),
    "01-ai/Yi-34B": ("llama", 7168, 20480, 60, 56, 8, 64000, False, {}, "card", 34.4),
    "01-ai/Yi-1.5-9B": ("llama", 4096, 11008, 48, 32, 4, 64000, False, {}, "card", 8.83),
    "THUDM/glm-4-9b-chat-hf": ("glm", 4096, 13696, 40, 32, 2, 151552, False, {"attention_bias": True}, "card", 9.4),
    "internlm/internlm2_5-7b-chat": ("internlm2", 4096, 14336, 32, 32, 8, 92544, False, {}, "mlc", 7.74),
    "baichuan-inc/Baichuan2-7B-Base": ("baichuan", 4096, 11008, 32, 32, 32, 125696, False, {}, "mlc", 7.51),
    "baichuan-inc/Baichuan2-13B-Base": ("baichuan", 5120, 13696, 40, 40, 40, 125696, False, {}, "card", 13.9),
}

_MOE: dict[str, tuple[dict[str, Any], str, float]] = {
    "mistralai/Mixtral-8x7B-v0.1": ({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
                                     "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                     "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2},
                                    "asset", 46.7),
    "mistralai/Mixtral-8x22B-v0.1": ({"model_type": "mixtral", "hidden_size": 6144, "intermediate_size": 16384,
                                      "num_hidden_layers": 56, "num_attention_heads": 48, "num_key_value_heads": 8,
                                      "vocab_size": 32768, "num_local_experts": 8, "num_experts_per_tok": 2},
                                     "ref", 140.6),
    "Qwen/Qwen1.5-MoE-A2.7B": ({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
                                "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
                                "vocab_size": 151936, "num_experts": 60, "num_experts_per_tok": 4,
                                "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                                "decoder_sparse_step": 1}, "asset", 14.3),
    "Qwen/Qwen3-30B-A3B": ({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                            "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
                            "head_dim": 128, "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
                            "moe_intermediate_size": 768, "decoder_sparse_step": 1}, "ref", 30.5),
    "Qwen/Qwen3-235B-A22B": ({"model_type": "qwen3_moe", "hidden_size": 4096, "intermediate_size": 12288,
                              "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4,
                              "head_dim": 128, "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
                              "moe_intermediate_size": 1536, "decoder_sparse_step": 1}, "card", 235.0),
    "deepseek-ai/DeepSeek-V2-Lite": ({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
                                      "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
                                      "vocab_size": 102400, "n_routed_experts": 64, "n_shared_experts": 2,
                                      "num_experts_per_tok": 6, "moe_intermediate_size": 1408,
                                      "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": None,
                                      "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128},
                                     "asset", 15.7),
}

# Suffixes of fine-tuned variants that share the base model's shape.
_VARIANTS = ("-instruct-2507", "-instruct", "-chat-hf", "-chat", "-hf", "-it", "-pt", "-base", "-4k-instruct")


def _config(entry: tuple[Any, ...]) -> dict[str, Any]:
    family, h, i, layers, heads, kv, vocab, tied, extra = entry[:9]
    return {"model_type": family, "hidden_size": h, "intermediate_size": i, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
            "tie_word_embeddings": tied, **extra}


def entries() -> dict[str, tuple[dict[str, Any], str, float]]:
    """Every bundled id -> (config fields, where they were checked, published billions of parameters)."""
    out = {name: (_config(row), row[9], row[10]) for name, row in _DENSE.items()}
    out.update(_MOE)
    return out


def _key(name: str) -> str:
    name = name.strip().lower()
    changed = True
    while changed:
        changed = False
        for suffix in _VARIANTS:
            if name.endswith(suffix) and len(name) > len(suffix):
                name, changed = name[: -len(suffix)], True
    return name


def lookup(hub_id: str) -> tuple[str, dict[str, Any], str] | None:
    """(the bundled id it matched, config fields, source line) for a hub id, or None."""
    table = entries()
    exact = {name.lower(): name for name in table}
    name = exact.get(hub_id.strip().lower())
    if name is None:
        by_base = {_key(n): n for n in table}
        name = by_base.get(_key(hub_id))
    if name is None:
        return None
    config, checked, _ = table[name]
    return name, dict(config), f"{_HF.format(name)} (bundled table, checked: {checked})"


def names() -> list[str]:
    return sorted(entries())
