"""A LLaMA-Factory training YAML (`llamafactory-cli train FILE.yaml`) as MODEL: the plan is of the run it starts.

LLaMA-Factory's training files are flat `key: value` mappings (examples/train_*/*.yaml), so a small reader of that
subset is enough and keeps PyYAML out of envcheck's dependencies: comments, blank lines, plain, single- and
double-quoted scalars, YAML 1.1 booleans and null, ints and floats. Anything nested is refused with its line.

The fields read and their defaults are LLaMA-Factory's (src/llamafactory/hparams/: model_args.py,
finetuning_args.py, data_args.py) and HF TrainingArguments':
- model_name_or_path; finetuning_type (lora | freeze | full; default lora); lora_rank (8); lora_target (all);
  freeze_trainable_layers (2); quantization_bit (4/8 with LoRA is QLoRA);
- cutoff_len (2048); per_device_train_batch_size (TrainingArguments: 8); gradient_accumulation_steps (1);
- pure_bf16 / bf16 / fp16 (none of them: fp32); flash_attn (auto: transformers picks SDPA; fa2; sdpa; disabled:
  eager); disable_gradient_checkpointing (LLaMA-Factory enables gradient checkpointing unless this is true);
  enable_liger_kernel (Liger's fused linear cross entropy: the logits are never held whole);
- deepspeed: a DeepSpeed JSON whose zero_optimization stage and offload_* devices fix --zero and --offload.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from envcheck.errors import UsageError

_BOOL = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_NULL = ("", "~", "null")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")
_ATTENTION = {"auto": "sdpa", "sdpa": "sdpa", "fa2": "flash", "fa3": "flash", "disabled": "eager", "eager": "eager"}


def is_yaml(path: str) -> bool:
    return path.lower().endswith((".yaml", ".yml"))


def _scalar(text: str, where: str) -> Any:
    text = text.strip()
    if text[:1] in ("'", '"'):
        quote = text[0]
        end = text.find(quote, 1)
        if end < 0:
            raise UsageError(f"{where}: unterminated quoted value")
        return text[1:end]
    text = re.sub(r"\s+#.*$", "", text).strip()
    if text.startswith(("[", "{", "|", ">", "&", "*", "!")):
        raise UsageError(f"{where}: nested or tagged YAML values are not read; write a plain value")
    lowered = text.lower()
    if lowered in _NULL:
        return None
    if lowered in _BOOL:
        return _BOOL[lowered]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_flat_yaml(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a LLaMA-Factory YAML (not UTF-8 text)") from None
    out: dict[str, Any] = {}
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        where = f"{path}:{number}"
        if line[:1].isspace() or stripped.startswith("- "):
            raise UsageError(f"{where}: nested YAML is not read (LLaMA-Factory training files are flat key: value)")
        match = _KEY.match(stripped)
        if not match:
            raise UsageError(f"{where}: expected 'key: value'")
        out[match.group(1)] = _scalar(match.group(2) or "", where)
    return out


def _find(path: str, yaml_path: str) -> str | None:
    """A relative deepspeed path as LLaMA-Factory resolves it (the working directory), else next to the YAML or
    in a folder above it (the usual LLaMA-Factory checkout layout: examples/train_full/x.yaml names
    examples/deepspeed/ds_z3_config.json)."""
    if os.path.isabs(path):
        return path if os.path.isfile(path) else None
    if os.path.isfile(path):
        return path
    folder = os.path.dirname(os.path.abspath(yaml_path))
    for _ in range(4):
        candidate = os.path.join(folder, path)
        if os.path.isfile(candidate):
            return candidate
        if os.path.isfile(os.path.join(folder, os.path.basename(path))):
            return os.path.join(folder, os.path.basename(path))
        folder = os.path.dirname(folder)
    return None


def _deepspeed(value: str, yaml_path: str) -> tuple[int, str, str]:
    """(stage, offload, how it was read) from the YAML's deepspeed file, or from its name where it is absent."""
    found = _find(value, yaml_path)
    if found is None:
        match = re.search(r"z(?:ero)?_?([0-3])", os.path.basename(value).lower())
        if not match:
            raise UsageError(f"{yaml_path}: deepspeed: {value} not found, and its name gives no ZeRO stage")
        offload = "optimizer" if "offload" in value.lower() else "none"
        if offload == "optimizer" and match.group(1) == "3":
            offload = "all"  # LLaMA-Factory's ds_z3_offload_config.json offloads optimizer and parameters
        return int(match.group(1)), offload, f"{value} (not found here: stage and offload read from its name)"
    try:
        with open(found, encoding="utf-8") as handle:
            config = json.load(handle)
        zero = config.get("zero_optimization") or {}
        stage = int(zero.get("stage", 0))
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise UsageError(f"{yaml_path}: deepspeed: cannot read {found}: {error}") from None

    def device(key: str) -> bool:
        part = zero.get(key)
        return isinstance(part, dict) and str(part.get("device", "none")).lower() not in ("none", "")

    offload = "all" if device("offload_param") else "optimizer" if device("offload_optimizer") else "none"
    return stage, offload, found


def training_setup(path: str) -> tuple[str, dict[str, Any], list[str]]:
    """(MODEL to resolve, plan options the YAML fixes, notes) for a LLaMA-Factory training YAML."""
    data = read_flat_yaml(path)
    model = data.get("model_name_or_path")
    if not isinstance(model, str) or not model:
        raise UsageError(f"{path}: model_name_or_path: missing (is this a LLaMA-Factory training YAML?)")
    kind = str(data.get("finetuning_type") or "lora")
    if kind not in ("lora", "freeze", "full"):
        raise UsageError(f"{path}: finetuning_type {kind!r}: envcheck plans lora, freeze and full")
    options: dict[str, Any] = {"method": kind}
    bits = data.get("quantization_bit")
    if bits is not None:
        if kind != "lora" or bits not in (4, 8):
            raise UsageError(f"{path}: quantization_bit {bits!r}: planned only as 4- or 8-bit QLoRA (lora)")
        options.update(method="qlora", quant_bits=bits)
    notes = [f"run from {path} (LLaMA-Factory training YAML)"]
    for key, option, kind_of in (("lora_rank", "lora_rank", int), ("freeze_trainable_layers", "freeze_layers", int),
                                 ("cutoff_len", "seq_len", int), ("gradient_accumulation_steps", "grad_accum", int)):
        if data.get(key) is not None:
            if not isinstance(data[key], kind_of) or isinstance(data[key], bool) or data[key] < 1:
                raise UsageError(f"{path}: {key}: expected a positive whole number, got {data[key]!r}")
            options[option] = data[key]
    batch = data.get("per_device_train_batch_size", 8)  # TrainingArguments' default
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise UsageError(f"{path}: per_device_train_batch_size: expected a positive whole number, got {batch!r}")
    options["batch"] = batch
    if data.get("lora_target") is not None:
        options["lora_targets"] = str(data["lora_target"]).replace(" ", "")
    options["precision"] = ("pure_bf16" if data.get("pure_bf16") else "bf16" if data.get("bf16")
                            else "fp16" if data.get("fp16") else "fp32")
    attention = str(data.get("flash_attn") or "auto").lower()
    if attention not in _ATTENTION:
        raise UsageError(f"{path}: flash_attn {attention!r}: expected auto, fa2, sdpa or disabled")
    options["attention"] = _ATTENTION[attention]
    options["grad_ckpt"] = not data.get("disable_gradient_checkpointing", False)
    options["fused_loss"] = bool(data.get("enable_liger_kernel", False))
    if data.get("deepspeed"):
        stage, offload, where = _deepspeed(str(data["deepspeed"]), path)
        options.update(zero=stage, offload=offload)
        notes.append(f"DeepSpeed from {where}: ZeRO-{stage}, offload {offload}")
    stage_name = str(data.get("stage") or "sft")
    if stage_name not in ("sft", "pt"):
        notes.append(f"stage {stage_name}: planned as supervised fine-tuning (a reference or reward model is extra)")
    return model, options, notes
