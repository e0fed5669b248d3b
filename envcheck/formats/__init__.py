"""Renderers of a Report: text for people, JSON for machines, Markdown for GitHub issues."""

from __future__ import annotations

from envcheck.formats.jsonfmt import render_json
from envcheck.formats.markdown import render_markdown
from envcheck.formats.text import render_text

__all__ = ["render_json", "render_markdown", "render_text"]
