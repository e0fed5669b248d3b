"""Runs that asked for CUDA and got a CPU: the messages torch and its users print when torch.cuda.is_available() is
False where a GPU was wanted. Each is also printed by runs on a CPU on purpose, so it is a weak cause: it leads only
when nothing stronger was found, and it says which two things make torch see no GPU."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"is_available() is False", b"but CUDA is not available", b"CUDA is not available or torch_xla",
           b"FP16 is not supported on CPU", b"device: cpu, n_gpu: 0", b"A GPU is needed for quantization",
           b"GPU is required to quantize", b"support bf16/gpu", b"not implemented for 'Half'")
# torch/serialization.py (_validate_device): "Attempting to deserialize object on a CUDA device but
# torch.cuda.is_available() is False. If you are running on a CPU-only machine, ..."
# older torch's torch/autocast_mode.py and torch/amp/autocast_mode.py: "User provided device_type of 'cuda', but CUDA
# is not available. Disabling"; torch 2.13's torch/amp/autocast_mode.py: "CUDA is not available or torch_xla is
# imported. Disabling autocast."
# torch/amp/grad_scaler.py: "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."
# openai-whisper whisper/transcribe.py: "FP16 is not supported on CPU; using FP32 instead" (the model is on the CPU
# because whisper/__init__.py load_model picks "cuda" only if torch.cuda.is_available()).
# LLaMA-Factory src/llamafactory/hparams/parser.py (and transformers' example scripts): "Process rank: {}, device: {},
# n_gpu: {}, ..." with device cpu and no GPU.
# transformers 5.24: quantizers/quantizer_eetq.py and quantizer_gptq.py raise these when not
# torch.cuda.is_available(); training_args.py raises the bf16 one without its " You need Ampere+ GPU" sentence only
# when CUDA is not available either (with CUDA, the GPU lacks bf16).
_RAISED = re.compile(r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False"
                     r"|No GPU found\. A GPU is needed for quantization"
                     r"|GPU is required to quantize or run quantize model"
                     r"|Your setup doesn't support bf16/gpu\. You need to assign use_cpu if you want to train the "
                     r"model on CPU\.(?! You need Ampere)")
# ATen's dispatch error for a CPU kernel given float16 (AT_DISPATCH: '"addmm_impl_cpu_" not implemented for 'Half''):
# a half-precision model that ran on the CPU.
_HALF_ON_CPU = re.compile(r"\"\w*cpu\w*\" not implemented for 'Half'")
# torch's autocast and GradScaler: the run asked for CUDA and got none (each then goes on without it)
_ASKED = re.compile(r"User provided device_type of '?cuda'?, but CUDA is not available"
                    r"|CUDA is not available or torch_xla is imported\. Disabling autocast"
                    r"|GradScaler is enabled, but CUDA is not available")
# whisper and LLaMA-Factory: the run is on the CPU (by default when torch sees no GPU, or on purpose)
_ON_CPU = re.compile(r"FP16 is not supported on CPU; using FP32 instead|Process rank: -?\d+, device: cpu, n_gpu: 0\b")
# A warning is a cause only in a run that then failed: an exception or an error line after it.
_FAILED = re.compile(r"Traceback \(most recent call last\)|\w(?:Error|Exception): |FAILED: |fatal: ")


def asked_for_cuda(lines: list[Line]) -> bool:
    """The log shows a run that asked for CUDA and found torch without it."""
    return any(_RAISED.search(line.text) or _ASKED.search(line.text) for line in lines)


def events(lines: list[Line]) -> list[Event]:
    failed_at = max((at for at, line in enumerate(lines) if _FAILED.search(line.text)), default=-1)
    for at, line in enumerate(lines):
        raised = bool(_RAISED.search(line.text))
        asked = raised or bool(_ASKED.search(line.text))
        half = bool(_HALF_ON_CPU.search(line.text))
        if raised or half or (at < failed_at and (asked or _ON_CPU.search(line.text))):
            seen = ("torch.cuda.is_available() was False in a run that asked for CUDA." if asked else
                    "A float16 model ran on the CPU, which has no float16 kernel for this op." if half else
                    "The run was on the CPU (whisper and LLaMA-Factory pick it when torch.cuda.is_available() is "
                    "False) and then failed.")
            return [Event(
                "no_cuda", "torch_cpu_only", 0.5 if raised else 0.45 if half else 0.4,
                "The run asked for CUDA but torch sees no GPU" if asked else "The run is on the CPU: torch sees no GPU",
                seen + " Most often torch is a CPU-only build (its version ends in +cpu and torch.version.cuda is "
                "None); otherwise the NVIDIA driver is missing or unusable, or CUDA_VISIBLE_DEVICES hides every GPU.",
                "If torch.version.cuda is None, install a CUDA build of torch for the CUDA your driver supports (uv "
                "pip install torch --torch-backend=auto, or pip with the index of PyTorch's CUDA wheels); if it is "
                "not, check nvidia-smi and CUDA_VISIBLE_DEVICES. On a machine meant to run on its CPU, ask for the "
                "CPU and float32 instead (device='cpu', torch_dtype=torch.float32; torch.load(..., "
                "map_location='cpu')).",
                line.file, line.number, line.text,
                "torch serialization/autocast/GradScaler/ATen dispatch, transformers training_args and quantizers, "
                "whisper transcribe, LLaMA-Factory hparams parser", "torch",
                ("python -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())'",
                 "nvidia-smi"))]
    return []
