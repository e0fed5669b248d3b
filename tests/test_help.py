"""Every command's --help has a description, examples and its exit codes, and points at docs/ for its JSON."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

COMMANDS = ["probe", "doctor", "resolve", "env", "diagnose", "plan", "matrix", "guard", "alerts", "fleet"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_examples_and_exit_codes(command: str) -> None:
    done = subprocess.run([sys.executable, "-m", "envcheck", command, "--help"], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert done.returncode == 0
    text = done.stdout
    assert "examples:\n  envcheck " in text or "examples:\n  torchrun" in text
    assert "exit codes:\n  0  " in text and "\n  2  bad flags" in text
    assert "CONTRACT.md" not in text
    for doc in {word.strip("().,;'") for word in text.split() if word.strip("().,;'").startswith("docs/")}:
        assert (REPO / doc).is_file(), f"{command} --help points at {doc}, which is not in the project"


def test_a_bad_exit_status_is_refused_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "envcheck", "diagnose", "--exit-code", "999"], capture_output=True,
                          text=True, cwd=REPO, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "999 is not an exit status" in done.stderr
