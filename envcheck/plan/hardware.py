"""The hardware a plan is judged against: GPU memory per device and host RAM per node.

From flags (`--gpu NAME` looked up in the matrix, `--gpu-mem`, `--host-mem`) or, for what the flags leave open,
from a snapshot of this machine. A GPU verdict needs a GPU size: without one we say so instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from envcheck.errors import UsageError

GIB = 1024**3


@dataclass(frozen=True)
class Hardware:
    gpu_bytes: int
    gpu_source: str
    host_bytes: int | None  # None: unknown, the host verdict is skipped
    host_source: str
    gpus_found: int | None = None  # GPUs on this machine when the size came from its snapshot

    def to_dict(self) -> dict[str, object]:
        return {"gpu_bytes": self.gpu_bytes, "gpu_source": self.gpu_source, "host_bytes": self.host_bytes,
                "host_source": self.host_source}


def gpu_from_matrix(name: str) -> tuple[int, str]:
    """Memory of a GPU named like `H100`, `A100-40GB`, `4090` or nvidia-smi's name; a size in the name picks
    among a row's variants (the shared name reader, envcheck.matrix.gpu_names)."""
    from envcheck.matrix import load_matrix
    from envcheck.matrix.gpu_names import GpuNameError, resolve_gpu_name

    try:
        found = resolve_gpu_name(load_matrix(), name)
    except GpuNameError as error:
        raise UsageError(f"--gpu: {error}; or give --gpu-mem GIB instead") from None
    row = found.model
    if not row.memory_gib:
        raise UsageError(f"--gpu {name!r}: the matrix has no memory size for {row.name}; give --gpu-mem GIB instead")
    sizes = row.memory_gib
    if found.memory_gib in sizes:
        size = found.memory_gib
    elif len(sizes) == 1:
        size = sizes[0]
    else:
        options = " or ".join(f"'{row.name} {s}GB'" for s in sizes)
        raise UsageError(f"--gpu {name!r}: {row.name} comes with {', '.join(map(str, sizes))} GiB; "
                         f"say {options}, or give --gpu-mem")
    return size * GIB, f"{row.name} {size} GiB (compat_matrix/gpus.toml; {row.source})"


def resolve_hardware(gpu: str | None, gpu_mem_gib: float | None, host_mem_gib: float | None,
                     snapshot: Callable[[], object]) -> Hardware:
    """Flags first; the snapshot (called at most once, only if needed) fills what they leave open."""
    taken = None

    def snap():  # type: ignore[no-untyped-def]
        nonlocal taken
        if taken is None:
            taken = snapshot()
        return taken

    gpus_found = None
    if gpu_mem_gib is not None:
        if gpu_mem_gib <= 0:
            raise UsageError("--gpu-mem must be a positive number of GiB")
        gpu_bytes, gpu_source = int(gpu_mem_gib * GIB), f"--gpu-mem {gpu_mem_gib:g} GiB"
    elif gpu is not None:
        gpu_bytes, gpu_source = gpu_from_matrix(gpu)
    else:
        nvidia = getattr(snap(), "nvidia", None)
        gpus = list(getattr(nvidia, "gpus", None) or ())
        sized = [g for g in gpus if getattr(g, "memory_total_bytes", None)]
        if not sized:
            raise UsageError("no NVIDIA GPU found on this machine: give --gpu NAME or --gpu-mem GIB for a GPU "
                             "verdict (host RAM still comes from this machine unless --host-mem is given)")
        smallest = min(sized, key=lambda g: g.memory_total_bytes)
        gpu_bytes, gpu_source = smallest.memory_total_bytes, f"this machine: {smallest.name}"
        gpus_found = len(gpus)
    if host_mem_gib is not None:
        if host_mem_gib <= 0:
            raise UsageError("--host-mem must be a positive number of GiB")
        return Hardware(gpu_bytes, gpu_source, int(host_mem_gib * GIB), f"--host-mem {host_mem_gib:g} GiB", gpus_found)
    host = getattr(snap(), "host", None)
    total = getattr(host, "mem_total_bytes", None)
    limit = getattr(host, "cgroup_mem_limit_bytes", None)
    if limit and total and limit < total:
        return Hardware(gpu_bytes, gpu_source, limit, "this machine: cgroup memory limit", gpus_found)
    if total:
        return Hardware(gpu_bytes, gpu_source, total, "this machine: MemTotal", gpus_found)
    return Hardware(gpu_bytes, gpu_source, None, "unknown (give --host-mem)", gpus_found)
