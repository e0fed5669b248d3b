"""The scan's multi-pattern engine: Hyperscan (the `hyperscan` wheel: a dependency on Linux x86-64/aarch64, the
extra `fast` elsewhere).

Why: `re` scans an alternation of many literals by testing each byte against the set of their first bytes, about
100-200 MB/s; Hyperscan's literal matcher (SIMD) finds the same keys at GB/s. Where the wheel is not installed (or
ENVCHECK_NO_HYPERSCAN=1), the scan keeps its `re` prefilter: same candidates, same results.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

Finder = Callable[[bytes], Iterator[tuple[int, int, bytes]]]


def hyperscan_finder(keys: tuple[bytes, ...]) -> Finder | None:
    """A function yielding (start, end, key) of every key's occurrence in a block, in order (overlapping ones too, so
    the keys found in a line are all the keys it holds); None without Hyperscan."""
    if os.environ.get("ENVCHECK_NO_HYPERSCAN"):
        return None
    try:
        import hyperscan  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        db: Any = _database(hyperscan, keys)
    except Exception:  # noqa: BLE001 - a broken native wheel must not break diagnose: fall back to re
        return None
    lengths = [len(k) for k in keys]

    def find(data: bytes) -> Iterator[tuple[int, int, bytes]]:
        found: list[tuple[int, int, bytes]] = []

        def on_match(key: int, _start: int, end: int, _flags: int, _context: object) -> None:
            found.append((end - lengths[key], end, keys[key]))

        db.scan(data, match_event_handler=on_match)
        found.sort()
        return iter(found)

    return find


def _database(hyperscan: Any, keys: tuple[bytes, ...]) -> Any:
    """The compiled database of KEYS: compiling takes 10 ms, loading a serialized one from the per-user cache
    (envcheck.matrix.cache.memo, keyed by the keys and Hyperscan's version) 0.2 ms."""
    from envcheck.matrix.cache import memo

    def compiled() -> bytes:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=["".join(f"\\x{b:02x}" for b in key).encode() for key in keys],
                   ids=list(range(len(keys))), flags=[0] * len(keys))
        return hyperscan.dumpb(db)

    serialized = memo("hyperscan", repr((getattr(hyperscan, "__version__", "?"), keys)).encode(), compiled)
    try:
        db = hyperscan.loadb(serialized, hyperscan.HS_MODE_BLOCK)
    except Exception:  # noqa: BLE001 - an entry another Hyperscan build cannot read: compile this one
        db = hyperscan.loadb(compiled(), hyperscan.HS_MODE_BLOCK)
    db.scratch = hyperscan.Scratch(db)
    return db
