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
