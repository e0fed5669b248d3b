"""Which Python environment a command examines when the user names none: the one they are working in.

An envcheck installed with pipx or `uv tool`, or in its own venv, would otherwise only ever see itself. The order
is CONTRACT.md's: `--python`, else the active virtual environment (`VIRTUAL_ENV`), else the active conda
environment (`CONDA_PREFIX`), else the `python3` first on PATH, else envcheck's own interpreter.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Examined:
    """The interpreter to probe (None: envcheck's own) and why it was chosen, for the report's first line."""

    python: str | None
    reason: str


def _interpreter(prefix: str) -> str | None:
    for name in ("bin/python", "bin/python3", "python.exe"):
        candidate = os.path.join(prefix, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def examined_environment(explicit: str | None, environ: dict[str, str] | None = None) -> Examined:
    """A venv's bin/python is often a link to the same base interpreter as envcheck's own, yet another
    environment: the chosen path is always probed as given, never collapsed into envcheck's."""
    environ = dict(os.environ) if environ is None else environ
    if explicit:
        return Examined(explicit, "given with --python")
    for variable, what in (("VIRTUAL_ENV", "the active virtual environment"), ("CONDA_PREFIX", "the active conda environment")):
        prefix = environ.get(variable)
        if prefix:
            found = _interpreter(prefix)
            if found is not None:
                return Examined(found, f"{what} ({variable})")
    on_path = shutil.which("python3", path=environ.get("PATH", ""))
    if on_path is not None:
        return Examined(on_path, "the python3 first on PATH (no active environment)")
    return Examined(None, "envcheck's own interpreter (no active environment and no python3 on PATH)")
