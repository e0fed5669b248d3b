"""A paste that starts inside a traceback, its header cut off (users copy the last screen; the issue store keeps a
thread's tail): its frames and exception read as the whole traceback's would (scan._headless). The excerpts are the
last ten lines of real dev-half logs of the corpus, as a user who copied only those would paste them."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.diagnose.engine import Request, diagnose

DEV = Path(__file__).parent / "assets" / "diagnose" / "corpus" / "dev"


def _tail(tmp_path: Path, log_id: str, lines: int = 10) -> Path:
    text = (DEV / f"{log_id}.log").read_text(encoding="utf-8").splitlines()
    assert not any("Traceback (most recent call last)" in line for line in text[-lines:])  # the header is cut off
    cut = tmp_path / f"{log_id}-tail.log"
    cut.write_text("\n".join(text[-lines:]) + "\n", encoding="utf-8")
    return cut


@pytest.mark.parametrize(("log_id", "library"), [
    ("c1480", "dc"),  # pip's build of DeepSpeed on ROCm: op_builder/dc.py joins a CUDA_HOME that is None
    ("c1932", "dc"),  # the same in a source checkout, Python 3.11's ^^^ marks
    ("c266", ""),  # a traceback cut inside the engine's optimizer set-up (structure/cut.py), no exception line
])
def test_a_traceback_without_its_header_reads_as_the_whole_one(tmp_path: Path, log_id: str, library: str) -> None:
    causes = diagnose(Request(logs=(str(_tail(tmp_path, log_id)),), system=False)).causes
    assert causes and causes[0].cause == "deepspeed_build_failure"
    assert (causes[0].library or "") == library


def test_the_exception_of_a_headless_traceback_keeps_its_line_number(tmp_path: Path) -> None:
    result = diagnose(Request(logs=(str(_tail(tmp_path, "c1932")),), system=False))
    assert result.first_exception is not None
    assert result.first_exception.line == 10 and "TypeError" in result.first_exception.text


def test_a_faulthandler_dump_is_no_headless_traceback(tmp_path: Path) -> None:
    log = tmp_path / "fh.log"  # faulthandler writes 'File "...", line N in func' (no comma): a dump, not a traceback
    log.write_text('Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\n'
                   '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 125 in forward\n'
                   '  File "/home/user/train.py", line 40 in <module>\n', encoding="utf-8")
    result = diagnose(Request(logs=(str(log),), system=False))
    assert result.first_exception is not None and result.first_exception.text.startswith("Fatal Python error")
