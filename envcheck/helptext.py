"""Help texts every command shares the shape of: a wrapped description, examples, exit codes, where JSON is
documented (docs/ in the project; CONTRACT.md is not shipped)."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

WIDTH = 100
STANDARD_CODES = (("2", "bad flags or unusable input (one line on stderr, no traceback)"),
                  ("3", "internal error (the message names a crash report file)"))


def help_kwargs(description: str, examples: tuple[str, ...], codes: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Keyword arguments for subparsers.add_parser: description, epilog with examples and exit codes."""
    lines = ["examples:", *(f"  {example}" for example in examples), "", "exit codes:"]
    lines += [f"  {code}  {meaning}" for code, meaning in (*codes, *STANDARD_CODES)]
    return {"description": textwrap.fill(description, WIDTH, break_on_hyphens=False), "epilog": "\n".join(lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}
