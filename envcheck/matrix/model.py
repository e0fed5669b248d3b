"""Typed rows of the compatibility matrix (compat_matrix/SCHEMA.md), read through envcheck.serde."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CudaRelease:
    version: str
    min_driver_linux: str
    source: str
    released: str | None = None
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class CudaImage:
    """A CUDA development base image tag (nvcc included, for JIT builds of DeepSpeed / flash-attn ops)."""

    cuda: str
    tag: str
    source: str
    ubuntu: str | None = None
    digest: str | None = None
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class MinorVersionCompat:
    cuda_major: int
    min_driver_linux: str
    source: str
    limitations: tuple[str, ...] = ()
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class DriverBranch:
    branch: str
    source: str
    kind: str | None = None
    eol: str | None = None
    max_cuda_major: int | None = None
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class TorchRelease:
    version: str
    python: str
    cuda_variants: tuple[str, ...]
    source: str
    released: str | None = None
    default_cuda: str | None = None
    manylinux_glibc: str | None = None
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class TorchBuild:
    torch: str
    cuda: str
    arch_list: tuple[str, ...]
    source: str
    ptx: tuple[str, ...] = ()
    cudnn: str | None = None
    nccl: str | None = None
    triton: str | None = None
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class GpuModel:
    name: str
    match: tuple[str, ...]
    compute_capability: str
    source: str
    memory_gib: tuple[int, ...] = ()
    confirmed: bool = True
    note: str | None = None
    # form factor word of a name ("pcie", "sxm", "nvl") -> its memory in GiB, where that settles the variant
    memory_by_form: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ComputeCapability:
    cc: str
    arch: str
    first_cuda: str
    source: str
    last_cuda: str | None = None
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class PackageRelease:
    package: str
    versions: str
    requires: dict[str, str]
    source: str
    note: str | None = None
    confirmed: bool = True
    # requires-keys that say which prebuilt wheels exist rather than what the package needs (a source build works)
    wheel_keys: tuple[str, ...] = ()
    # extra name -> its requirements: they apply only where that extra was installed, never to the bare install
    extras: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class DeepSpeedCudaMinorOk:
    deepspeed: str
    cuda_major: int
    minors: tuple[str, ...]
    source: str
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class LlamaFactoryRelease:
    version: str
    python: str
    requires: dict[str, str]
    source: str
    extras: dict[str, dict[str, str]] = field(default_factory=dict)
    checked_at_runtime: tuple[str, ...] = ()
    checked_ranges: dict[str, str] = field(default_factory=dict)
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class KnownBad:
    id: str
    title: str
    when: dict[str, str]
    severity: str
    category: str
    symptom: str
    fix: str
    source: str
    commands: tuple[str, ...] = ()
    covered_by: str | None = None  # a dedicated doctor check (finding id) that reports this with more evidence
    confirmed: bool = True
    note: str | None = None


@dataclass(frozen=True)
class Signature:
    id: str
    pattern: str
    cause: str
    confidence: float
    title: str
    explanation: str
    fix: str
    source: str
    commands: tuple[str, ...] = ()
    confirmed: bool = True
    note: str | None = None


# file name -> (array key -> row type); what the loader reads and validates.
FILE_TABLES: dict[str, dict[str, type]] = {
    "meta.toml": {},
    "cuda.toml": {"cuda_release": CudaRelease, "minor_version_compat": MinorVersionCompat,
                  "driver_branch": DriverBranch, "cuda_image": CudaImage},
    "torch.toml": {"torch_release": TorchRelease, "torch_build": TorchBuild},
    "gpus.toml": {"gpu": GpuModel, "compute_capability": ComputeCapability},
    "packages.toml": {"package_release": PackageRelease, "deepspeed_cuda_minor_ok": DeepSpeedCudaMinorOk},
    "llamafactory.toml": {"llamafactory_release": LlamaFactoryRelease},
    "known_bad.toml": {"known_bad": KnownBad},
    "signatures.toml": {"signature": Signature},
}
