"""A stopped build names why from the compiler's first error: recorded DeepSpeed JIT builds (PROVENANCE.md) and the
compilers' own message formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.diagnose.structure.compiler import first_error
from envcheck.diagnose.structure.model import Line

RECORDED = Path(__file__).parent / "assets" / "diagnose" / "recorded"


def _primary(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    main(["diagnose", "--offline", "--json", str(path)])
    return json.loads(capsys.readouterr().out)["causes"][0]


@pytest.mark.parametrize(("log", "reason", "fix"), [
    ("ds-fused-adam-missing-header.log", "the CUDA header cusparse.h is not installed", "cuda-libraries-dev"),
    ("ds-fused-adam-gcc-unsupported.log", "nvcc does not support this gcc (later than 15)", "gcc of version 15"),
    ("ds-jit-build-failure.log", "cuda_fp16.h is not installed", "CUDA toolkit"),
])
def test_a_recorded_op_build_names_its_compilers_reason(capsys, log: str, reason: str, fix: str) -> None:
    cause = _primary(capsys, RECORDED / log)
    assert cause["cause"] == "deepspeed_build_failure"
    assert cause["title"].endswith(reason)
    assert fix in cause["fixes"][0]["summary"]


def _reason(text: str) -> str | None:
    found = first_error([Line("build.log", 1, "[1/3] c++ -c x.cpp"), Line("build.log", 2, text)])
    return found.reason if found else None


@pytest.mark.parametrize(("text", "reason"), [
    ("/usr/include/python3.10/pyconfig.h:3:12: fatal error: Python.h: No such file or directory",
     "Python.h is not installed"),
    ("C:\\ds\\csrc\\adam\\cpu_adam.cpp(2): fatal error C1083: Cannot open include file: 'cublas_v2.h': No such file or "
     "directory", "the CUDA header cublas_v2.h is not installed"),
    ("src/net.cpp:4:10: fatal error: curl/curl.h: No such file or directory", "curl/curl.h is not installed"),
    ("nvcc fatal   : Failed to preprocess host compiler properties.",
     "nvcc: Failed to preprocess host compiler properties."),
    ("csrc/adam/multi_tensor_adam.cu(52): error: identifier \"__nv_bfloat16\" is undefined",
     "the compiler's first error: identifier \"__nv_bfloat16\" is undefined"),
    # not a compiler's reason: the OOM killer's (host_oom), and nvcc's architecture stop (cuda_arch_unsupported)
    ("g++: fatal error: Killed signal terminated program cc1plus", None),
    ("nvcc error   : 'cicc' died due to signal 9 (Kill signal)", None),
    ("collect2: fatal error: ld terminated with signal 9 [Killed]", None),
    ("RuntimeError: Ninja is required to load C++ extensions", "ninja is not installed"),
    ("RuntimeError: The current installed version of g++ (4.8.5) is less than the minimum required version by CUDA 11.8 "
     "(6.0.0). Please make sure to use an adequate version of g++ (>=6.0.0, <=11.5.0).",
     "g++ 4.8.5 is outside what CUDA 11.8 supports"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",
     "nvcc is not installed (/usr/local/cuda/bin/nvcc)"),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_70'", None),
    ("ninja: build stopped: subcommand failed.", None),
])
def test_the_first_compiler_error_is_read_for_its_reason(text: str, reason: str | None) -> None:
    assert _reason(text) == reason
