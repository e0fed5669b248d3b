"""Runs that asked for CUDA and got a CPU: the errors torch and transformers raise when torch.cuda.is_available() is
False where a GPU was wanted, and a float16 model that ended up on the CPU. A weak cause: it leads only when nothing
stronger was found, and it says which things make torch see no GPU. Warnings that runs on a CPU print and go on after
(autocast's and GradScaler's 'CUDA is not available', whisper's 'FP16 is not supported on CPU', LLaMA-Factory's
'device: cpu, n_gpu: 0') are no cause: runs on a CPU on purpose print them, healthy or failing for another reason."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"is_available() is False", b"A GPU is needed for quantization", b"GPU is required to quantize",
           b"support bf16/gpu", b"not implemented for 'Half'", b"+cu1", b"+cu9", b"+cu8", b"+rocm",
           b"CUDA initialization: ", b"CUDA_VISIBLE_DEVICES=", b"+cpu")
# An Event of this kind says the log shows a CUDA or ROCm build of torch, or every GPU hidden on purpose; it is no
# cause itself: a weak "torch sees no GPU" cause (<= WEAK) is then the driver's or the environment's, not a CPU-only
# torch's, and is dropped; with a ROCm build (library "rocm") any torch_cpu_only is.
GPU_BUILD = "gpu_build_shown"
WEAK = 0.5
# torch's version with a CUDA or ROCm local tag ("torch 2.3.1+cu121", "PyTorch version: 2.1.0+rocm5.6", a printed
# '2.3.1+cu121'), and c10/cuda's "CUDA initialization: ..." warning, compiled only into CUDA builds
# (c10/cuda/CUDAFunctions.cpp).
_GPU_BUILD = re.compile(r"\b(?:torch|pytorch|PyTorch|Torch)\b[^+\n]{0,24}?\b\d+\.\d+(?:\.\d+)?\+(?:cu\d{2,3}|rocm\d)"
                        r"|^\W{0,4}'?\d+\.\d+\.\d+\+(?:cu\d{2,3}|rocm[\d.]+)'?\s*$|CUDA initialization: "
                        # a command line that hides every GPU: CUDA_VISIBLE_DEVICES="" (or '', -1, nothing)
                        r"|\bCUDA_VISIBLE_DEVICES=(?:\"\"|''|-1\b|\s|$)")
# a ROCm build: torch.version.cuda is None there too, yet torch is no CPU build (any torch_cpu_only is dropped)
_ROCM_BUILD = re.compile(r"\d\+rocm\d")
# torch/serialization.py (_validate_device): "Attempting to deserialize object on a CUDA device but
# torch.cuda.is_available() is False. If you are running on a CPU-only machine, ..."
# transformers 5.24: quantizers/quantizer_eetq.py and quantizer_gptq.py raise the next two when not
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
# What to install instead of a CPU build of torch (installer's +cpu readers say the same).
CUDA_TORCH = ("a CUDA build of torch for the CUDA your driver supports (uv pip install torch --torch-backend=auto, or "
              "pip with the index of PyTorch's CUDA wheels)")


def asked_for_cuda(lines: list[Line]) -> bool:
    """The log shows a run that asked for CUDA and stopped because torch had none."""
    return any(_RAISED.search(line.text) for line in lines)


# Lines that name a torch build without reporting the installed one: an install command, pip's resolver and
# installer lines (the fix being applied, or an attempt that failed), a requirement pin.
_NOT_INSTALLED = re.compile(r"\bpip3? install|\buv pip|Collecting |Downloading |Successfully installed|No matching "
                            r"distribution|Could not find a version|Looking in |==")
# a CPU build the log shows: then a CUDA build elsewhere in it is another install (the fix, a later attempt)
_CPU_BUILD = re.compile(r"\d\+cpu\b")


def events(lines: list[Line]) -> list[Event]:
    cpu = any(_CPU_BUILD.search(line.text) for line in lines)
    reports = [] if cpu else [x for x in lines if _GPU_BUILD.search(x.text) and not _NOT_INSTALLED.search(x.text)]
    gpu_build = reports[0] if reports else None
    rocm = any(_ROCM_BUILD.search(line.text) for line in reports)
    hint = [Event(GPU_BUILD, "", 0.0, "torch is a CUDA or ROCm build", "", "", gpu_build.file, gpu_build.number,
                  gpu_build.text, "", "rocm" if rocm else "cuda")] if gpu_build is not None else []
    return hint + _raised(lines)


def _raised(lines: list[Line]) -> list[Event]:
    for line in lines:
        raised = bool(_RAISED.search(line.text))
        if raised or _HALF_ON_CPU.search(line.text):
            return [Event(
                "no_cuda", "torch_cpu_only", 0.5 if raised else 0.45,
                "The run asked for CUDA but torch sees no GPU" if raised else
                "A float16 model ran on the CPU: torch sees no GPU",
                ("torch.cuda.is_available() was False in a run that asked for CUDA." if raised else
                 "A float16 model ran on the CPU, which has no float16 kernel for this op.")
                + " Most often torch is a CPU-only build (its version ends in +cpu and torch.version.cuda is None); "
                "otherwise the NVIDIA driver is missing or unusable, or CUDA_VISIBLE_DEVICES hides every GPU.",
                f"If torch.version.cuda is None, install {CUDA_TORCH}; if it is not, check nvidia-smi and "
                "CUDA_VISIBLE_DEVICES. On a machine meant to run on its CPU, ask for the CPU and float32 instead "
                "(device='cpu', torch_dtype=torch.float32; torch.load(..., map_location='cpu')).",
                line.file, line.number, line.text,
                "torch serialization (_validate_device) and ATen dispatch; transformers training_args and quantizers",
                "torch",
                ("python -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())'",
                 "nvidia-smi"))]
    return []
