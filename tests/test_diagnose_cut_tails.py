"""Pastes that keep only the last lines of a failure: users paste the end of what they saw. Each case is a real
development-half log of the corpus (tests/assets/diagnose/corpus/dev, URL and settled cause in labels.toml) cut to
its last non-blank lines; the cause must still be read from what those lines show: the end of a multi-line message
(torch's driver check, Paddle's loader and allocator), cuDNN's sub-library loader, frames inside DeepSpeed's source
tree op_builder/, and a DeepSpeed csrc/ note beside setuptools' last line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.diagnose_support import causes, primary_of

DEV = Path(__file__).parent / "assets" / "diagnose" / "corpus" / "dev"


def _tail(log_id: str, keep: int) -> str:
    lines = [line for line in (DEV / f"{log_id}.log").read_text(encoding="utf-8").splitlines() if line.strip()]
    return "\n".join(lines[-keep:]) + "\n"


@pytest.mark.parametrize(("log_id", "keep", "cause", "library"), [
    ("c687", 5, "driver_too_old", None),  # torch 0.4's five-line 'driver ... too old' message, its last five lines
    ("c2071", 5, "missing_cuda_library", "cudnn"),  # 'Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor'
    ("c2525", 5, "missing_cuda_library", "paddle"),  # Paddle's loader error: Suggestions, '(at dynamic_loader.cc)'
    ("c1481", 5, "deepspeed_build_failure", "async_io"),  # DeepSpeed CI: op_builder/async_io.py imports torch
    ("c1932", 5, "deepspeed_build_failure", "dc"),  # ROCm: op_builder/dc.py joins a CUDA_HOME that is None
    ("c268", 5, "deepspeed_build_failure", None),  # MSVC's note in csrc/transformer/inference/, then cl.exe failed
])
def test_the_last_lines_of_a_real_paste_still_show_its_cause(tmp_path: Path, capsys, log_id: str, keep: int,
                                                             cause: str, library: str | None) -> None:
    first = primary_of(capsys, tmp_path, _tail(log_id, keep))
    assert first["cause"] == cause
    if library is not None:
        assert first["library"] == library


def test_paddles_loader_suggestions_alone_are_not_its_error(tmp_path: Path, capsys) -> None:
    """Paddle probes libcuda.so and logs a W-line with the same Suggestions on machines that may run fine; only the
    error it raises ends in '(at .../dynamic_loader.cc:N)'. The Suggestions of the warning (as Paddle prints them)
    name no cause."""
    suggestions = ("  Suggestions:\n  1. Check if the third-party dynamic library (e.g. CUDA, CUDNN) is installed "
                   "correctly and its version is matched with paddlepaddle you installed.\n"
                   "  2. Configure third-party dynamic library environment variables as follows:\n"
                   "  - Linux: set LD_LIBRARY_PATH by `export LD_LIBRARY_PATH=...`\n"
                   "  - Windows: set PATH by `set PATH=XXX;%PATH%`\n")
    assert primary_of(capsys, tmp_path, suggestions)["cause"] is None
    error_end = suggestions.replace("%PATH%`", " (at /paddle/paddle/phi/backends/dynload/dynamic_loader.cc:303)")
    assert primary_of(capsys, tmp_path, error_end)["cause"] == "missing_cuda_library"


def test_paddles_out_of_memory_ends_are_gpu_memory(tmp_path: Path, capsys) -> None:
    """The closing lines of Paddle's allocator error (paddle/fluid/memory/allocation/cuda_allocator.cc)."""
    tail = ("Please check whether there is any other process using GPU 0.\n"
            "1. If yes, please stop them, or start PaddlePaddle on another GPU.\n"
            "2. If no, please decrease the batch size of your model. \n"
            " (at /paddle/paddle/fluid/memory/allocation/cuda_allocator.cc:86)\n")
    first = primary_of(capsys, tmp_path, tail)
    assert (first["cause"], first["library"]) == ("gpu_oom", "paddle")


def test_an_interrupt_inside_the_source_op_builder_is_no_build_failure(tmp_path: Path, capsys) -> None:
    """Ctrl-C while DeepSpeed's source tree builds an op stops the build; the user did, not the build."""
    tb = ("Traceback (most recent call last):\n"
          "  File \"/src/DeepSpeed/op_builder/builder.py\", line 750, in load\n"
          "    return self.jit_load(verbose)\nKeyboardInterrupt\n")
    assert primary_of(capsys, tmp_path, tb)["cause"] != "deepspeed_build_failure"


def test_another_projects_csrc_adam_build_is_not_deepspeeds(capsys) -> None:
    """Uni-Core builds its own extension from csrc/adam/ (a review's counter-example, mined/review-revK-05): nvcc's
    architecture error is the cause, and no DeepSpeed op build is listed beside it."""
    log = Path(__file__).parent / "assets" / "diagnose" / "mined" / "review-revK-05.log"
    found = [c["cause"] for c in causes(capsys, log)]
    assert found[0] == "cuda_arch_unsupported" and "deepspeed_build_failure" not in found
