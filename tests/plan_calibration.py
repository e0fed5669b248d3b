"""Published per-GPU peak-memory measurements of fine-tuning runs, with the setup each was measured under: the
calibration set of `envcheck plan` (tests/test_plan_calibration.py keeps its median error from regressing;
benchmarks/bench_plan_calibration.py prints the table in benchmarks/README.md).

Numbers are as published (GB = 1e9 bytes, GiB = 2^30); a multi-GPU total is divided by the GPU count. Sources, each
read from the repository at the commit named:
- qwen: QwenLM/Qwen README.md "Profiling of Memory and Speed" @ 2df8e8ac450fa185c421a08b0090ef81826caa6e: one
  A100-SXM4-80G, CUDA 11.8, torch 2.0, flash-attn 2, batch 1, grad-accum 8, GB; its finetune.py (HF Trainer +
  peft; full and multi-GPU runs with DeepSpeed finetune/ds_config_zero2.json or zero3).
- swift: modelscope/ms-swift docs/source_en/LLM/Benchmark.md @ d2b45ec8c6acbfc126f784f3781aac31db1c297a (removed
  in b40f31df7, the 3.0 refactor): A100, torch 2.1.1, flash_attn 2.3.4, batch 1, gradient checkpointing and
  flash-attn on, lora_rank 8, GiB; dataset cls-fudan-news-zh (3234 +- 2548 tokens, max 19548: runs reach
  max_length).
- torchtune: pytorch/torchtune README.md @ bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1 ("Optimization flags": Llama
  3.2 3B, batch 2, max sequence 4096, bf16, A100, "Peak Memory Active"; "Memory and training speed": Llama 3.1,
  batch 2, packed to 2048, torch compile), GiB. The recipes keep weights, gradients and AdamW states in bf16
  (pure_bf16 here).
- hf-trl (measured by Unsloth): unslothai/unsloth README.md @ 0acd1c7eec2a6c6adb43367a333dd0e30332b1b0, "Context
  length benchmarks", "Hugging Face + FA2" column: 4-bit QLoRA on all linear layers, rank 32, batch 1, sequences
  padded to the length; the longest context that fits a GPU of the given size, so the peak there is that size.
- llama-factory: hiyouga/LlamaFactory issue threads (#1878 maintainer: Mixtral-8x7B 4-bit LoRA + FA2 needs ~28 GB;
  #4772: glm-4-9b-chat at cutoff 10240 on one A100-80GB, LoRA ~66 GB and QLoRA ~72 GB by nvidia-smi).
First-generation Qwen (Qwen-1.8B/7B/14B/72B, and the ms-swift qwen-*-chat rows) have no bundled config: their
shapes are written out from their Hugging Face configs (hidden, MLP width = intermediate_size / 2, layers, heads,
vocabulary) in the Qwen2 layout, which has the same modules (qkv bias, untied embeddings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envcheck.plan.params import ModelSpec, from_config
from envcheck.plan.setup import Setup
from envcheck.plan.source import resolve_model

GB, GIB = 10**9, 2**30


def _qwen(hidden: int, mlp: int, layers: int, heads: int, vocab: int) -> ModelSpec:
    return from_config({"model_type": "qwen2", "hidden_size": hidden, "intermediate_size": mlp,
                        "num_hidden_layers": layers, "num_attention_heads": heads, "vocab_size": vocab}, "qwen")


QWEN_1_8B = _qwen(2048, 5504, 24, 16, 151936)
QWEN_7B = _qwen(4096, 11008, 32, 32, 151936)
QWEN_14B = _qwen(5120, 13696, 40, 40, 152064)
QWEN_72B = _qwen(8192, 24576, 80, 64, 152064)


@dataclass(frozen=True)
class Point:
    id: str
    framework: str
    model: Any  # a ModelSpec, or a hub id resolved from the bundled table
    setup: Setup
    measured: float  # bytes per GPU
    note: str = ""

    def spec(self) -> ModelSpec:
        return resolve_model(self.model) if isinstance(self.model, str) else self.model


def _lora(seq: int, **kw: Any) -> Setup:
    return Setup(method="lora", seq_len=seq, **kw)


POINTS = [
    # --- Qwen README (HF Trainer + peft, DeepSpeed for full and 72B) ------------------------------------------
    *[Point(f"qwen 1.8B lora {s}", "qwen", QWEN_1_8B, _lora(s), m * GB) for s, m in
      ((256, 6.7), (1024, 8.4), (4096, 16.2), (8192, 21.8))],
    *[Point(f"qwen 1.8B full zero2 {s}", "qwen", QWEN_1_8B, Setup(method="full", zero=2, seq_len=s), m * GB)
      for s, m in ((256, 43.5), (8192, 48.3))],
    *[Point(f"qwen 7B lora {s}", "qwen", QWEN_7B, _lora(s), m * GB) for s, m in
      ((256, 20.1), (1024, 21.5), (2048, 23.8), (4096, 29.7), (8192, 36.6))],
    *[Point(f"qwen 7B full zero2 2gpu {s}", "qwen", QWEN_7B,
            Setup(method="full", zero=2, gpus_per_node=2, seq_len=s), m / 2 * GB) for s, m in ((256, 139.2),
                                                                                                (1024, 162.0))],
    *[Point(f"qwen 14B lora {s}", "qwen", QWEN_14B, _lora(s), m * GB) for s, m in
      ((256, 34.6), (2048, 37.4), (8192, 55.2))],
    *[Point(f"qwen 72B lora zero3 4gpu {s}", "qwen", QWEN_72B, _lora(s, zero=3, gpus_per_node=4), m / 4 * GB)
      for s, m in ((256, 215.4), (2048, 228.8), (8192, 289.2))],
    # --- ms-swift Benchmark.md ----------------------------------------------------------------------------------
    *[Point(f"swift qwen-1.8b lora {s}", "swift", QWEN_1_8B, _lora(s), m * GIB) for s, m in
      ((512, 6.99), (2048, 16.35), (8192, 37.03))],
    *[Point(f"swift qwen-7b lora {s}", "swift", QWEN_7B, _lora(s), m * GIB) for s, m in
      ((512, 18.01), (2048, 27.74), (8192, 48.41))],
    *[Point(f"swift qwen-14b lora {s}", "swift", QWEN_14B, _lora(s), m * GIB) for s, m in
      ((512, 30.14), (1024, 34.43), (2048, 40.14), (4096, 47.95), (8192, 60.74))],
    *[Point(f"swift yi-6b lora {s}", "swift", "01-ai/Yi-6B", _lora(s), m * GIB) for s, m in
      ((512, 13.72), (2048, 16.95), (8192, 43.81))],
    *[Point(f"swift baichuan2-7b lora {s}", "swift", "baichuan-inc/Baichuan2-7B-Base", _lora(s), m * GIB)
      for s, m in ((512, 18.18), (2048, 19.18), (8192, 45.47))],
    Point("swift qwen-7b lora eager no-gc 2048", "swift", QWEN_7B,
          _lora(2048, grad_ckpt=False, attention="eager"), 57.67 * GIB, "Use Flash Attn & Gradient Checkpointing"),
    Point("swift qwen-7b lora flash no-gc 2048", "swift", QWEN_7B, _lora(2048, grad_ckpt=False), 37.70 * GIB,
          "Use Flash Attn & Gradient Checkpointing"),
    # --- torchtune README -----------------------------------------------------------------------------------------
    Point("torchtune llama3.2-3B full packed 4096x2", "torchtune", "meta-llama/Llama-3.2-3B",
          Setup(method="full", precision="pure_bf16", seq_len=4096, batch=2, grad_ckpt=False, attention="sdpa"),
          60.0 * GIB, "Optimization flags, '+ Packed Dataset' row (no compile, no activation checkpointing)"),
    Point("torchtune llama3.2-3B lora r64", "torchtune", "meta-llama/Llama-3.2-3B",
          Setup(method="lora", precision="pure_bf16", seq_len=4096, batch=2, lora_rank=64, attention="sdpa",
                fused_loss=True),
          8.5 * GIB, "Optimization flags, LoRA row: packed, compile, chunked cross entropy, activation checkpointing"),
    Point("torchtune llama3.1-8B lora 4090", "torchtune", "meta-llama/Llama-3.1-8B",
          Setup(method="lora", precision="pure_bf16", seq_len=2048, batch=2, attention="sdpa", fused_loss=True),
          16.2 * GIB,
          "Memory and training speed, LoRA on 1x 4090: packed 2048, compile, activation checkpointing"),
    # --- Hugging Face + FA2, measured by Unsloth: the longest context that fits each GPU size ----------------------
    *[Point(f"hf-trl llama3.1-8B qlora r32 {s} fits {g} GiB", "hf-trl", "meta-llama/Llama-3.1-8B",
            Setup(method="qlora", lora_rank=32, seq_len=s), g * GIB)
      for g, s in ((12, 932), (16, 2551), (24, 5789), (40, 12264), (48, 15502), (80, 28454))],
    Point("hf-trl llama3.3-70B qlora r32 6916 fits 80 GiB", "hf-trl", "meta-llama/Llama-3.3-70B-Instruct",
          Setup(method="qlora", lora_rank=32, seq_len=6916), 80 * GIB),
    # --- LLaMA-Factory issue threads --------------------------------------------------------------------------------
    Point("llama-factory mixtral-8x7B qlora", "llama-factory", "mistralai/Mixtral-8x7B-v0.1",
          Setup(method="qlora", seq_len=2048), 28 * GB, "#1878; sequence length not given: 2048 assumed"),
    Point("llama-factory glm-4-9b lora 10240", "llama-factory", "THUDM/glm-4-9b-chat-hf",
          Setup(method="lora", seq_len=10240), 66 * GB, "#4772, nvidia-smi"),
    Point("llama-factory glm-4-9b qlora 10240", "llama-factory", "THUDM/glm-4-9b-chat-hf",
          Setup(method="qlora", seq_len=10240), 72 * GB, "#4772, nvidia-smi"),
]


def errors(predict: Any) -> list[tuple[Point, float, float]]:
    """(point, predicted bytes, relative error) for every point; `predict(spec, setup) -> bytes`."""
    out = []
    for point in POINTS:
        predicted = float(predict(point.spec(), point.setup))
        out.append((point, predicted, predicted / point.measured - 1))
    return out


def median_abs_error(rows: list[tuple[Point, float, float]]) -> float:
    values = sorted(abs(error) for _, _, error in rows)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
