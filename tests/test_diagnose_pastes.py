"""The same log as users paste it in different ways: saved on Windows (CRLF), indented or quoted in an issue, or only
a part of it. Each case is a real dev log of the corpus (tests/assets/diagnose/corpus, with its thread's URL in
labels.toml), changed the way a paste changes it; the cause must stay the one its thread settled."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from diagnose_support import CORPUS, primary_cause

LABELS = {e["id"]: e for e in tomllib.loads((CORPUS / "labels.toml").read_text(encoding="utf-8"))["log"]}


def _lines(log_id: str) -> list[str]:
    entry = LABELS[log_id]
    assert entry["split"] == "dev"  # only the dev half may shape the engine
    return (CORPUS / entry["file"]).read_text(encoding="utf-8").splitlines()


# NCCL's error trace (' -> 2' at the line's end) and the shell's 'Killed' (a whole line) are read at the line end.
@pytest.mark.parametrize("log_id", ["c061", "c296", "c063", "c229", "c391", "c927"])
def test_a_log_saved_with_windows_line_ends_reads_the_same(tmp_path: Path, log_id: str) -> None:
    log = tmp_path / "crlf.log"
    log.write_bytes(("\r\n".join(_lines(log_id)) + "\r\n").encode("utf-8"))
    assert primary_cause(log) == LABELS[log_id]["cause"]


@pytest.mark.parametrize("prefix", ["    ", "\t", "> "])
@pytest.mark.parametrize("log_id", ["c063", "c230", "c059", "c266", "c1285"])  # c1285: DeepSpeed install.sh's ERR trap
def test_a_log_indented_or_quoted_in_an_issue_reads_the_same(tmp_path: Path, log_id: str, prefix: str) -> None:
    log = tmp_path / "pasted.log"
    log.write_text("".join(prefix + line + "\n" for line in _lines(log_id)), encoding="utf-8")
    assert primary_cause(log) == LABELS[log_id]["cause"]


# (dev log, which part of it is kept): a part that still holds a line naming the cause
@pytest.mark.parametrize(("log_id", "part"), [
    ("c266", slice(2, 11)),   # ninja's FAILED: cpu_adam.o above a traceback through DeepSpeed's engine
    ("c651", slice(6, None)),  # torch's ninja CalledProcessError without the op's name
    ("c005", slice(4, None)),  # the second half of NumPy 2's message for modules built with NumPy 1.x
    ("c531", slice(2, 8)),
    ("c430", slice(2, 8)),    # the second half of torch's CUDA_MISMATCH_MESSAGE
    ("c945", slice(2, 8)),
    ("c142", slice(5, None)),  # check_min_version's ImportError without its traceback header
])
def test_part_of_a_log_still_names_its_cause(tmp_path: Path, log_id: str, part: slice) -> None:
    log = tmp_path / "part.log"
    log.write_text("\n".join(_lines(log_id)[part]) + "\n", encoding="utf-8")
    assert primary_cause(log) == LABELS[log_id]["cause"]
