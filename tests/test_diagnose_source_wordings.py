"""Lines in the words their programs print them (each case names the source that prints it), read as the cause
they show; and the look-alikes from other programs that must not be."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose_support import primary_of

STALE_OP = ("Traceback (most recent call last):\n"
            '  File "/venv/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 94, in __init__\n'
            "    self.ds_opt_adam.create_adam(self.opt_id, lr, betas[0], betas[1], eps, weight_decay, adamw_mode,\n"
            "AttributeError: module 'cpu_adam' has no attribute 'create_adam'\n")


@pytest.mark.parametrize(("text", "cause"), [
    # zsh's long job listing (Src/jobs.c printjob): the pid between the job number and the signal's message
    ("[1]    26478 killed     python train.py --config ds.json\n", "host_oom"),
    ("[2]  + 1432 segmentation fault  python infer.py\n", "segfault_other"),
    # the CUDA runtime's cudaErrorNoKernelImageForDevice, cut after 'execution' by a paste's width
    ("RuntimeError: CUDA error: no kernel image is available for execution\n", "cuda_arch_unsupported"),
    # xFormers' _cpp_lib.py build info without the warning's first line (a CUDA torch: another build of torch)
    ("    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.3.1+cu121)\n    Python  3.10.13 (you have 3.10.14)\n",
     "segfault_abi_mismatch"),
    # TH's THDiskFile.c: fwrite wrote fewer blocks than asked
    ("RuntimeError: write error: wrote 1048576 blocks instead of 4194304 at /pytorch/aten/src/TH/THDiskFile.c:382\n",
     "disk_full"),
    # DeepSpeed's cpu_adam.py calling create_adam on a cached op built by another release
    (STALE_OP, "deepspeed_build_failure"),
    # THC's __THCudaCheck (aten/src/THC/THCGeneral.cpp) with 209, cudaErrorNoKernelImageForDevice, in both its lines cut by a paste's width
    ("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=209 : no kernel image is available\n",
     "cuda_arch_unsupported"),
    ("RuntimeError: cuda runtime error (209) : no kernel image is available for\n", "cuda_arch_unsupported"),
    # glibc's dl-lookup.c: torch's CUDA library calls an NCCL function the loaded libnccl.so.2 lacks
    ("ImportError: /venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
     "ncclCommRegister\n", "version_conflict"),
    # NumPy 2.0's __getattr__ message as a rendered page copies it, without its backticks
    ("AttributeError: np.float_ was removed in the NumPy 2.0 release. Use np.float64 instead.\n", "numpy_abi"),
    # earlyoom's kill_process (kill.c), in its current and its v1.6 wording
    ('Sep 10 21:54:23 gpu01 earlyoom[904]: sending SIGTERM to process 2232050 uid 1000 "python": oom_score 712, '
     'oom_score_adj 0, VmRSS 45140 MiB, cmdline "python train.py"\n', "host_oom"),
    ('earlyoom[611]: sending SIGKILL to process 8812 uid 0 "python3": badness 901, VmRSS 30012 MiB\n', "host_oom"),
    # Ray's memory monitor's advice after its kill summary (ray-oom-prevention.rst), the summary cut off above it
    ("(raylet) Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/"
     "ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory on this node or reducing task "
     "parallelism by requesting more CPUs per task.\n", "host_oom"),
    # Marian's NCCL_CHECK (src/tensors/gpu/cuda_helpers.h)
    ("[2021-03-01 10:00:01] Error: NCCL error 2 'unhandled system error' - /marian/src/training/communicator_nccl.h:"
     "139: ncclGroupEnd()\n", "nccl_error"),
    # SageAttention's setup.py checking nvcc's version against the GPU's compute capability
    ("    RuntimeError: CUDA 12.4 or higher is required for compute capability 8.9.\n", "cuda_toolkit_mismatch"),
])
def test_a_line_in_its_programs_words_reads_as_its_cause(tmp_path: Path, capsys, text: str, cause: str) -> None:
    assert primary_of(capsys, tmp_path, text)["cause"] == cause


def test_a_stale_op_names_the_op_and_says_to_rebuild_it(tmp_path: Path, capsys) -> None:
    found = primary_of(capsys, tmp_path, STALE_OP)
    assert found["library"] == "cpu_adam"
    assert "torch_extensions" in found["fixes"][0]["summary"]


@pytest.mark.parametrize("text", [
    # a user's own utils module: DeepSpeed's op names are ordinary module names outside DeepSpeed's frames
    'Traceback (most recent call last):\n  File "/home/user/proj/train.py", line 9, in <module>\n'
    "    utils.seed_everything(1)\nAttributeError: module 'utils' has no attribute 'seed_everything'\n",
    # a PyTorch build info line with a CPU torch is SIG145's torch_cpu_only, never an ABI mismatch
    "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cpu)\n",
])
def test_a_look_alike_is_not_read_as_a_stale_op_or_another_torch_build(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, text)["cause"] not in ("deepspeed_build_failure", "segfault_abi_mismatch")


def test_ninjas_fatal_error_stops_a_deepspeed_op_build(tmp_path: Path, capsys) -> None:
    """ninja's Fatal() (src/util.cc) prints 'ninja: fatal: ' (old releases 'ninja: FATAL: '); it stops the build as
    its 'ninja: error: ' does."""
    text = ("Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
            "Building extension module fused_adam...\n"
            "ninja: fatal: posix_spawn: Argument list too long\n")
    found = primary_of(capsys, tmp_path, text)
    assert (found["cause"], found["library"]) == ("deepspeed_build_failure", "fused_adam")


@pytest.mark.parametrize("text", [
    # earlyoom at its limits that finds nothing it may kill (kill.c), and ttyd's ordinary SIGHUP to its child
    "earlyoom[904]: low memory! at or below SIGTERM limits: mem 10.00%, swap 10.00%\n"
    "earlyoom[904]: Could not find a process to kill. Sleeping 1 second.\n",
    "[2024/05/01 10:00:00:0000] N: sending SIGHUP to process 5321\n",
    # unsloth's loader_utils.py prints this and loads another checkpoint (SIG576 reads only the model checks it raises)
    "Unsloth: Your transformers version of 4.36.2 does not support native 4bit loading.\nThe minimum required version "
    "is 4.37.\nFor now, we shall load `unsloth/llama-2-7b` instead (still 4bit, just slower downloading).\n",
    # vLLM's memory profile with room left for the KV cache (only a negative figure is its failure)
    "INFO 02-26 09:54:05 worker.py:267] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch activation "
    "peak memory takes 1.42GiB; the rest of the memory reserved for KV Cache is 1.05GiB.\n",
    # ggml's failed cudaMalloc that llama.cpp retries without pipeline parallelism, then runs
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 808.35 MiB on device 1: cudaMalloc failed: out of memory\n"
    "graph_reserve: failed to allocate compute buffers\n"
    "sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism\n"
    "main: server is listening on http://127.0.0.1:8080 - starting the main loop\n",
    # ggml's failed cudaMalloc alone: what comes after it decides
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144.00 MiB on device 4: cudaMalloc failed: out of memory\n",
])
def test_what_a_program_prints_and_goes_on_after_names_no_cause(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, text)["cause"] is None


def test_an_undefined_driver_symbol_is_the_old_driver_where_the_log_says_so(tmp_path: Path, capsys) -> None:
    """vllm's _C lacking cuTensorMapEncodeTiled (a driver API function, libcuda's) beside torch's 'driver too old':
    the driver explains the symbol. The symbol's line alone stays an ABI mismatch (the label rule's)."""
    symbol = ("WARNING 12-30 17:06:52 _custom_ops.py:19] Failed to import from vllm._C with ImportError('/venv/lib/"
              "python3.10/site-packages/vllm/_C.abi3.so: undefined symbol: cuTensorMapEncodeTiled')\n")
    driver = ("/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: The "
              "NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by "
              "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx\n")
    assert primary_of(capsys, tmp_path, symbol + driver)["cause"] == "driver_too_old"
    assert primary_of(capsys, tmp_path, symbol)["cause"] == "segfault_abi_mismatch"
    torch_symbol = symbol.replace("cuTensorMapEncodeTiled", "_ZN3c104cuda20CUDACachingAllocator9allocatorE")
    assert primary_of(capsys, tmp_path, torch_symbol + driver)["cause"] == "segfault_abi_mismatch"
