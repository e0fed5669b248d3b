"""Load and validate the compatibility matrix: typed rows, errors that name the file and the dotted key path."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from envcheck import __version__
from envcheck.errors import UsageError
from envcheck.matrix.model import (
    FILE_TABLES, LAZY_FILES, ComputeCapability, CudaImage, CudaRelease, DeepSpeedCudaMinorOk, DriverBranch, GpuModel, KnownBad,
    LlamaFactoryRelease, MinorVersionCompat, NewestRelease, PackageRelease, Release, Signature, TorchBuild, TorchRelease,
)
from envcheck.serde import DataError, from_dict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SCHEMA_VERSION = 1
_CALVER = re.compile(r"^\d{4}\.\d{2}\.\d{2}$")


class MatrixError(UsageError):
    """The matrix data cannot be used: the message names the file and the key path."""


@dataclass(frozen=True)
class Matrix:
    path: str
    data_version: str
    min_envcheck: str
    cuda_releases: tuple[CudaRelease, ...] = ()
    minor_version_compat: tuple[MinorVersionCompat, ...] = ()
    driver_branches: tuple[DriverBranch, ...] = ()
    cuda_images: tuple[CudaImage, ...] = ()
    torch_releases: tuple[TorchRelease, ...] = ()
    torch_builds: tuple[TorchBuild, ...] = ()
    gpus: tuple[GpuModel, ...] = ()
    compute_capabilities: tuple[ComputeCapability, ...] = ()
    package_releases: tuple[PackageRelease, ...] = ()
    deepspeed_cuda_minor_ok: tuple[DeepSpeedCudaMinorOk, ...] = ()
    llamafactory_releases: tuple[LlamaFactoryRelease, ...] = ()
    known_bad: tuple[KnownBad, ...] = ()
    signatures: tuple[Signature, ...] = ()
    releases: tuple[Release, ...] = ()  # generated (releases.toml); loaded only with load_matrix(releases=True)
    newest_releases: tuple[NewestRelease, ...] = ()  # generated (newest.toml): the newest of each tracked package
    files: dict[str, str] = field(default_factory=dict)  # file name -> its data_version

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in _ATTRIBUTE.values()
                if name != "releases" or "releases.toml" in self.files}  # releases.toml is read only when asked


# array-of-tables key -> Matrix attribute
_ATTRIBUTE = {
    "cuda_release": "cuda_releases", "minor_version_compat": "minor_version_compat",
    "driver_branch": "driver_branches", "cuda_image": "cuda_images",
    "torch_release": "torch_releases", "torch_build": "torch_builds",
    "gpu": "gpus", "compute_capability": "compute_capabilities", "package_release": "package_releases",
    "deepspeed_cuda_minor_ok": "deepspeed_cuda_minor_ok", "llamafactory_release": "llamafactory_releases",
    "known_bad": "known_bad", "signature": "signatures", "release": "releases",
    "newest_release": "newest_releases",
}


def bundled_matrix_dir() -> str:
    """The installed package data, or compat_matrix/ beside the package in a source checkout."""
    try:
        from envcheck import compat_matrix
    except ImportError:
        import envcheck

        return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(envcheck.__file__))), "compat_matrix")
    return os.path.dirname(os.path.abspath(compat_matrix.__file__))


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise MatrixError(f"{path}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise MatrixError(f"{path}: not valid TOML: {error}") from None


def _header(path: str, data: dict[str, Any]) -> str:
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise MatrixError(f"{path}: schema_version: missing or not an integer")
    if version != SCHEMA_VERSION:
        raise MatrixError(f"{path}: schema_version {version} is not supported by envcheck {__version__} "
                          f"(it reads {SCHEMA_VERSION}); upgrade envcheck")
    data_version = data.get("data_version")
    if not isinstance(data_version, str) or not _CALVER.match(data_version):
        raise MatrixError(f"{path}: data_version: expected a CalVer string YYYY.MM.DD")
    return data_version


def _rows(path: str, data: dict[str, Any], tables: dict[str, type]) -> dict[str, tuple[Any, ...]]:
    allowed = {"schema_version", "data_version", "min_envcheck", *tables}
    for key in data:
        if key not in allowed:
            raise MatrixError(f"{path}: {key}: unknown key (this file holds: {', '.join(sorted(tables)) or 'meta'})")
    rows = {}
    for key, row_type in tables.items():
        items = data.get(key, [])
        if not isinstance(items, list):
            raise MatrixError(f"{path}: {key}: expected an array of tables ([[{key}]])")
        try:
            rows[key] = tuple(from_dict(row_type, item, f"{key}[{i}]", strict=True) for i, item in enumerate(items))
        except DataError as error:
            raise MatrixError(f"{path}: {error}") from None
    return rows


def load_matrix(directory: str | None = None, check_min_version: bool = True, validated: bool = True,
                releases: bool = False, only: frozenset[str] | None = None) -> Matrix:
    """Read every file of the matrix in `directory` (default: the bundled one) and validate it.

    `releases=True` also reads the generated releases.toml (large: `matrix show`/`validate` read it, the doctor
    does not).

    `validated=False` stops after the per-file checks, so `envcheck matrix validate` can list every problem.
    `only` reads just those data files besides meta.toml (the diagnose needs signatures.toml alone, and parsing the
    rest is most of its start-up); the other tables stay empty, and every file must still be present.
    A validated load comes from the per-user cache (envcheck/matrix/cache.py) when the files are unchanged.
    """
    directory = directory or bundled_matrix_dir()
    load = partial(_load, directory, check_min_version, validated, releases, only)
    if not validated:
        return load()
    from envcheck.matrix.cache import cached

    names = ["meta.toml", *(n for n in FILE_TABLES if n != "meta.toml" and _reads(n, releases, only))]
    return cached(directory, names, (check_min_version, releases, sorted(only) if only else None), load)


def _reads(name: str, releases: bool, only: frozenset[str] | None) -> bool:
    return not (name in LAZY_FILES and not releases) and (only is None or name in only)


def _load(directory: str, check_min_version: bool, validated: bool, releases: bool,
          only: frozenset[str] | None) -> Matrix:
    from envcheck.matrix.validate import validate

    if not os.path.isdir(directory):
        raise MatrixError(f"{directory}: not a matrix directory")
    meta_path = os.path.join(directory, "meta.toml")
    if not os.path.isfile(meta_path):
        raise MatrixError(f"{directory}: no meta.toml; not a compat_matrix directory")
    unknown = sorted(n for n in os.listdir(directory) if n.endswith(".toml") and n not in FILE_TABLES)
    if unknown:
        raise MatrixError(f"{os.path.join(directory, unknown[0])}: unknown matrix file "
                          f"(known: {', '.join(sorted(FILE_TABLES))})")
    meta = _read_toml(meta_path)
    files = {"meta.toml": _header(meta_path, meta)}
    _rows(meta_path, meta, {})
    min_envcheck = meta.get("min_envcheck")
    if not isinstance(min_envcheck, str):
        raise MatrixError(f"{meta_path}: min_envcheck: missing or not a string")
    from packaging.version import InvalidVersion, Version  # here, so that `envcheck --version` needs no dependency

    try:
        too_new = Version(min_envcheck) > Version(__version__)
    except InvalidVersion:
        raise MatrixError(f"{meta_path}: min_envcheck: {min_envcheck!r} is not a version") from None
    if check_min_version and too_new:
        raise MatrixError(f"{directory}: this matrix needs envcheck >= {min_envcheck} (this is {__version__}); "
                          "upgrade envcheck or use the bundled matrix")
    missing = sorted(n for n in FILE_TABLES if not os.path.isfile(os.path.join(directory, n)))
    if missing:  # a partial matrix would silently switch checks (or every diagnose signature) off
        raise MatrixError(f"{directory}: incomplete matrix, missing {', '.join(missing)}")
    collected: dict[str, tuple[Any, ...]] = {}
    for name, tables in FILE_TABLES.items():
        path = os.path.join(directory, name)
        if name == "meta.toml" or not _reads(name, releases, only):
            continue
        data = _read_toml(path)
        files[name] = _header(path, data)
        collected.update(_rows(path, data, tables))
    matrix = Matrix(
        path=directory,
        data_version=max(files.values()),
        min_envcheck=min_envcheck,
        files=files,
        **{_ATTRIBUTE[key]: rows for key, rows in collected.items()},
    )
    if validated:
        validate(matrix)
    return matrix
