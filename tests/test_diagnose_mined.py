"""Excerpts written from the source of the programs that print each message (tests/assets/diagnose/mined/): every
rule mined from a program's source names its cause on its excerpt, and what those programs print and go on after
(NCCL's fallbacks, ds_report's table, torch's JIT loader, a CPU run's notices) names none."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from envcheck.diagnose.engine import Request, diagnose
from envcheck.matrix import load_matrix

MINED = Path(__file__).parent / "assets" / "diagnose" / "mined"
CASES = tomllib.loads((MINED / "cases.toml").read_text(encoding="utf-8"))["case"]
FAILING = [case for case in CASES if case["cause"]]
GOING_ON = [case for case in CASES if not case["cause"]]


def _causes(name: str):
    return diagnose(Request(logs=(str(MINED / name),), system=False)).causes


@pytest.mark.parametrize("case", FAILING, ids=lambda c: f"{c['signature']}-{c['file']}")
def test_a_mined_message_names_its_cause_by_its_rule(case: dict) -> None:
    causes = _causes(case["file"])
    assert causes, f"{case['file']}: no cause"
    assert causes[0].cause == case["cause"]
    assert not case["signature"] or case["signature"] in causes[0].signatures  # "": a structure reader's cause


@pytest.mark.parametrize("case", GOING_ON, ids=lambda c: c["file"])
def test_what_the_programs_print_and_go_on_after_names_no_cause(case: dict) -> None:
    assert [c.cause for c in _causes(case["file"])] == []


def test_every_mined_rule_is_in_the_matrix_and_cites_a_source() -> None:
    signatures = {sig.id: sig for sig in load_matrix().signatures}
    for case in (c for c in FAILING if c["signature"]):
        sig = signatures[case["signature"]]
        assert sig.cause == case["cause"] and sig.source


@pytest.mark.parametrize(("name", "library"), [
    ("npver-16.log", "numpy"),  # pandas refuses an old NumPy: NumPy is what to change
    ("npver-48.log", "torch"),  # accelerate refuses an old torch for tensor parallelism
    ("ver2-09.log", "setuptools"),  # Python 3.12 without distutils: setuptools' shim is what to install, not distutils
    ("ver2-21.log", "scikit-learn"),  # a pickle of a renamed sklearn module: the distribution to pin
])
def test_a_version_check_blames_the_library_to_change_not_the_one_that_checks(name: str, library: str) -> None:
    assert _causes(name)[0].library == library


def test_accelerates_deepspeed_check_blames_deepspeed(tmp_path: Path) -> None:
    log = tmp_path / "tp.log"  # accelerate v1.14.0 accelerator.py: DeepSpeed's autotp_size > 1 on an old DeepSpeed
    log.write_text("ImportError: Deepspeed TP requires deepspeed >= 0.16.4, Please update DeepSpeed via "
                   "`pip install deepspeed -U`.\n", encoding="utf-8")
    causes = diagnose(Request(logs=(str(log),), system=False)).causes
    assert (causes[0].cause, causes[0].library) == ("version_conflict", "deepspeed")


def test_a_crash_after_the_training_loop_finished_says_so_and_what_to_check() -> None:
    crash = _causes("crash-after-training-01.log")[0]  # transformers' end-of-training lines, then libstdc++'s abort
    assert crash.cause == "segfault_other"
    assert "training loop had finished before the crash (line 10" in crash.explanation  # its last such line
    assert crash.fixes[0].commands == ("envcheck ckpt verify <output_dir>",)


@pytest.mark.parametrize("case", [c for c in FAILING if c["cause"] == "segfault_other"
                                  and c["file"] != "crash-after-training-01.log"], ids=lambda c: c["file"])
def test_a_crash_without_the_end_of_training_before_it_says_nothing_of_it(case: dict) -> None:
    assert "training loop had finished" not in _causes(case["file"])[0].explanation


def test_an_install_log_beside_a_failing_run_names_no_build_failure() -> None:
    # pip -q's install of DeepSpeed, and torchrun's failure in the training log beside it
    logs = (str(MINED / "review-revD-12.log"), str(MINED / "review-revD-13.log"))
    causes = diagnose(Request(logs=logs, system=False)).causes
    assert "deepspeed_build_failure" not in [c.cause for c in causes]


def test_a_dockerfile_after_an_oom_adds_no_build_failure() -> None:
    # a CUDA OOM traceback, then the Dockerfile the user builds with: 'RUN DS_BUILD_... pip install' is its text
    assert [c.cause for c in _causes("review-revE-04.log")] == ["gpu_oom"]


def test_a_logged_stack_is_no_headless_traceback_and_keeps_the_kernels_oom_kill() -> None:
    # logging's stack_info ('Stack (most recent call last):' and frames), apex's 'Warning:' line after it, then the
    # shell's Killed; the kernel log has the OOM kill of the run
    result = diagnose(Request(logs=(str(MINED / "review-revE-08.log"),), system=False,
                              kernel_log=str(MINED / "review-revE-08.kern")))
    assert result.first_exception is None
    assert result.causes[0].cause == "host_oom" and any(e.source == "kernel" for e in result.causes[0].evidence)


def test_ggmls_no_device_code_on_a_build_made_for_the_gpu_is_no_architecture_problem() -> None:
    """A review's V100 running a build made for compute capability 7.0: flash_attn_ext's 'no device code compatible
    with CUDA arch 700 ... compiled for: 700' is ggml choosing a kernel Volta lacks (a bug), not a missing arch."""
    assert "cuda_arch_unsupported" not in [c.cause for c in _causes("review-revM-07.log")]


def test_enospc_creating_a_semaphore_on_macos_is_no_full_dev_shm() -> None:
    """shm2-15's traceback with macOS paths: macOS keeps no semaphores in /dev/shm, its ENOSPC is the system's
    semaphore limit (PyCQA/flake8#117), so no /dev/shm advice."""
    assert "shm_too_small" not in [c.cause for c in _causes("shm2-17.log")]
    assert [c.cause for c in _causes("shm2-15.log")] == ["shm_too_small"]  # its ENOSPC line is no full disk too
