"""Facts several checks derive from a snapshot: which nvcc builds use, the GPUs' capabilities, the arch list."""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import CudaToolkit, Snapshot


def build_toolkit(snapshot: Snapshot) -> CudaToolkit | None:
    """The toolkit torch's cpp_extension (and so DeepSpeed and flash-attn builds) uses: CUDA_HOME, CUDA_PATH, then
    the nvcc on PATH, then /usr/local/cuda."""
    kits = snapshot.cuda_toolkits
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if snapshot.env.get(variable):
            return next((k for k in kits if variable in k.found_via), None)
    first = next((k for k in kits if k.first_on_path), None)
    if first is not None:
        return first
    return next((k for k in kits if k.path.rstrip("/").endswith("/cuda")), None) or next(
        (k for k in kits if k.path.startswith("/usr/local/cuda")), None)


@dataclass(frozen=True)
class GpuCapability:
    index: int
    name: str
    cc: str | None
    from_matrix: bool  # looked up by name because the probe did not report it


def gpu_capabilities(snapshot: Snapshot, matrix: Matrix) -> list[GpuCapability]:
    found = []
    for gpu in snapshot.nvidia.gpus if snapshot.nvidia else ():
        if gpu.compute_capability:
            found.append(GpuCapability(gpu.index, gpu.name, gpu.compute_capability, False))
        else:
            model = query.gpu_model(matrix, gpu.name)
            found.append(GpuCapability(gpu.index, gpu.name, model.compute_capability if model else None, True))
    return found


@dataclass(frozen=True)
class ArchList:
    sass: tuple[str, ...]  # "8.0"
    ptx: tuple[str, ...]
    source: str  # "runtime" (torch.cuda.get_arch_list() in a child) or the matrix row's source


def _from_runtime_names(names: list[str]) -> ArchList:
    sass, ptx = [], []
    for name in names:
        kind, _, digits = name.partition("_")
        digits = digits.rstrip("af")  # sm_90a, sm_100f: arch-specific variants of the same capability
        if not digits.isdigit():
            continue
        cc = f"{digits[:-1]}.{digits[-1]}"
        (sass if kind == "sm" else ptx if kind == "compute" else []).append(cc)
    return ArchList(tuple(sass), tuple(ptx), "runtime: torch.cuda.get_arch_list()")


def torch_arch_list(snapshot: Snapshot, matrix: Matrix) -> ArchList | None:
    """What the installed torch was compiled for: measured in a child if it ran, else the matrix's row."""
    runtime = (snapshot.runtime or {}).get("torch")
    if runtime is not None and runtime.ok and isinstance(runtime.facts.get("arch_list"), list) and runtime.facts["arch_list"]:
        return _from_runtime_names(runtime.facts["arch_list"])
    torch = snapshot.torch
    if torch is None:
        return None
    row = query.torch_build(matrix, torch.version, torch.cuda)
    if row is None:
        return None
    return ArchList(row.arch_list, row.ptx, row.source)


def cc_key(cc: str) -> tuple[int, int]:
    major, _, minor = cc.partition(".")
    return int(major), int(minor or 0)


def runs_on(arch: ArchList, cc: str) -> str | None:
    """'sass' when a cubin runs on this capability (same major, minor not above it), 'ptx' when only PTX can be
    JIT-compiled for it (PTX of a capability not above it), None when the build has no code for it."""
    target = cc_key(cc)
    if any(cc_key(s)[0] == target[0] and cc_key(s)[1] <= target[1] for s in arch.sass):
        return "sass"
    if any(cc_key(p) <= target for p in arch.ptx):
        return "ptx"
    return None
