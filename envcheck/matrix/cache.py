"""A per-user cache of the loaded matrix, keyed by the bytes of the files it was read from.

Parsing TOML and building the rows is most of a short command's start-up (tomllib reads about 1 MB/s; the doctor
reads 200 KB, the diagnose 33 KB). The key is a hash of the envcheck and Python versions, the load's options, the
matrix directory's file names and every file read, so an edited, replaced or partial matrix never meets a stale
entry. The cache is best effort: a missing, unreadable or corrupt entry means loading from the files, and a cache
directory that cannot be written is ignored. `ENVCHECK_NO_CACHE=1` turns it off; `ENVCHECK_CACHE_DIR` moves it
(default `$XDG_CACHE_HOME/envcheck`, else `~/.cache/envcheck`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
_PREFIX = "matrix-"


def cache_dir() -> str:
    if os.environ.get("ENVCHECK_CACHE_DIR"):
        return os.environ["ENVCHECK_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "envcheck")


def cached(directory: str, names: Iterable[str], options: tuple[object, ...], build: Callable[[], T]) -> T:
    """BUILD's result for the files NAMES of DIRECTORY, from the cache when their bytes are unchanged."""
    if os.environ.get("ENVCHECK_NO_CACHE"):
        return build()
    material = _material(directory, names, options)
    if material is None:  # a file cannot be read: the loader says why
        return build()
    return memo(_PREFIX.rstrip("-"), material, build)


def memo(kind: str, material: bytes, build: Callable[[], T], code: tuple[str, ...] = ()) -> T:
    """BUILD's result for MATERIAL (the bytes it is derived from), from the cache when it was built before. CODE:
    source files of BUILD whose bytes key the entry too, so that changed code within one version rebuilds it."""
    if os.environ.get("ENVCHECK_NO_CACHE"):
        return build()
    from envcheck import __version__

    hasher = hashlib.sha256(repr((__version__, sys.version, kind)).encode() + material)
    for source in code:
        try:
            with open(source, "rb") as handle:
                hasher.update(handle.read())
        except OSError:  # a zipped or frozen install: the version alone keys it
            pass
    digest = hasher.hexdigest()[:32]
    path = os.path.join(cache_dir(), f"{kind}-{digest}.pickle")
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)  # noqa: S301 - written by this user's own envcheck, keyed by content
    except Exception:  # noqa: BLE001 - absent, truncated or from another build: build it
        pass
    value = build()
    _store(path, value, prefix=f"{kind}-")
    return value


def _material(directory: str, names: Iterable[str], options: tuple[object, ...]) -> bytes | None:
    """What a load depends on: the directory, the options, its .toml names and every file read (None: unreadable)."""
    parts = [repr((os.path.abspath(directory), options)).encode()]
    try:
        parts.append(repr(sorted(n for n in os.listdir(directory) if n.endswith(".toml"))).encode())
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                content = handle.read()
            parts += [f"\0{name}\0{len(content)}\0".encode(), content]
    except OSError:
        return None
    return b"".join(parts)


def _store(path: str, value: object, prefix: str = _PREFIX) -> None:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        mine = sorted((os.path.getmtime(os.path.join(folder, n)), n) for n in os.listdir(folder)
                      if n.startswith(prefix) and n.endswith(".pickle"))
        for _mtime, old in mine[:-8]:  # a few entries per kind are enough: drop the oldest
            os.unlink(os.path.join(folder, old))
        handle, temporary = tempfile.mkstemp(prefix=f".{prefix}", dir=folder)
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except (OSError, pickle.PicklingError):
        pass
