"""Facts several checks derive from a snapshot: which nvcc builds use, the GPUs' capabilities, the arch list."""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import CudaToolkit, Snapshot


def build_toolkit(snapshot: Snapshot) -> CudaToolkit | None:
    """The toolkit torch.utils.cpp_extension (and so DeepSpeed and flash-attn builds) uses, in its own order
    (`_find_cuda_home`): CUDA_HOME, CUDA_PATH, the nvcc on PATH, then exactly /usr/local/cuda; else none."""
    kits = snapshot.cuda_toolkits
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if snapshot.env.get(variable):
            return next((k for k in kits if variable in k.found_via), None)
    first = next((k for k in kits if k.first_on_path), None)
    if first is not None:
        return first
    return next((k for k in kits if "/usr/local/cuda" in k.found_via), None)


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
    sass: tuple[str, ...]  # "8.0", or "9.0a" / "10.0f" for arch- and family-specific targets
    ptx: tuple[str, ...]
    source: str  # "runtime" (torch.cuda.get_arch_list() in a child) or the matrix row's source


def _from_runtime_names(names: list[str]) -> ArchList:
    """['sm_80', 'sm_90a', 'compute_90'] -> SASS 8.0, 9.0a and PTX 9.0 (the suffix is kept: it limits where the code
    runs)."""
    sass, ptx = [], []
    for name in names:
        kind, _, code = name.partition("_")
        suffix = code[-1] if code[-1:] in ("a", "f") else ""
        digits = code[:-1] if suffix else code
        if not digits.isdigit() or len(digits) < 2:
            continue
        cc = f"{digits[:-1]}.{digits[-1]}{suffix}"
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
    major, _, minor = cc.rstrip("af").partition(".")
    return int(major), int(minor or 0)


def _serves(target: str, cc: str, forward: bool) -> bool:
    """Whether code built for `target` runs on capability `cc`. Plain SASS and family (f) code run on the same
    major at an equal or higher minor; arch-specific (a) code only on exactly that capability; plain PTX (forward)
    is JIT-compiled for any equal or higher capability."""
    built, device = cc_key(target), cc_key(cc)
    if target.endswith("a"):
        return built == device
    if forward and not target.endswith("f"):
        return built <= device
    return built[0] == device[0] and built[1] <= device[1]


def runs_on(arch: ArchList, cc: str) -> str | None:
    """'sass' when a cubin runs on this capability, 'ptx' when only PTX can be JIT-compiled for it, None when the
    build has no code for it (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility")."""
    if any(_serves(s, cc, forward=False) for s in arch.sass):
        return "sass"
    if any(_serves(p, cc, forward=True) for p in arch.ptx):
        return "ptx"
    return None
