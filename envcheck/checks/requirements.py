"""Requirement strings parsed once per run: every check that reads `python.requires` meets the same few hundred
strings (extras' included), and packaging's parser is the doctor's largest cost after its imports."""

from __future__ import annotations

from functools import lru_cache

from packaging.requirements import InvalidRequirement, Requirement


@lru_cache(maxsize=8192)
def parse_requirement(text: str) -> Requirement | None:
    """The parsed requirement, or None for a string packaging cannot read (pip check skips those too)."""
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None
