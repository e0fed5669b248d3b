"""The hardware a plan is judged against: GPU memory per device and host RAM per node.

From flags (`--gpu NAME` looked up in the matrix, `--gpu-mem`, `--host-mem`) or, for what the flags leave open,
from a snapshot of this machine. A GPU verdict needs a GPU size: without one we say so instead of guessing.
"""

from __future__ import annotations

import re
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


def _squash(text: str) -> str:
    """`RTX-4090`, `rtx 4090 ` and `NVIDIA RTX 4090` compare equal."""
    text = text.lower().removeprefix("nvidia")
    return re.sub(r"[\s_-]+", "", text)


def gpu_from_matrix(name: str) -> tuple[int, str]:
    """Memory of a GPU named like `H100`, `A100-40GB` or `RTX 4090`; a size in the name picks among variants."""
    from envcheck.matrix import load_matrix
    from envcheck.matrix.query import gpu_model

    matrix = load_matrix()
    wanted_name = _squash(re.sub(r"\d+\s*GI?B?\b", "", name, flags=re.IGNORECASE))
    row = next((r for r in matrix.gpus if _squash(r.name) == wanted_name), None)
    row = row or gpu_model(matrix, name) or gpu_model(matrix, f"NVIDIA {name}")
    if row is None or not row.memory_gib:
        known = "a GPU in the matrix (see 'envcheck matrix show')" if row is None else f"{row.name} (no memory size)"
        raise UsageError(f"--gpu {name!r}: not {known}; give --gpu-mem GIB instead")
    sizes = row.memory_gib
    wanted = [int(n) for n in re.findall(r"(\d+)\s*G", name, flags=re.IGNORECASE)]
    chosen = [size for size in sizes if size in wanted]
    if chosen:
        size = chosen[0]
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
