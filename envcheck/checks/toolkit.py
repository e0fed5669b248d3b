"""The nvcc a shell finds first vs the CUDA_HOME that torch extension builds use."""

from __future__ import annotations

import os
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.facts import build_toolkit
from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
from envcheck.checks.versions import major, major_minor
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import Snapshot


@check("EC401", "EC402")
def nvcc_path_vs_cuda_home(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    cuda_home = snapshot.env.get("CUDA_HOME") or snapshot.env.get("CUDA_PATH")
    if not cuda_home:
        return
    variable = "CUDA_HOME" if snapshot.env.get("CUDA_HOME") else "CUDA_PATH"
    home = os.path.normpath(cuda_home)
    home_kit = next((t for t in snapshot.cuda_toolkits if variable in t.found_via), None)
    if home_kit is None:
        yield Finding(
            "EC402", Severity.WARNING, "cuda_toolkit_mismatch", f"{variable}={cuda_home} has no nvcc",
            "DeepSpeed and flash-attn builds look for nvcc under CUDA_HOME; with none there they fail or fall back "
            "to CPU-only ops.",
            (Evidence(f"env.{variable}", cuda_home, "a directory with bin/nvcc"),),
            (Fix(f"Point {variable} at an installed toolkit", (f"export {variable}=/usr/local/cuda-X.Y",)),),
        )
        return
    first = next((t for t in snapshot.cuda_toolkits if t.first_on_path), None)
    if first is None or first is home_kit:
        return
    same_release = major_minor(first.nvcc_version) == major_minor(home_kit.nvcc_version)
    yield Finding(
        "EC401", Severity.INFO if same_release else Severity.WARNING,
        "other" if same_release else "cuda_toolkit_mismatch",
        f"the nvcc first on PATH ({first.nvcc_version}) is not the one in {variable} ({home_kit.nvcc_version})",
        "Extension builds (DeepSpeed JIT ops, flash-attn) compile with CUDA_HOME's nvcc, while a shell and some "
        "build scripts run the one on PATH: the two builds use different toolkits."
        + ("" if not same_release else " Both are the same release, so this is harmless today."),
        (Evidence("cuda_toolkits[first_on_path].nvcc_path", first.nvcc_path or first.path),
         Evidence(f"env.{variable}", home, first.path)),
        (Fix(f"Put {variable}'s nvcc first on PATH", (f'export PATH="{home}/bin:$PATH"',)),),
    )


DS_BUILDER = "https://github.com/deepspeedai/DeepSpeed/blob/master/op_builder/builder.py"


@check("EC505", needs_matrix=True)
def nvcc_vs_torch_cuda(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    """DeepSpeed's `assert_no_cuda_mismatch` and torch's cpp_extension rule, before a build hits them."""
    torch, kit = snapshot.torch, build_toolkit(snapshot)
    if torch is None or not torch.cuda or kit is None or not kit.nvcc_version:
        return
    nvcc, runtime = major_minor(kit.nvcc_version), major_minor(torch.cuda)
    if nvcc == runtime or nvcc is None or runtime is None:
        return
    evidence = [Evidence("nvcc (CUDA_HOME, else PATH)", kit.nvcc_version, runtime), Evidence("torch.cuda", torch.cuda)]
    fix = Fix(f"Build extensions with a CUDA {runtime} toolkit", (f"export CUDA_HOME=/usr/local/cuda-{runtime}",
                                                                 'export PATH="$CUDA_HOME/bin:$PATH"'))
    deepspeed = snapshot.python.packages.get("deepspeed") if snapshot.python else None
    if major(nvcc) != major(runtime):
        yield Finding(
            "EC505", Severity.ERROR, "cuda_toolkit_mismatch",
            f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ in major version",
            "torch.utils.cpp_extension refuses to build (\"The detected CUDA version ... mismatches the version that "
            "was used to compile PyTorch\"), so DeepSpeed JIT ops, flash-attn and other source builds fail.",
            tuple(evidence), (fix,), (DS_BUILDER,))
        return
    if deepspeed is None:
        yield Finding(
            "EC505", Severity.INFO, "cuda_toolkit_mismatch",
            f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ in minor version",
            "torch.utils.cpp_extension only warns about a minor mismatch (\"Most likely this shouldn't be a "
            "problem\"); DeepSpeed would be stricter.", tuple(evidence), (fix,))
        return
    allowed = query.deepspeed_minor_ok(matrix, deepspeed, major(nvcc) or 0)
    evidence.append(Evidence("python.packages.deepspeed", deepspeed))
    if allowed is not None:
        evidence.append(Evidence("matrix deepspeed_cuda_minor_ok", " ".join(allowed.minors), None, allowed.source))
    if allowed is not None and nvcc in allowed.minors and runtime in allowed.minors:
        yield Finding(
            "EC505", Severity.INFO, "cuda_toolkit_mismatch",
            f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ in minor version (DeepSpeed accepts this)",
            "DeepSpeed's builder accepts this pair (\"since the APIs are compatible, accepting this combination\").",
            tuple(evidence), (fix,), (DS_BUILDER,))
        return
    if allowed is None:
        yield Unevaluated("nvcc vs torch CUDA for DeepSpeed",
                          f"the matrix has no cuda_minor_mismatch_ok list for DeepSpeed {deepspeed}, CUDA {major(nvcc)}")
    skip = snapshot.env.get("DS_SKIP_CUDA_CHECK") == "1"
    yield Finding(
        "EC505", Severity.WARNING if skip or allowed is None else Severity.ERROR, "cuda_toolkit_mismatch",
        f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ: DeepSpeed {deepspeed} will not build its ops",
        ("DS_SKIP_CUDA_CHECK=1 is set, so DeepSpeed builds anyway \"but it may result in unexpected behavior\"."
         if skip else "DeepSpeed raises CUDAMismatchException (\"unable to compile cuda/cpp extensions without a "
                      "matching cuda version\") when an op is built just in time or pre-built."),
        tuple(evidence), (fix,), (DS_BUILDER,))
