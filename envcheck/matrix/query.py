"""Lookups in the matrix that checks and the resolver share: by release, by variant, by GPU name."""

from __future__ import annotations

from functools import lru_cache

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.checks.versions import major_minor
from envcheck.matrix import Matrix
from envcheck.matrix.model import (
    CudaRelease, DeepSpeedCudaMinorOk, GpuModel, LlamaFactoryRelease, MinorVersionCompat, NewestRelease, PackageRelease,
    TorchBuild, TorchRelease,
)


def version(text: str | None) -> Version | None:
    """A comparable Version, tolerating local labels (2.3.1+cu121) and junk (None)."""
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def satisfies(installed: str | None, spec: str) -> bool | None:
    """True/False, or None when either side cannot be read."""
    found = version(installed)
    if found is None:
        return None
    try:
        return SpecifierSet(spec).contains(found, prereleases=True)
    except InvalidSpecifier:
        return None


def split_marker(value: str) -> tuple[str, str | None]:
    """A matrix requirement value 'SPEC' or 'SPEC; MARKER' (PEP 508) -> (spec, marker or None)."""
    spec, separator, marker = value.partition(";")
    return spec.strip(), (marker.strip() or None) if separator else None


def marker_applies(marker: str | None, environment: dict[str, str]) -> bool | None:
    """Whether a PEP 508 marker holds for the target (None when it cannot be judged). `extra` is empty: the
    markers of the bare install, as pip check evaluates them."""
    if marker is None:
        return True
    try:
        return _marker(marker).evaluate({**environment, "extra": ""})
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None


@lru_cache(maxsize=4096)
def _marker(text: str) -> Marker:
    return Marker(text)


def cuda_release(matrix: Matrix, cuda: str | None) -> CudaRelease | None:
    """The row of exactly that release if present, else the row of its major.minor (the GA release)."""
    if not cuda:
        return None
    rows = {row.version: row for row in matrix.cuda_releases}
    return rows.get(cuda) or rows.get(major_minor(cuda) or "")


def minor_version_compat(matrix: Matrix, cuda_major: int | None) -> MinorVersionCompat | None:
    return next((row for row in matrix.minor_version_compat if row.cuda_major == cuda_major), None)


def torch_release(matrix: Matrix, torch_version: str | None) -> TorchRelease | None:
    key = major_minor(torch_version)
    return next((row for row in matrix.torch_releases if row.version == key), None)


def torch_build(matrix: Matrix, torch_version: str | None, cuda: str | None) -> TorchBuild | None:
    key, cuda_key = major_minor(torch_version), major_minor(cuda)
    return next((row for row in matrix.torch_builds if row.torch == key and row.cuda == cuda_key), None)


def gpu_model(matrix: Matrix, name: str | None) -> GpuModel | None:
    """The first row whose match substring is in the (lower-cased) name, as NVML reports it (rows are ordered
    most specific first); else what the shared name reader makes of a typed name; None when unknown."""
    if not name:
        return None
    lowered = name.lower()
    found = next((row for row in matrix.gpus if any(m in lowered for m in row.match)), None)
    if found is not None:
        return found
    from envcheck.matrix.gpu_names import GpuNameError, resolve_gpu_name

    try:
        return resolve_gpu_name(matrix, name, loose=False).model
    except GpuNameError:
        return None


def deepspeed_minor_ok(matrix: Matrix, deepspeed_version: str | None, cuda_major: int) -> DeepSpeedCudaMinorOk | None:
    for row in matrix.deepspeed_cuda_minor_ok:
        if row.cuda_major == cuda_major and satisfies(deepspeed_version, row.deepspeed):
            return row
    return None


def package_releases(matrix: Matrix, package: str, installed: str | None) -> list[PackageRelease]:
    return [row for row in matrix.package_releases if row.package == package and satisfies(installed, row.versions)]


def llamafactory_release(matrix: Matrix, installed: str | None) -> LlamaFactoryRelease | None:
    """The row of the installed release, or of the newest release not newer than it (a dev build of 0.9.5)."""
    found = version(installed)
    if found is None:
        return None
    candidates = [row for row in matrix.llamafactory_releases if (v := version(row.version)) and v.release <= found.release]
    return max(candidates, key=lambda row: Version(row.version), default=None)


def newer_than_known(matrix: Matrix, package: str, installed: str | None) -> NewestRelease | None:
    """The newest release the matrix knows of `package` when the installed one is newer than it (a local label
    such as +cu130 aside), else None (not tracked, not newer, or unreadable)."""
    found = version(installed)
    row = next((r for r in matrix.newest_releases if r.package == package), None)
    known = version(row.version) if row else None
    if found is None or known is None:
        return None
    return row if Version(found.public) > known else None
