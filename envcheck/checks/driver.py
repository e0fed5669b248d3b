"""The driver against the CUDA that torch was built with, and against the nvcc that JIT builds use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.facts import ArchList, build_toolkit, gpu_capabilities, runs_on
from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
from envcheck.checks.versions import major, major_minor
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import Snapshot

MVC_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"


@dataclass(frozen=True)
class DriverVerdict:
    """How a driver relates to a CUDA release: 'ok', 'minor_compat' (runs with limitations) or 'too_old'."""

    state: str
    evidence: tuple[Evidence, ...]
    confirmed: bool
    limitations: tuple[str, ...] = ()


def judge_driver(snapshot: Snapshot, matrix: Matrix, cuda: str) -> DriverVerdict | Unevaluated:
    nvidia = snapshot.nvidia
    if nvidia is None or not (nvidia.driver_version or nvidia.cuda_driver_version):
        return Unevaluated(f"driver vs CUDA {cuda}", "the driver version was not probed")
    supported = nvidia.cuda_driver_version
    release = query.cuda_release(matrix, cuda)
    evidence = [Evidence("nvidia.driver_version", nvidia.driver_version)]
    if not nvidia.driver_version:
        # Only the supported CUDA is known. Enough: a driver that reports CUDA X.y is at least the first driver of
        # major X, which is the minor-version-compatibility floor of X (NVIDIA's CUDA compatibility guide).
        fits = query.version(major_minor(supported)) >= query.version(major_minor(cuda))  # type: ignore[operator]
        evidence.append(Evidence("nvidia.cuda_driver_version", supported, f">= {major_minor(cuda)}"))
        same_major = major(supported) == major(cuda)
        return DriverVerdict("ok" if fits else "minor_compat" if same_major else "too_old", tuple(evidence), True)
    confirmed = True
    if supported:
        evidence.append(Evidence("nvidia.cuda_driver_version", supported, f">= {major_minor(cuda)}"))
        fits = query.version(major_minor(supported)) >= query.version(major_minor(cuda))  # type: ignore[operator]
    elif release is not None:
        evidence.append(Evidence("matrix cuda_release.min_driver_linux", release.min_driver_linux,
                                 f"<= {nvidia.driver_version}", release.source))
        fits = query.version(nvidia.driver_version) >= query.version(release.min_driver_linux)  # type: ignore[operator]
        confirmed = release.confirmed
    else:
        return Unevaluated(f"driver vs CUDA {cuda}", f"the matrix has no CUDA {cuda} release and the driver's "
                                                     "supported CUDA version was not probed")
    if fits:
        return DriverVerdict("ok", tuple(evidence), confirmed)
    compat = query.minor_version_compat(matrix, major(cuda))
    if compat is not None and query.version(nvidia.driver_version) >= query.version(compat.min_driver_linux) and (  # type: ignore[operator]
        supported is None or major(supported) == major(cuda)
    ):
        evidence.append(Evidence(f"matrix minor_version_compat[{compat.cuda_major}].min_driver_linux",
                                 compat.min_driver_linux, f"<= {nvidia.driver_version}", compat.source))
        return DriverVerdict("minor_compat", tuple(evidence), confirmed and compat.confirmed, compat.limitations)
    return DriverVerdict("too_old", tuple(evidence), confirmed)


def _upgrade_fix(matrix: Matrix, cuda: str) -> Fix:
    release = query.cuda_release(matrix, cuda)
    floor = f" to {release.min_driver_linux} or newer" if release else ""
    return Fix(f"Upgrade the NVIDIA driver{floor} (CUDA {cuda} needs it)",
               ("sudo apt-get install nvidia-driver-<branch>  # or your distribution's / cluster's driver package",))


def _torch_fix(matrix: Matrix, snapshot: Snapshot) -> Fix | None:
    """Install the newest CUDA variant of this torch release that the driver runs, when the matrix knows one."""
    torch, nvidia = snapshot.torch, snapshot.nvidia
    if torch is None or nvidia is None:
        return None
    row = query.torch_release(matrix, torch.version)
    limit = nvidia.cuda_driver_version
    if row is None or not limit:
        return None
    ccs = [g.cc for g in gpu_capabilities(snapshot, matrix) if g.cc]
    fitting = [c for c in row.cuda_variants if query.version(c) <= query.version(major_minor(limit))  # type: ignore[operator]
               and _serves_gpus(matrix, row.version, c, ccs)]
    if not fitting:
        return None
    best = max(fitting, key=query.version)  # type: ignore[arg-type]
    plain = (torch.version or "").split("+")[0]
    tag = "cu" + best.replace(".", "")
    return Fix(f"Or keep the driver and install torch {plain} built for CUDA {best}",
               (f'uv pip install "torch=={plain}" --torch-backend={tag}',))


def _serves_gpus(matrix: Matrix, torch: str, cuda: str, ccs: list[str]) -> bool:
    """Whether that torch build has kernels for every GPU (True when the matrix has no arch list for it)."""
    build = query.torch_build(matrix, torch, cuda)
    if build is None:
        return True
    arch = ArchList(build.arch_list, build.ptx, build.source)
    return all(runs_on(arch, cc) == "sass" for cc in ccs)


def _cap(severity: Severity, confirmed: bool) -> Severity:
    """Facts marked unconfirmed in the matrix never raise more than info."""
    return severity if confirmed else Severity.INFO


@check("EC501", needs_matrix=True)
def driver_too_old_for_torch(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    torch = snapshot.torch
    if torch is None or not torch.cuda or snapshot.nvidia is None:
        return
    verdict = judge_driver(snapshot, matrix, torch.cuda)
    if isinstance(verdict, Unevaluated):
        yield verdict
        return
    evidence = (Evidence("torch.cuda", torch.cuda), *verdict.evidence)
    fixes = tuple(f for f in (_upgrade_fix(matrix, torch.cuda), _torch_fix(matrix, snapshot)) if f)
    if verdict.state == "too_old":
        yield Finding(
            "EC501", _cap(Severity.FATAL, verdict.confirmed), "driver_too_old",
            f"the NVIDIA driver {snapshot.nvidia.driver_version} is too old for torch's CUDA {torch.cuda}",  # type: ignore[union-attr]
            "torch.cuda.is_available() returns False with \"The NVIDIA driver on your system is too old\", and "
            "training either stops or silently runs on the CPU.", evidence, fixes, (MVC_DOC,))
    elif verdict.state == "minor_compat":
        yield Finding(
            "EC501", _cap(Severity.WARNING, verdict.confirmed), "driver_too_old",
            f"the driver runs torch's CUDA {torch.cuda} only through minor-version compatibility",
            "The driver predates this CUDA release but is of the same major version, so CUDA runs with limits: "
            + "; ".join(verdict.limitations or ("PTX JIT compilation of newer code fails",)) + ".",
            evidence, fixes, (MVC_DOC,))


@check("EC502", needs_matrix=True)
def driver_too_old_for_nvcc(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    kit = build_toolkit(snapshot)
    if kit is None or not kit.nvcc_version or snapshot.nvidia is None:
        return
    verdict = judge_driver(snapshot, matrix, major_minor(kit.nvcc_version) or kit.nvcc_version)
    if isinstance(verdict, Unevaluated) or verdict.state == "ok":
        if isinstance(verdict, Unevaluated):
            yield verdict
        return
    severity = Severity.ERROR if verdict.state == "too_old" else Severity.WARNING
    yield Finding(
        "EC502", _cap(severity, verdict.confirmed), "driver_too_old",
        f"nvcc {kit.nvcc_version} (used for extension builds) is newer than the driver {snapshot.nvidia.driver_version} supports",
        "DeepSpeed JIT ops and flash-attn builds compiled with this nvcc "
        + ("will not load on this driver." if verdict.state == "too_old"
           else "load only through minor-version compatibility; their PTX cannot be JIT-compiled by this driver."),
        (Evidence("nvcc (CUDA_HOME, else PATH)", kit.nvcc_version), *verdict.evidence),
        (Fix("Build with a toolkit no newer than the driver supports, matching torch's CUDA",
             ("export CUDA_HOME=/usr/local/cuda-<torch's CUDA>",)), _upgrade_fix(matrix, kit.nvcc_version)),
        (MVC_DOC,),
    )
