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
        db: Any = _cached(hyperscan, keys) or _compiled(hyperscan, keys)
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


def _compiled(hyperscan: Any, keys: tuple[bytes, ...]) -> Any:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=["".join(f"\\x{b:02x}" for b in key).encode() for key in keys],
               ids=list(range(len(keys))), flags=[0] * len(keys))
    _store(hyperscan, keys, db)
    return db


def _path(hyperscan: Any, keys: tuple[bytes, ...]) -> str | None:
    """The per-user cache file of this key set's compiled database (envcheck.matrix.cache's folder)."""
    if os.environ.get("ENVCHECK_NO_CACHE"):
        return None
    import hashlib

    from envcheck.matrix.cache import cache_dir

    digest = hashlib.sha256(repr((getattr(hyperscan, "__version__", ""), keys)).encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), f"hyperscan-{digest}.db")


def _cached(hyperscan: Any, keys: tuple[bytes, ...]) -> Any:
    """A database compiled by an earlier run (0.2 ms to load, 10 ms to compile), or None."""
    path = _path(hyperscan, keys)
    try:
        with open(path, "rb") as handle:  # type: ignore[arg-type]
            db = hyperscan.loadb(handle.read(), hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)
        return db
    except Exception:  # noqa: BLE001 - absent, unreadable, or from another Hyperscan: compile instead
        return None


def _store(hyperscan: Any, keys: tuple[bytes, ...], db: Any) -> None:
    path = _path(hyperscan, keys)
    if path is None:
        return
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".hyperscan-", dir=os.path.dirname(path))
        with os.fdopen(handle, "wb") as out:
            out.write(hyperscan.dumpb(db))
        os.replace(temporary, path)
    except (OSError, hyperscan.error if hasattr(hyperscan, "error") else OSError):
        pass
