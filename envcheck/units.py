"""Byte counts as people read them."""

from __future__ import annotations

GIB = 1024**3
MIB = 1024**2


def human_bytes(count: int | None) -> str:
    if count is None:
        return "unknown"
    for unit, size in (("TiB", 1024**4), ("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if abs(count) >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"
