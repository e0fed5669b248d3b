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
    gpu_name: str | None = None  # the matrix row or this machine's GPU; None for --gpu-mem
    compute_capability: str | None = None  # None: unknown (--gpu-mem, or not in the matrix)
    warnings: tuple[str, ...] = ()  # shown at the top of the plan

    @property
    def capability(self) -> tuple[int, int] | None:
        if not self.compute_capability:
            return None
        major, _, minor = self.compute_capability.partition(".")
        try:
            return int(major), int(minor or 0)
        except ValueError:
            return None

    def to_dict(self) -> dict[str, object]:
        return {"gpu_bytes": self.gpu_bytes, "gpu_source": self.gpu_source, "host_bytes": self.host_bytes,
                "host_source": self.host_source, "gpu_name": self.gpu_name,
                "compute_capability": self.compute_capability}


def gpu_from_matrix(name: str) -> tuple[int, str, str, str]:
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
    source = f"{row.name} {size} GiB (compat_matrix/gpus.toml; {row.source})"
    return size * GIB, source, row.name, row.compute_capability


def _same_gpu(named: str, local: str) -> bool:
    from envcheck.matrix import load_matrix
    from envcheck.matrix.gpu_names import GpuNameError, resolve_gpu_name

    try:
        return resolve_gpu_name(load_matrix(), local, loose=False).model.name == named
    except GpuNameError:
        return False


def resolve_hardware(gpu: str | None, gpu_mem_gib: float | None, host_mem_gib: float | None,
                     snapshot: Callable[[], object], gpus: int | None = None, nodes: int = 1) -> Hardware:
    """Flags first; the snapshot (called at most once, only if needed) fills what they leave open. Host RAM taken
    from this machine for a plan of other hardware (another GPU, GPU count or node count) comes with a warning."""
    taken = None

    def snap():  # type: ignore[no-untyped-def]
        nonlocal taken
        if taken is None:
            taken = snapshot()
        return taken

    def local_gpus() -> list[object]:
        nvidia = getattr(snap(), "nvidia", None)
        return [g for g in (getattr(nvidia, "gpus", None) or ()) if getattr(g, "memory_total_bytes", None)]

    gpus_found, name, capability = None, None, None
    if gpu_mem_gib is not None:
        if gpu_mem_gib <= 0:
            raise UsageError("--gpu-mem must be a positive number of GiB")
        gpu_bytes, gpu_source = int(gpu_mem_gib * GIB), f"--gpu-mem {gpu_mem_gib:g} GiB"
    elif gpu is not None:
        gpu_bytes, gpu_source, name, capability = gpu_from_matrix(gpu)
    else:
        sized = local_gpus()
        if not sized:
            raise UsageError("no NVIDIA GPU found on this machine: give --gpu NAME or --gpu-mem GIB for a GPU "
                             "verdict (host RAM still comes from this machine unless --host-mem is given)")
        smallest = min(sized, key=lambda g: g.memory_total_bytes)  # type: ignore[attr-defined]
        gpu_bytes = smallest.memory_total_bytes  # type: ignore[attr-defined]
        gpu_source = f"this machine: {smallest.name}"  # type: ignore[attr-defined]
        gpus_found, name = len(sized), str(smallest.name)  # type: ignore[attr-defined]
        capability = getattr(smallest, "compute_capability", None)
    if host_mem_gib is not None:
        if host_mem_gib <= 0:
            raise UsageError("--host-mem must be a positive number of GiB")
        return Hardware(gpu_bytes, gpu_source, int(host_mem_gib * GIB), f"--host-mem {host_mem_gib:g} GiB",
                        gpus_found, name, capability)
    host = getattr(snap(), "host", None)
    total = getattr(host, "mem_total_bytes", None)
    limit = getattr(host, "cgroup_mem_limit_bytes", None)
    if limit and total and limit < total:
        host_bytes, host_source = limit, "this machine: cgroup memory limit"
    elif total:
        host_bytes, host_source = total, "this machine: MemTotal"
    else:
        return Hardware(gpu_bytes, gpu_source, None, "unknown (give --host-mem)", gpus_found, name, capability)
    here = local_gpus()
    other = []
    if gpus_found is None:
        planned = f"{name} GPUs" if name else f"GPUs of {gpu_source}"
        if not here:
            other.append(f"{planned} (this machine has none)")
        elif name is None or not _same_gpu(name, str(getattr(here[0], "name", ""))):
            other.append(f"{planned} (this machine has {getattr(here[0], 'name', 'another GPU')})")
    if gpus is not None and gpus != len(here):
        other.append(f"{gpus} GPU(s) per node (this machine has {len(here)})")
    if nodes > 1:
        other.append(f"{nodes} nodes")
    warnings = ()
    if other:
        warnings = (f"host RAM is this machine's ({host_bytes / GIB:.0f} GiB) but the plan is for "
                    f"{' and '.join(other)}: give --host-mem GIB for the host that will run it",)
    return Hardware(gpu_bytes, gpu_source, host_bytes, host_source, gpus_found, name, capability, warnings)
