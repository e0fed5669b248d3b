"""The snapshot: everything the probes saw on one machine, as plain versioned data.

Checks read only this, so every check can be tested on a JSON file without a GPU. The key paths are fixed by
CONTRACT.md (schema_version 1); `envcheck/schema/snapshot.schema.json` documents them as a JSON Schema.
A section that was not probed is None and `skipped` says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from envcheck.errors import SnapshotError
from envcheck.serde import DataError, from_dict, to_dict

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Skipped:
    """A probe (or part of one) that could not run, and why: inability is data."""

    probe: str
    reason: str


@dataclass(frozen=True)
class Host:
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    glibc: str | None = None
    cpu_count: int | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    swap_total_bytes: int | None = None
    shm_bytes: int | None = None
    cgroup_version: int | None = None
    cgroup_mem_limit_bytes: int | None = None
    core_ulimit: str | None = None  # "unlimited" or a block count as text, as `ulimit -c` prints it
    core_pattern: str | None = None
    overcommit_memory: int | None = None
    container: str | None = None
    net_interfaces: tuple[str, ...] | None = None  # names under /sys/class/net, sorted; None when not readable
    infiniband_devices: tuple[str, ...] | None = None  # names under /sys/class/infiniband; None when absent


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    compute_capability: str | None = None
    memory_total_bytes: int | None = None
    uuid_hash: str | None = None
    mig_mode: str | None = None  # "enabled" | "disabled" | None when not supported


@dataclass(frozen=True)
class Nvidia:
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    source: str | None = None  # "nvml" | "nvidia-smi" | "proc"
    gpus: tuple[Gpu, ...] = ()


@dataclass(frozen=True)
class CudaToolkit:
    path: str
    nvcc_version: str | None
    on_path: bool = False
    first_on_path: bool = False
    found_via: tuple[str, ...] = ()  # "PATH", "CUDA_HOME", "CUDA_PATH", "/usr/local"
    nvcc_path: str | None = None  # as found (a wrapper script or symlink keeps its own name)


@dataclass(frozen=True)
class CudaHome:
    """The CUDA home torch's cpp_extension would pick (its `_find_cuda_home`), and whether builds can use it.

    A wrapper script or symlink `nvcc` on PATH makes torch take the directory two levels above it (/usr/local for
    /usr/local/bin/nvcc), which may hold no headers or libraries: every extension build then fails.
    """

    path: str | None
    via: str  # "CUDA_HOME" | "CUDA_PATH" | "PATH" | "/usr/local/cuda" | "none"
    nvcc: bool | None = None
    headers: bool | None = None
    libraries: bool | None = None
    toolkit: str | None = None  # the toolkit root that bin/nvcc resolves to


@dataclass(frozen=True)
class Library:
    name: str
    version: str | None
    path: str
    origin: str  # "LD_LIBRARY_PATH" | "ldconfig" | "wheel"


@dataclass(frozen=True)
class Duplicate:
    """Two or more installed distributions of one normalized name in one environment."""

    name: str
    versions: tuple[str, ...]
    locations: tuple[str, ...]


@dataclass(frozen=True)
class PythonEnv:
    version: str
    executable: str
    prefix: str
    kind: str  # "venv" | "conda" | "system"
    packages: dict[str, str] = field(default_factory=dict)
    requires: dict[str, tuple[str, ...]] = field(default_factory=dict)
    duplicates: tuple[Duplicate, ...] = ()
    broken: tuple[str, ...] = ()  # distributions whose metadata could not be read, with the reason
    marker_env: dict[str, str] = field(default_factory=dict)  # PEP 508 marker values of that interpreter
    examined_because: str | None = None  # why this environment was examined ("the active virtual environment ...")


@dataclass(frozen=True)
class Torch:
    version: str | None = None
    cuda: str | None = None
    hip: str | None = None
    git_version: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class DeepSpeed:
    version: str | None = None
    compiled_torch: str | None = None
    compiled_cuda: str | None = None
    compiled_hip: str | None = None
    compiled_nccl: str | None = None
    installed_ops: tuple[str, ...] = ()
    accelerator: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class RuntimeResult:
    """What happened when a child process imported one module."""

    ok: bool
    exit_code: int | None = None
    signal: str | None = None
    error: str | None = None
    timed_out: bool = False
    duration_s: float | None = None
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    schema_version: int
    envcheck_version: str
    captured_at: str
    host: Host | None = None
    nvidia: Nvidia | None = None
    cuda_toolkits: tuple[CudaToolkit, ...] = ()
    cuda_home: CudaHome | None = None
    libraries: tuple[Library, ...] = ()
    python: PythonEnv | None = None
    torch: Torch | None = None
    deepspeed: DeepSpeed | None = None
    env: dict[str, str] = field(default_factory=dict)
    runtime: dict[str, RuntimeResult] | None = None
    skipped: tuple[Skipped, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> Snapshot:
        if not isinstance(data, dict):
            raise SnapshotError("a snapshot must be a JSON object", source)
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise SnapshotError("schema_version: missing or not an integer", source)
        if version != SCHEMA_VERSION:
            raise SnapshotError(
                f"schema_version {version} is not supported (this envcheck reads {SCHEMA_VERSION}); "
                "upgrade envcheck or capture the snapshot again",
                source,
            )
        try:
            return from_dict(cls, data)
        except DataError as error:
            raise SnapshotError(str(error), source) from None

    def skipped_reason(self, probe: str) -> str | None:
        for item in self.skipped:
            if item.probe == probe:
                return item.reason
        return None


def load_snapshot(path: str) -> Snapshot:
    """Read a snapshot file; every failure is a SnapshotError with one clear line."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except IsADirectoryError:
        raise SnapshotError("is a directory, not a snapshot file", path) from None
    except OSError as error:
        raise SnapshotError(f"cannot read: {error.strerror or error}", path) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SnapshotError("not a JSON snapshot (not UTF-8 text)", path) from None
    except json.JSONDecodeError as error:
        raise SnapshotError(f"not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})", path) from None
    return Snapshot.from_dict(data, path)
