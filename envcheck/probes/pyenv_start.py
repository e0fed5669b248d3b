"""Start the interpreter probe as early as possible: only the standard library and envcheck.proc are imported here,
so the child runs while envcheck imports the rest of itself."""

from __future__ import annotations

import os
import sys

from envcheck import proc

SCRIPT = os.path.join(os.path.dirname(__file__), "pyenv_script.py")


def start_python_probe(python: str | None = None) -> proc.Running | proc.ProcResult:
    interpreter = python or sys.executable
    try:
        with open(SCRIPT, encoding="utf-8") as handle:
            script = handle.read()
    except OSError as error:  # a damaged envcheck install
        return proc.ProcResult((interpreter,), None, "", "", start_error=f"probe script missing: {error}")
    return proc.start([interpreter, "-c", script])
