"""Renderers of a Report: text for people, JSON for machines, Markdown for GitHub issues.

The renderers are imported on first use (PEP 562), so `from envcheck.formats.jsonfmt import dumps` does not pull
in the report and snapshot models: commands other than the doctor only need dumps.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["render_json", "render_markdown", "render_text"]
_MODULE = {"render_json": "jsonfmt", "render_markdown": "markdown", "render_text": "text"}


def __getattr__(name: str) -> Any:
    if name in _MODULE:
        return getattr(importlib.import_module(f"envcheck.formats.{_MODULE[name]}"), name)
    raise AttributeError(f"module 'envcheck.formats' has no attribute {name!r}")
