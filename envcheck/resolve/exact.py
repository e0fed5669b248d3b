"""Exact pins for a resolution: every package of the stack (top-level and transitive) at the version the real
resolver (uv, the same `uv pip compile` that writes requirements.lock.txt) chose inside the solver's ranges.

When uv cannot answer (the index is unreachable, uv is missing, or `--no-lock`), the fallback is the newest
release the matrix itself names inside each range (the versions its rows were checked on, the exact versions
its ranges name), marked not locked;
a top-level package the matrix names no release of stays out of `pins` and is listed in `unpinned`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envcheck.matrix import Matrix
from envcheck.resolve.solver import Resolution

UNRANGED = ("python", "cuda")  # pins that are X.Y by contract, not package versions
_TAG = re.compile(r"(?:@|/tree/)v?(\d+(?:\.\d+)+(?:\.?post\d+)?)[:/ ]|==(\d+(?:\.\d+)+(?:\.?post\d+)?)")


@dataclass(frozen=True)
class Exact:
    pins: dict[str, str]  # python, cuda (X.Y) and name -> exact version, sorted
    locked: bool  # True: uv resolved them against the index; False: the matrix fallback
    how: str  # the resolver command, or what the fallback used
    note: str | None = None  # why not locked
    unpinned: tuple[str, ...] = ()  # fallback: top-level packages without a matrix-named release in range
    lock_body: str | None = None  # uv's hashed output, which env writes as requirements.lock.txt
    outside: tuple[str, ...] = ()  # top-level pins outside their range (a resolver disagreement: a warning)


def pins_of(body: str) -> dict[str, str]:
    """name -> version for every `name==version` requirement in uv's output."""
    found = {}
    for match in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s\\;]+)", body, re.M):
        found[canonicalize_name(match.group(1))] = match.group(2)
    return found


def _top(result: Resolution) -> dict[str, str]:
    return {canonicalize_name(n): spec for n, spec in result.ranges.items() if n not in UNRANGED}


def inside(version: str, spec: str) -> bool:
    try:
        return not spec or SpecifierSet(spec).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def from_lock(result: Resolution, body: str, how: str) -> Exact:
    packages = pins_of(body)
    ranges = _top(result)
    outside = tuple(f"{n} {packages.get(n, 'missing')} is not inside {spec}" for n, spec in sorted(ranges.items())
                    if n not in packages or not inside(packages[n], spec))
    pins = {"python": result.python, "cuda": result.cuda, **packages}
    return Exact(dict(sorted(pins.items())), True, how, lock_body=body, outside=outside)


def matrix_releases(matrix: Matrix, name: str) -> list[Version]:
    """Versions of `name` the matrix names: torch's checked wheels, LLaMA-Factory's rows, the tags package rows
    were read at. (The fallback adds the exact versions the range itself names: `==X.Y.Z`, a `<=X.Y.Z` cap.)"""
    texts: list[str] = []
    if name == "torch":
        texts = [r.source for r in matrix.torch_releases]
        pattern = re.compile(r"torch==(\d+(?:\.\d+)+)")
    elif name == "llamafactory":
        return _versions([r.version for r in matrix.llamafactory_releases])
    else:
        texts = [r.source for r in matrix.package_releases if canonicalize_name(r.package) == name]
        pattern = _TAG
    return _versions([v for text in texts for m in pattern.finditer(text + " ") for v in m.groups() if v])


def _versions(texts: list[str]) -> list[Version]:
    found = set()
    for text in texts:
        try:
            found.add(Version(text))
        except InvalidVersion:
            continue
    return sorted(found)


def fallback(result: Resolution, matrix: Matrix, why: str) -> Exact:
    pins = {"python": result.python, "cuda": result.cuda}
    unpinned = []
    for name, spec in sorted(_top(result).items()):
        named = matrix_releases(matrix, name) + _versions([p.version for p in SpecifierSet(spec)
                                                           if p.operator in ("==", "===", "<=") and "*" not in p.version])
        hits = [v for v in named if inside(str(v), spec)]
        if hits:
            pins[name] = str(max(hits))
        else:
            unpinned.append(name)
    how = f"newest release the matrix {matrix.data_version} names inside each range (no resolver ran)"
    return Exact(dict(sorted(pins.items())), False, how, note=why, unpinned=tuple(unpinned))


def lock(result: Resolution, matrix: Matrix, run_uv: Callable[[], tuple[str, str]] | None, why_not: str) -> Exact:
    """`run_uv()` -> (uv's output, the command) or raises LockError; None: do not run it (`why_not` says why)."""
    from envcheck.emit.requirements import LockError

    if run_uv is None:
        return fallback(result, matrix, why_not)
    try:
        body, how = run_uv()
    except LockError as error:
        return fallback(result, matrix, str(error))
    return from_lock(result, body, how)
