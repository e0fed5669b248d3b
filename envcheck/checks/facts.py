"""Facts several checks derive from a snapshot: which nvcc builds use, the GPUs' capabilities, the arch list."""

from __future__ import annotations

import os
from dataclasses import dataclass

from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import CudaToolkit, Snapshot


LOCAL_CUDA = "/usr/local/cuda"


@dataclass(frozen=True)
class BuildHome:
    """The CUDA home and toolkit that torch.utils.cpp_extension (so DeepSpeed and flash-attn builds) would use.

    Derived in torch's own order (`_find_cuda_home`): CUDA_HOME, CUDA_PATH, two levels above the nvcc on PATH,
    then /usr/local/cuda. Only CONTRACT.md's fields decide (`env`, toolkit `path` and `on_path`); the probe's
    optional fields (`found_via`, `first_on_path`, `nvcc_path`, the `cuda_home` section) refine. `certain` is False
    when the snapshot cannot tell which toolkit that is (a symlinked home, several nvcc on PATH in unknown order).
    """

    path: str | None
    via: str  # "CUDA_HOME" | "CUDA_PATH" | "PATH" | "/usr/local/cuda" | "none"
    kit: CudaToolkit | None
    certain: bool


def _norm(path: str) -> str:
    return os.path.normpath(path)


def _nvcc_root(kit: CudaToolkit) -> str | None:
    return _norm(os.path.dirname(os.path.dirname(kit.nvcc_path))) if kit.nvcc_path else None


def _kit_at(snapshot: Snapshot, home: str, via: str) -> CudaToolkit | None:
    probed = snapshot.cuda_home
    for kit in snapshot.cuda_toolkits:
        if _norm(kit.path) == home or via in kit.found_via or _nvcc_root(kit) == home:
            return kit
        if probed is not None and probed.via == via and probed.toolkit and _norm(probed.toolkit) == _norm(kit.path):
            return kit
    return None


def _how_kits_were_found_is_known(snapshot: Snapshot) -> bool:
    """Whether a toolkit missing from a path match is really absent (the probe recorded how it found each one)."""
    return (not snapshot.cuda_toolkits or snapshot.cuda_home is not None
            or any(kit.found_via for kit in snapshot.cuda_toolkits))


def build_home(snapshot: Snapshot) -> BuildHome:
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = snapshot.env.get(variable)
        if value:
            home = _norm(value)
            kit = _kit_at(snapshot, home, variable)
            return BuildHome(home, variable, kit, kit is not None or _how_kits_were_found_is_known(snapshot))
    on_path = [kit for kit in snapshot.cuda_toolkits if kit.on_path or kit.first_on_path]
    if on_path:
        first = next((kit for kit in on_path if kit.first_on_path), on_path[0] if len(on_path) == 1 else None)
        probed = snapshot.cuda_home
        home = (probed.path if probed is not None and probed.via == "PATH" else
                (_nvcc_root(first) or _norm(first.path)) if first is not None else None)
        return BuildHome(home, "PATH", first, first is not None)
    kit = _kit_at(snapshot, LOCAL_CUDA, LOCAL_CUDA)
    if kit is not None:
        return BuildHome(LOCAL_CUDA, LOCAL_CUDA, kit, True)
    return BuildHome(None, "none", None, _how_kits_were_found_is_known(snapshot))


def build_toolkit(snapshot: Snapshot) -> CudaToolkit | None:
    """The toolkit extension builds use, or None when there is none or the snapshot cannot tell which."""
    return build_home(snapshot).kit


def marker_environment(snapshot: Snapshot) -> dict[str, str]:
    """PEP 508 marker values of the examined interpreter. The probe records them (`python.marker_env`); without
    them the snapshot's Python version and architecture give the ones requirements use, on Linux."""
    environment = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    if snapshot.host is not None and snapshot.host.arch:
        environment["platform_machine"] = snapshot.host.arch
    python = snapshot.python
    if python is not None and python.version:
        parts = python.version.split(".")
        environment["python_version"] = ".".join(parts[:2])
        environment["python_full_version"] = python.version
    if python is not None:
        environment.update(python.marker_env)
    return environment


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
