"""The nvcc a shell finds first vs the CUDA_HOME that torch extension builds use."""

from __future__ import annotations

import os
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.facts import build_home, build_toolkit
from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
from envcheck.checks.versions import major, major_minor
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.snapshot import CudaHome, Snapshot


@check("EC401", "EC402")
def nvcc_path_vs_cuda_home(snapshot: Snapshot, _matrix: object) -> Iterator[Finding | Unevaluated]:
    home = build_home(snapshot)
    if home.via not in ("CUDA_HOME", "CUDA_PATH"):
        return
    variable, value = home.via, snapshot.env[home.via]
    home_kit = home.kit
    if home_kit is None:
        if not home.certain:
            yield Unevaluated(f"nvcc in {variable}", f"no toolkit path equals {variable}={value}, and the snapshot "
                              "does not say how its toolkits were found (it may be a link to one of them)")
            return
        yield Finding(
            "EC402", Severity.WARNING, "cuda_toolkit_mismatch", f"{variable}={value} has no nvcc",
            "DeepSpeed and flash-attn builds look for nvcc under CUDA_HOME; with none there they fail or fall back "
            "to CPU-only ops.",
            (Evidence(f"env.{variable}", value, "a directory with bin/nvcc"),
             Evidence("cuda_toolkits[].path", ", ".join(k.path for k in snapshot.cuda_toolkits) or "none")),
            (Fix(f"Point {variable} at an installed toolkit", (f"export {variable}=/usr/local/cuda-X.Y",)),),
        )
        return
    on_path = [t for t in snapshot.cuda_toolkits if t.first_on_path or t.on_path]
    first = next((t for t in on_path if t.first_on_path), on_path[0] if len(on_path) == 1 else None)
    if first is None or first is home_kit or os.path.normpath(first.path) == os.path.normpath(home_kit.path):
        return
    same_release = major_minor(first.nvcc_version) == major_minor(home_kit.nvcc_version)
    yield Finding(
        "EC401", Severity.INFO if same_release else Severity.WARNING,
        "other" if same_release else "cuda_toolkit_mismatch",
        f"the nvcc first on PATH ({first.nvcc_version}) is not the one in {variable} ({home_kit.nvcc_version})",
        "Extension builds (DeepSpeed JIT ops, flash-attn) compile with CUDA_HOME's nvcc, while a shell and some "
        "build scripts run the one on PATH: the two builds use different toolkits."
        + ("" if not same_release else " Both are the same release, so this is harmless today."),
        (Evidence("cuda_toolkits[on_path].path", first.nvcc_path or first.path),
         Evidence(f"env.{variable}", home.path, first.path)),
        (Fix(f"Put {variable}'s nvcc first on PATH", (f'export PATH="{home.path}/bin:$PATH"',)),),
    )


DS_BUILDER = "https://github.com/deepspeedai/DeepSpeed/blob/master/op_builder/builder.py"
# DeepSpeed runs assert_no_cuda_mismatch when it pre-builds ops (DS_BUILD_OPS / DS_BUILD_<OP>) and when it builds
# its CPU ops just in time (get_cuda_compile_flag in TorchCPUOpBuilder.cxx_args); a JIT build of a CUDA op goes
# through torch's cpp_extension, which only warns about a minor mismatch (op_builder/builder.py at v0.16.3).
DS_CHECKED_OPS = "pre-built ops and the CPU ops built just in time (cpu_adam and cpu_adagrad for ZeRO-Offload, async_io)"


def _minor_list(matrix: Matrix, deepspeed: str, cuda_major: int) -> tuple[str, ...] | None:
    """DeepSpeed's cuda_minor_mismatch_ok for this major; () when DeepSpeed's list has no entry for it (then any
    minor mismatch raises); None when the matrix does not cover this DeepSpeed release at all."""
    row = query.deepspeed_minor_ok(matrix, deepspeed, cuda_major)
    if row is not None:
        return row.minors
    covered = any(query.satisfies(deepspeed, r.deepspeed) for r in matrix.deepspeed_cuda_minor_ok)
    return () if covered else None


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
    allowed = _minor_list(matrix, deepspeed, major(nvcc) or 0)
    evidence.append(Evidence("python.packages.deepspeed", deepspeed))
    if allowed is None:
        yield Unevaluated("nvcc vs torch CUDA for DeepSpeed", f"the matrix has no cuda_minor_mismatch_ok for DeepSpeed {deepspeed}")
        return
    evidence.append(Evidence(f"matrix deepspeed_cuda_minor_ok[{major(nvcc)}]", " ".join(allowed) or "(none)"))
    if nvcc in allowed and runtime in allowed:
        yield Finding(
            "EC505", Severity.INFO, "cuda_toolkit_mismatch",
            f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ in minor version (DeepSpeed accepts this)",
            "DeepSpeed's builder accepts this pair (\"since the APIs are compatible, accepting this combination\").",
            tuple(evidence), (fix,), (DS_BUILDER,))
        return
    if snapshot.env.get("DS_SKIP_CUDA_CHECK") == "1":
        yield Finding(
            "EC505", Severity.INFO, "cuda_toolkit_mismatch",
            f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ; DeepSpeed builds anyway (DS_SKIP_CUDA_CHECK=1)",
            "DeepSpeed skips its check (\"but it may result in unexpected behavior\").", tuple(evidence), (fix,),
            (DS_BUILDER,))
        return
    yield Finding(
        "EC505", Severity.WARNING, "cuda_toolkit_mismatch",
        f"nvcc {kit.nvcc_version} and torch's CUDA {torch.cuda} differ: DeepSpeed {deepspeed} refuses to build some ops",
        f"DeepSpeed raises CUDAMismatchException (\"unable to compile cuda/cpp extensions without a matching cuda "
        f"version\") for {DS_CHECKED_OPS}; CUDA ops built just in time (fused_adam) only get torch's warning.",
        tuple(evidence), (fix, Fix("Or accept the pair knowingly", ("export DS_SKIP_CUDA_CHECK=1",))), (DS_BUILDER,))


def _jit_only_deepspeed_on_gpus(snapshot: Snapshot) -> bool:
    torch, ds, nvidia = snapshot.torch, snapshot.deepspeed, snapshot.nvidia
    return bool(torch and torch.cuda and ds is not None and not ds.installed_ops and nvidia and nvidia.gpus)


@check("EC515", needs_matrix=True)
def no_toolkit_for_deepspeed_jit(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding]:
    """DeepSpeed without pre-built ops compiles them at first use; with no CUDA_HOME that first use fails."""
    torch, ds, nvidia = snapshot.torch, snapshot.deepspeed, snapshot.nvidia
    if torch is None or not torch.cuda or ds is None or nvidia is None or not nvidia.gpus:
        return
    home = build_home(snapshot)
    if home.via != "none" or not home.certain:
        return  # a home was found (EC402 and EC516 judge it), or the snapshot cannot tell that none exists
    prebuilt = ", ".join(ds.installed_ops) or "none"
    yield Finding(
        "EC515", Severity.INFO if ds.installed_ops else Severity.WARNING, "deepspeed_build_failure",
        "no CUDA toolkit for DeepSpeed's just-in-time op builds (no CUDA_HOME, no nvcc on PATH, no /usr/local/cuda)",
        "A pip-only install is usually like this, and runs whose optimizer is the Hugging Face Trainer's own need "
        "no build. A run that needs one of DeepSpeed's ops (cpu_adam for ZeRO-Offload, FusedAdam when the "
        "DeepSpeed config names its optimizer) compiles it at first use and fails with \"CUDA_HOME does not "
        "exist, unable to compile CUDA op(s)\". Pre-built ops: " + prebuilt + ".",
        (Evidence("cuda_toolkits", "none usable by torch.utils.cpp_extension"),
         Evidence("deepspeed.installed_ops", prebuilt)),
        (Fix(f"Install a CUDA {major_minor(torch.cuda)} toolkit (nvcc) and point CUDA_HOME at it",
             (f"export CUDA_HOME=/usr/local/cuda-{major_minor(torch.cuda)}",)),
         Fix("Or pre-build DeepSpeed's ops where a toolkit exists",
             ("DS_BUILD_OPS=1 pip install --no-build-isolation --no-cache-dir deepspeed",))),
        (DS_BUILDER,))


def _real_toolkit(snapshot: Snapshot, probed: CudaHome) -> str | None:
    """Where the home's nvcc really lives: its link target, else another listed toolkit of the same nvcc release
    (a wrapper script's target cannot be read)."""
    others = [k for k in snapshot.cuda_toolkits if os.path.normpath(k.path) != probed.path]
    if probed.toolkit and os.path.normpath(probed.toolkit) != probed.path:
        return probed.toolkit
    mine = next((k for k in snapshot.cuda_toolkits if os.path.normpath(k.path) == probed.path), None)
    same = [k.path for k in others if mine is not None and mine.nvcc_version and k.nvcc_version == mine.nvcc_version]
    return same[0] if same else None


@check("EC516")
def cuda_home_unusable_for_builds(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    """A CUDA home with nvcc but no headers or libraries: a wrapper or symlinked nvcc on PATH (torch takes the
    directory two levels above it), or a CUDA_HOME pointing at a runtime-only install."""
    probed = snapshot.cuda_home
    if probed is None or probed.path is None or (probed.headers is not False and probed.libraries is not False):
        return
    missing = [what for what, ok in (("include/cuda_runtime.h", probed.headers), ("lib64/libcudart.so", probed.libraries))
               if ok is False]
    real = _real_toolkit(snapshot, probed)
    how = {"PATH": f"two levels above the nvcc on PATH ({probed.path}/bin/nvcc)",
           "/usr/local/cuda": "torch's fallback /usr/local/cuda"}.get(probed.via, f"{probed.via}={probed.path}")
    jit_only = _jit_only_deepspeed_on_gpus(snapshot)
    commands = ((f"export CUDA_HOME={real}",) if real else ("export CUDA_HOME=/usr/local/cuda-X.Y  # a full toolkit",))
    yield Finding(
        "EC516", Severity.WARNING,
        "deepspeed_build_failure" if snapshot.deepspeed is not None else "cuda_toolkit_mismatch",
        f"the CUDA home extension builds would use ({probed.path}) has no {' and no '.join(missing)}",
        f"torch.utils.cpp_extension takes its CUDA home from {how}; it includes <home>/include and links "
        "<home>/lib64, so DeepSpeed JIT ops, flash-attn and other source builds fail (\"cuda_runtime.h: No such file "
        "or directory\" or \"cannot find -lcudart\")."
        + (" DeepSpeed here has no pre-built ops, so the first op it builds fails." if jit_only else ""),
        (Evidence("cuda_home.path", probed.path, "a toolkit root with include/ and lib64/", probed.via),
         *(Evidence(f"cuda_home: {what}", "missing", "present") for what in missing),
         *((Evidence("cuda_home.toolkit", real, None, "where bin/nvcc really lives"),) if real else ())),
        (Fix("Point CUDA_HOME at the real toolkit root", commands),),
        (DS_BUILDER,))
