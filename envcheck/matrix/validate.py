"""Cross-row and cross-file rules of the matrix: ids, references, versions, specifiers, patterns, sources."""

from __future__ import annotations

import re
from typing import Iterator

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.checks.model import CATEGORIES, Severity

SPECIAL_WHEN_KEYS = frozenset({
    "python", "torch_cuda", "driver", "cuda_driver", "nvcc", "compute_capability", "glibc", "nccl_loaded", "gpu_name",
    "gpu_count",
})
_DIST_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_CC = re.compile(r"^\d+\.\d+$")


def _version(where: str, text: str | None) -> Iterator[str]:
    if text is None:
        return
    try:
        Version(text)
    except InvalidVersion:
        yield f"{where}: {text!r} is not a version"


def _specifier(where: str, text: str) -> Iterator[str]:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        yield f"{where}: {text!r} is not a PEP 440 specifier set"


def _sources(matrix) -> Iterator[str]:  # type: ignore[no-untyped-def]
    from envcheck.matrix import _ATTRIBUTE

    for key, attribute in _ATTRIBUTE.items():
        for index, row in enumerate(getattr(matrix, attribute)):
            if not row.source.strip():
                yield f"{key}[{index}].source: empty; every fact needs its original source"


def problems(matrix) -> list[str]:  # type: ignore[no-untyped-def]
    """Every rule the data breaks, each naming the file and the dotted key path."""
    found: list[str] = []
    found += [f"(any file): {p}" for p in _sources(matrix)]
    for i, row in enumerate(matrix.cuda_releases):
        found += [f"cuda.toml: {p}" for p in _version(f"cuda_release[{i}].version", row.version)]
        found += [f"cuda.toml: {p}" for p in _version(f"cuda_release[{i}].min_driver_linux", row.min_driver_linux)]
    for i, row in enumerate(matrix.minor_version_compat):
        found += [f"cuda.toml: {p}" for p in _version(f"minor_version_compat[{i}].min_driver_linux", row.min_driver_linux)]
    releases = {row.version for row in matrix.torch_releases}
    for i, row in enumerate(matrix.torch_releases):
        found += [f"torch.toml: {p}" for p in _specifier(f"torch_release[{i}].python", row.python)]
        found += [f"torch.toml: {p}" for p in _version(f"torch_release[{i}].version", row.version)]
    cudas = {row.version for row in matrix.cuda_releases}
    for i, row in enumerate(matrix.torch_builds):
        if releases and row.torch not in releases:
            found.append(f"torch.toml: torch_build[{i}].torch: {row.torch!r} has no [[torch_release]] row")
        if cudas and row.cuda not in cudas:
            found.append(f"torch.toml: torch_build[{i}].cuda: {row.cuda!r} has no [[cuda_release]] row in cuda.toml")
        for cc in (*row.arch_list, *row.ptx):
            if not _CC.match(cc):
                found.append(f"torch.toml: torch_build[{i}].arch_list: {cc!r} is not X.Y")
    ccs = {row.cc for row in matrix.compute_capabilities}
    for i, row in enumerate(matrix.gpus):
        if ccs and row.compute_capability not in ccs:
            found.append(f"gpus.toml: gpu[{i}].compute_capability: {row.compute_capability!r} has no "
                         "[[compute_capability]] row")
        if not row.match or any(m != m.lower() for m in row.match):
            found.append(f"gpus.toml: gpu[{i}].match: needs lower-case substrings")
    from envcheck.matrix.query import split_marker  # here: loading the signatures alone needs no markers

    for i, row in enumerate(matrix.package_releases):
        found += [f"packages.toml: {p}" for p in _specifier(f"package_release[{i}].versions", row.versions)]
        groups = [("requires", row.requires), *((f"extras.{name}", reqs) for name, reqs in sorted(row.extras.items()))]
        for group, requirements in groups:
            for key, value in requirements.items():
                where = f"package_release[{i}].{group}.{key}"
                spec, marker = split_marker(value)
                if key not in ("compute_capability",):
                    found += [f"packages.toml: {p}" for p in _specifier(where, spec)]
                if marker is not None and not _marker_ok(marker):
                    found.append(f"packages.toml: {where}: {marker!r} is not a valid PEP 508 marker")
    for i, row in enumerate(matrix.llamafactory_releases):
        found += [f"llamafactory.toml: {p}" for p in _specifier(f"llamafactory_release[{i}].python", row.python)]
        for key, spec in row.requires.items():
            found += [f"llamafactory.toml: {p}" for p in _specifier(f"llamafactory_release[{i}].requires.{key}", spec)]
    found += list(_releases(matrix))
    found += list(_ids(matrix))
    found += list(_known_bad(matrix))
    found += list(_signatures(matrix))
    return found


def _releases(matrix) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """releases.toml and newest.toml (generated): versions, requirements, metadata sources, and agreement."""
    from packaging.requirements import InvalidRequirement, Requirement

    newest: dict[str, Version] = {}
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(matrix.releases):
        where = f"releases.toml: release[{i}]"
        yield from _version(f"{where}.version", row.version)
        if row.source not in (f"wheel metadata of {row.package}=={row.version}",
                              f"sdist metadata of {row.package}=={row.version}"):
            yield f"{where}.source: {row.source!r} is not 'wheel metadata of {row.package}=={row.version}'"
        if (row.package, row.version) in seen:
            yield f"{where}: duplicate release {row.package} {row.version}"
        seen.add((row.package, row.version))
        if row.requires_python:
            yield from _specifier(f"{where}.requires_python", row.requires_python)
        groups = [("requires", row.requires), *((f"extras.{name}", reqs) for name, reqs in sorted(row.extras.items()))]
        for group, texts in groups:
            for text in texts:
                try:
                    Requirement(text)
                except InvalidRequirement:
                    yield f"{where}.{group}: {text!r} is not a PEP 508 requirement"
        try:
            if row.package not in newest or Version(row.version) > newest[row.package]:
                newest[row.package] = Version(row.version)
        except InvalidVersion:
            pass
    for i, row in enumerate(matrix.newest_releases):
        where = f"newest.toml: newest_release[{i}]"
        yield from _version(f"{where}.version", row.version)
        if matrix.releases and newest.get(row.package) != version_or_none(row.version):
            yield (f"{where}: {row.package} {row.version} is not the newest release in releases.toml "
                   f"({newest.get(row.package)}); rerun 'envcheck matrix harvest'")


def version_or_none(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _marker_ok(marker: str) -> bool:
    from packaging.markers import InvalidMarker, Marker  # here: loading the signatures alone needs no markers

    try:
        Marker(marker)
    except InvalidMarker:
        return False
    return True


def _ids(matrix) -> Iterator[str]:  # type: ignore[no-untyped-def]
    seen: dict[str, str] = {}
    for kind, rows in (("known_bad", matrix.known_bad), ("signature", matrix.signatures)):
        for i, row in enumerate(rows):
            where = f"{kind}[{i}].id"
            if row.id in seen:
                yield f"{where}: duplicate id {row.id!r} (also {seen[row.id]})"
            seen[row.id] = where


def _finding_ids() -> set[str]:
    from envcheck.checks import REGISTRY, _load_check_modules

    _load_check_modules()
    return {finding_id for registered in REGISTRY for finding_id in registered.ids}


def _known_bad(matrix) -> Iterator[str]:  # type: ignore[no-untyped-def]
    for i, row in enumerate(matrix.known_bad):
        where = f"known_bad.toml: known_bad[{i}]"
        if row.category not in CATEGORIES:
            yield f"{where}.category: unknown category {row.category!r}"
        try:
            Severity.parse(row.severity)
        except ValueError as error:
            yield f"{where}.severity: {error}"
        if not row.when:
            yield f"{where}.when: empty; a known-bad entry needs conditions"
        if row.covered_by is not None and row.covered_by not in _finding_ids():
            yield f"{where}.covered_by: {row.covered_by!r} is not a finding id of any doctor check"
        for key, spec in row.when.items():
            if key == "gpu_name":
                continue
            if key not in SPECIAL_WHEN_KEYS and not _DIST_NAME.match(key):
                yield f"{where}.when.{key}: not a normalized distribution name or a known fact"
            yield from _specifier(f"{where}.when.{key}", spec)


def _signatures(matrix) -> Iterator[str]:  # type: ignore[no-untyped-def]
    for i, row in enumerate(matrix.signatures):
        where = f"signatures.toml: signature[{i}]"
        if row.cause not in CATEGORIES:
            yield f"{where}.cause: {row.cause!r} is not a cause of the taxonomy (or 'other' for context lines)"
        if not 0 <= row.confidence <= 1:
            yield f"{where}.confidence: {row.confidence} is outside 0..1"
        try:
            re.compile(row.pattern)
        except re.error as error:
            yield f"{where}.pattern: does not compile: {error}"


def validate(matrix) -> None:  # type: ignore[no-untyped-def]
    from envcheck.matrix import MatrixError

    found = problems(matrix)
    if found:
        more = f" (and {len(found) - 1} more; run 'envcheck matrix validate --matrix {matrix.path}')" if len(found) > 1 else ""
        raise MatrixError(f"{matrix.path}: {found[0]}{more}")
