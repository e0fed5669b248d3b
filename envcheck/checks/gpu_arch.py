"""GPUs against what torch was compiled for, against the toolkit that JIT builds use, and against each other."""

from __future__ import annotations

from typing import Iterator

from envcheck.checks import check
from envcheck.checks.driver import judge_driver
from envcheck.checks.facts import ArchList, build_toolkit, cc_key, gpu_capabilities, runs_on, torch_arch_list
from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
from envcheck.checks.versions import major_minor
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import Snapshot

BINARY_COMPAT_DOC = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"


def _variant_fix(matrix: Matrix, snapshot: Snapshot, cc: str) -> Fix | None:
    """The newest torch build in the matrix with kernels for this capability that this driver runs fully (else
    through minor-version compatibility) and that supports this Python, as an install command."""
    python = snapshot.python.version if snapshot.python else None
    ranked = []
    for build in matrix.torch_builds:
        if not build.confirmed or runs_on(ArchList(build.arch_list, build.ptx, build.source), cc) != "sass":
            continue
        release = query.torch_release(matrix, build.torch)
        if python and release is not None and query.satisfies(python, release.python) is False:
            continue
        driver = judge_driver(snapshot, matrix, build.cuda)
        state = "unknown" if isinstance(driver, Unevaluated) else driver.state
        if state == "too_old":
            continue
        preference = {"ok": 2, "unknown": 1, "minor_compat": 0}[state]
        ranked.append(((preference, query.version(build.torch), query.version(build.cuda)), build, state))
    if not ranked:
        return None
    _key, build, state = max(ranked, key=lambda item: item[0])  # type: ignore[no-any-return]
    caveat = {"ok": "which this driver supports", "unknown": "check that the driver supports that CUDA",
              "minor_compat": "which this driver runs only through minor-version compatibility"}[state]
    return Fix(f"Install a torch build with kernels for compute capability {cc} (torch {build.torch} for CUDA "
               f"{build.cuda}, {caveat})",
               (f'uv pip install "torch=={build.torch}.*" --torch-backend=cu{build.cuda.replace(".", "")}',))


@check("EC503", needs_matrix=True)
def gpu_arch_not_in_torch_build(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    torch = snapshot.torch
    gpus = gpu_capabilities(snapshot, matrix)
    if torch is None or not torch.cuda or not gpus:
        return
    arch = torch_arch_list(snapshot, matrix)
    if arch is None:
        yield Unevaluated("GPU architecture vs torch build",
                          f"no arch list for torch {torch.version} (no runtime import, no matrix torch_build row)")
        return
    for cc in sorted({g.cc for g in gpus if g.cc}, key=cc_key):
        names = ", ".join(sorted({g.name for g in gpus if g.cc == cc}))
        fit = runs_on(arch, cc)
        if fit == "sass":
            continue
        evidence = (Evidence("nvidia.gpus[].compute_capability", cc), Evidence("torch.version", torch.version),
                    Evidence("torch arch list", " ".join(arch.sass) + (f" +PTX {' '.join(arch.ptx)}" if arch.ptx else ""),
                             f"sm_{cc.replace('.', '')} or an older sm_{cc.split('.')[0]}x", arch.source))
        fixes = tuple(f for f in (_variant_fix(matrix, snapshot, cc),) if f)
        if fit == "ptx":
            driver = judge_driver(snapshot, matrix, torch.cuda)
            jit_blocked = not isinstance(driver, Unevaluated) and driver.state != "ok"
            yield Finding(
                "EC503", Severity.ERROR if jit_blocked else Severity.WARNING, "cuda_arch_unsupported",
                f"torch {torch.version} has no compiled kernels for {names} (compute capability {cc}), only PTX",
                "The driver must JIT-compile every kernel from PTX at start-up (slow, and a large cache)"
                + (", and this driver runs torch's CUDA only through minor-version compatibility, which cannot JIT "
                   "newer PTX: kernels will fail with 'no kernel image is available'." if jit_blocked else "."),
                evidence, fixes, (BINARY_COMPAT_DOC,))
        else:
            yield Finding(
                "EC503", Severity.FATAL, "cuda_arch_unsupported",
                f"torch {torch.version} has no kernels for {names} (compute capability {cc})",
                "Every CUDA operation fails with \"CUDA error: no kernel image is available for execution on the "
                "device\"; torch warns that the GPU \"is not compatible with the current PyTorch installation\".",
                evidence, fixes, (BINARY_COMPAT_DOC,))


@check("EC504", needs_matrix=True)
def cpu_only_torch_on_gpu_machine(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding]:
    torch, nvidia = snapshot.torch, snapshot.nvidia
    if torch is None or torch.cuda or torch.hip or nvidia is None or not nvidia.gpus:
        return
    plain = (torch.version or "").split("+")[0]
    row = query.torch_release(matrix, torch.version)
    variant = row.default_cuda if row and row.default_cuda else None
    command = (f'uv pip install "torch=={plain}" --torch-backend=cu{variant.replace(".", "")}' if variant
               else f'uv pip install "torch=={plain}" --torch-backend=auto')
    yield Finding(
        "EC504", Severity.ERROR, "torch_cpu_only",
        f"torch {torch.version} is a CPU-only build on a machine with {len(nvidia.gpus)} NVIDIA GPU(s)",
        "torch.cuda.is_available() is False: training runs on the CPU or stops with \"Torch not compiled with CUDA "
        "enabled\".",
        (Evidence("torch.cuda", None, "a CUDA version"), Evidence("nvidia.gpus", str(len(nvidia.gpus)))),
        (Fix("Install a CUDA build of the same torch release", (command,)),))


@check("EC512", needs_matrix=True)
def mixed_gpu_capabilities(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding]:
    gpus = gpu_capabilities(snapshot, matrix)
    capabilities = sorted({g.cc for g in gpus if g.cc}, key=cc_key)
    if len(capabilities) < 2:
        return
    listing = "; ".join(f"{g.index}: {g.name} ({g.cc})" for g in gpus)
    yield Finding(
        "EC512", Severity.WARNING, "other",
        f"GPUs of {len(capabilities)} different compute capabilities ({', '.join(capabilities)})",
        "Extensions built just in time target the visible GPUs; bf16, flash-attn and fp8 support differ between "
        "them, and a multi-GPU run runs at the pace of the slowest. Pin a run to one kind with CUDA_VISIBLE_DEVICES.",
        (Evidence("nvidia.gpus", listing),),
        (Fix("Run on GPUs of one kind", ("export CUDA_VISIBLE_DEVICES=<indices of one kind>",)),))


@check("EC513", needs_matrix=True)
def gpu_newer_than_build_toolkit(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    kit = build_toolkit(snapshot)
    gpus = gpu_capabilities(snapshot, matrix)
    if kit is None or not kit.nvcc_version or not gpus:
        return
    nvcc = query.version(major_minor(kit.nvcc_version))
    for cc in sorted({g.cc for g in gpus if g.cc}, key=cc_key):
        row = next((r for r in matrix.compute_capabilities if r.cc == cc), None)
        if row is None:
            yield Unevaluated("GPU architecture vs nvcc", f"the matrix has no compute capability {cc}")
            continue
        too_new = nvcc < query.version(row.first_cuda)  # type: ignore[operator]
        too_old = row.last_cuda is not None and nvcc > query.version(row.last_cuda)  # type: ignore[operator]
        if not (too_new or too_old):
            continue
        limit = f"needs CUDA >= {row.first_cuda}" if too_new else f"was dropped after CUDA {row.last_cuda}"
        yield Finding(
            "EC513", Severity.ERROR if row.confirmed else Severity.INFO, "cuda_toolkit_mismatch",
            f"nvcc {kit.nvcc_version} cannot compile for compute capability {cc} ({row.arch}: {limit})",
            "DeepSpeed JIT ops, flash-attn and other source builds for this GPU fail with \"nvcc fatal : "
            "Unsupported gpu architecture\".",
            (Evidence("nvcc (CUDA_HOME, else PATH)", kit.nvcc_version), Evidence("nvidia.gpus[].compute_capability", cc),
             Evidence(f"matrix compute_capability[{cc}]", f"{row.first_cuda}..{row.last_cuda or ''}", None, row.source)),
            (Fix("Point CUDA_HOME at a toolkit that supports this GPU and matches torch's CUDA",
                 ("export CUDA_HOME=/usr/local/cuda-<X.Y> && export PATH=$CUDA_HOME/bin:$PATH",)),))
