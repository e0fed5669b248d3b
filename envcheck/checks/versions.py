"""Small version helpers shared by checks: major.minor of loosely written versions."""

from __future__ import annotations

import re


def major_minor(text: str | None) -> str | None:
    """'2.3.1+cu121' -> '2.3'; '12.1.105' -> '12.1'; None or junk -> None."""
    if not text:
        return None
    match = re.match(r"\s*v?(\d+)\.(\d+)", text)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def major(text: str | None) -> int | None:
    value = major_minor(text)
    return int(value.split(".")[0]) if value else None
