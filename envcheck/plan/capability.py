"""What the GPU's architecture allows decides precision and attention: bf16 and FlashAttention-2 need compute
capability 8.0 (Ampere) or newer.

- bf16: transformers' TrainingArguments refuses `bf16=True` where `torch.cuda.is_bf16_supported()` is false, which
  is the case below compute capability 8.0 (NVIDIA's bf16 tensor-core support starts with Ampere, sm_80).
- FlashAttention-2: its README lists Ampere, Ada and Hopper (sm_80+); on Turing/Volta it raises "FlashAttention
  only supports Ampere GPUs or newer". PyTorch's SDPA memory-efficient kernel runs there and, like FA2, never
  stores the s x s score matrix, so SDPA memory is planned where FA2 is absent.
- fp16 on those GPUs trains with dynamic loss scaling (AMP GradScaler, or DeepSpeed's fp16 loss_scale 0).
"""

from __future__ import annotations

from envcheck.errors import UsageError
from envcheck.plan.hardware import Hardware

AMPERE = (8, 0)


def choose(precision: str, attention: str, hardware: Hardware,
           origin: dict[str, str]) -> tuple[str, str, list[str], list[str]]:
    """(precision, attention, why, warnings) for what was asked ("auto" lets the GPU decide). A flag the GPU
    cannot run is refused; a value from a training file (`origin` names where it came from) is replaced by what
    the GPU can run, with a warning that names the line to change."""
    cc, gpu = hardware.capability, hardware.gpu_name or "this GPU"
    why: list[str] = []
    warnings: list[str] = []
    if cc is None:
        if precision == "auto" or attention == "auto":
            why.append("GPU architecture unknown (--gpu-mem): assumed compute capability >= 8.0 (bf16, "
                       "FlashAttention-2); give --gpu NAME to check")
        return ("bf16" if precision == "auto" else precision), ("flash" if attention == "auto" else attention), why, []
    has = cc >= AMPERE
    where = f"{gpu} has compute capability {hardware.compute_capability}"
    if precision == "auto":
        precision = "bf16" if has else "fp16"
        why.append(f"precision bf16: {where}" if has else
                   f"precision fp16 with dynamic loss scaling: {where}; bf16 needs 8.0 (Ampere or newer)")
    elif precision in ("bf16", "pure_bf16") and not has:
        message = f"{where}; bf16 needs 8.0 (Ampere or newer)"
        if "precision" not in origin:
            raise UsageError(f"--precision {precision}: {message}: use fp16")
        warnings.append(f"{origin['precision']} fails here ({message}): planned fp16; set fp16: true instead")
        precision = "fp16"
    if attention == "auto":
        attention = "flash" if has else "sdpa"
        why.append(f"attention FlashAttention-2: {where}" if has else
                   f"attention SDPA (memory-efficient kernel): {where}; FlashAttention-2 needs 8.0")
    elif attention == "flash" and not has:
        message = f"{where}; FlashAttention-2 needs 8.0 (Ampere or newer)"
        if "attention" not in origin:
            raise UsageError(f"--attention flash: {message}: use sdpa")
        warnings.append(f"{origin['attention']} fails here ({message}): planned SDPA; set flash_attn: sdpa")
        attention = "sdpa"
    return precision, attention, why, warnings
