"""Runs inside a throwaway venv with torch (+ transformers, peft, deepspeed when present); prints one JSON document.

Usage: python torch_probe.py REQUEST.json. The request names tiny config.json files to build with transformers and
DeepSpeed config files to load with DeepSpeed's own parser. For each model it reports the parameter count torch
builds, and the bytes of weights, gradients and AdamW states actually allocated after one training step, full
fine-tune and (with peft) LoRA. Kept stdlib + torch only at import time so a missing extra is reported, not fatal.
"""

from __future__ import annotations

import json
import sys


def _storage_bytes(tensors) -> int:  # type: ignore[no-untyped-def]
    """Bytes of the distinct storages behind `tensors` (tied weights share one storage)."""
    seen: dict[int, int] = {}
    for tensor in tensors:
        if tensor is None:
            continue
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def _step(model, params) -> dict[str, int]:  # type: ignore[no-untyped-def]
    import torch

    optimizer = torch.optim.AdamW(params, lr=1e-4, foreach=False)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (2, 16))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    trainable = [p for p in model.parameters() if p.requires_grad]
    states = [t for state in optimizer.state.values() for t in state.values()
              if torch.is_tensor(t) and t.dim() > 0]  # `step` is a 0-dim counter, not a state tensor
    return {"weights": _storage_bytes(model.parameters()), "gradients": _storage_bytes(p.grad for p in trainable),
            "optimizer": _storage_bytes(states), "trainable": sum(p.numel() for p in trainable)}


def probe_model(path: str, lora_rank: int) -> dict[str, object]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(path)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    out: dict[str, object] = {"params": sum(p.numel() for p in model.parameters())}
    out["full"] = _step(model, [p for p in model.parameters()])
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as error:
        out["lora"] = {"skipped": f"peft: {error}"}
        return out
    base = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    peft_model = get_peft_model(base, LoraConfig(r=lora_rank, lora_alpha=16, lora_dropout=0.0,
                                                 target_modules="all-linear"))
    out["lora"] = _step(peft_model, [p for p in peft_model.parameters() if p.requires_grad])
    return out


def probe_gpu(spec: dict[str, object]) -> dict[str, object]:
    """Peak allocated CUDA memory of a few full fine-tuning steps (fp32, AdamW, gradient checkpointing, SDPA)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if not torch.cuda.is_available():
        return {"skipped": "torch has no CUDA device here"}
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(spec["config"]))
    config._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32).cuda()
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    seq, batch = int(spec["seq_len"]), int(spec["batch"])
    torch.cuda.reset_peak_memory_stats()
    for _ in range(3):
        ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return {"max_allocated": torch.cuda.max_memory_allocated(), "max_reserved": torch.cuda.max_memory_reserved(),
            "params": sum(p.numel() for p in model.parameters())}


def probe_deepspeed(path: str, training: dict[str, object]) -> dict[str, object]:
    """Load a DeepSpeed config the way HF Trainer does: HfTrainerDeepSpeedConfig fills its "auto" values from
    TrainingArguments and raises on a mismatch (trainer_config_process, then trainer_config_finalize), and the
    filled config must then parse with DeepSpeed's own DeepSpeedConfig."""
    import tempfile

    try:
        from deepspeed.runtime.config import DeepSpeedConfig
        from transformers import TrainingArguments
        from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
    except Exception as error:  # noqa: BLE001 - any import failure is a skip reason
        return {"skipped": f"deepspeed/transformers: {type(error).__name__}: {error}"}
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    with tempfile.TemporaryDirectory() as scratch:
        args = TrainingArguments(output_dir=scratch, report_to=[], use_cpu=True,
                                 per_device_train_batch_size=int(training["micro_batch"]),
                                 gradient_accumulation_steps=int(training["grad_accum"]))
    # set after __post_init__, whose device checks refuse fp16/bf16 on a CPU-only machine
    args.bf16 = training["precision"] in ("bf16", "pure_bf16")
    args.fp16 = training["precision"] == "fp16"
    try:
        hf = HfTrainerDeepSpeedConfig(config)
        hf.trainer_config_process(args)
        hf.trainer_config_finalize(args, None, 100)
    except Exception as error:  # noqa: BLE001 - Trainer's verdict is the result
        return {"ok": False, "error": f"HfTrainerDeepSpeedConfig: {type(error).__name__}: {error}"}
    try:
        parsed = DeepSpeedConfig(hf.config)
    except Exception as error:  # noqa: BLE001 - the parser's verdict is the result
        return {"ok": False, "error": f"DeepSpeedConfig: {type(error).__name__}: {error}"}
    return {"ok": True, "stage": parsed.zero_optimization_stage, "micro_batch": parsed.train_micro_batch_size_per_gpu,
            "grad_accum": parsed.gradient_accumulation_steps, "bf16": bool(parsed.bfloat16_config.enabled),
            "fp16": bool(parsed.float16_config.enabled),
            "gather_on_save": bool(parsed.zero_config.gather_16bit_weights_on_model_save),
            "offload_optimizer": parsed.zero_config.offload_optimizer is not None,
            "offload_param": parsed.zero_config.offload_param is not None}


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    result = {"models": {}, "deepspeed": {}}
    for name, path in request.get("models", {}).items():
        result["models"][name] = probe_model(path, request.get("lora_rank", 8))
    for name, item in request.get("deepspeed", {}).items():
        result["deepspeed"][name] = probe_deepspeed(item["path"], item["training"])
    if "gpu" in request:
        result["gpu"] = probe_gpu(request["gpu"])
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
