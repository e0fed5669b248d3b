"""Compiled extensions built for another torch or CUDA than the installed one."""

from __future__ import annotations

from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.checks.versions import major_minor
from envcheck.snapshot import Snapshot

DS_REBUILD = 'DS_BUILD_OPS=1 pip install --force-reinstall --no-cache-dir --no-deps --no-build-isolation "deepspeed=={version}"'
DS_JIT = 'pip install --force-reinstall --no-cache-dir --no-deps "deepspeed=={version}"  # without DS_BUILD_*: ops build just in time'
DS_SETUP = "https://github.com/deepspeedai/DeepSpeed/blob/master/setup.py"


def _ds_fixes(version: str | None) -> tuple[Fix, ...]:
    version = version or "<version>"
    return (
        Fix("Rebuild DeepSpeed's ops against the installed torch", (DS_REBUILD.format(version=version),)),
        Fix("Or install DeepSpeed without pre-built ops, so they compile against this torch when first used",
            (DS_JIT.format(version=version),)),
    )


@check("EC301", "EC302")
def deepspeed_compiled_for_other_torch(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    ds, torch = snapshot.deepspeed, snapshot.torch
    if ds is None or torch is None or torch.version is None:
        return
    prebuilt = bool(ds.installed_ops)
    ops_text = ", ".join(ds.installed_ops) if prebuilt else "none (all ops are built just in time)"
    comparisons = (
        ("EC301", "torch", ds.compiled_torch, major_minor(torch.version), "deepspeed.compiled_torch", "torch.version"),
        ("EC302", "CUDA", ds.compiled_cuda, major_minor(torch.cuda), "deepspeed.compiled_cuda", "torch.cuda"),
    )
    for finding_id, what, compiled, runtime, compiled_key, runtime_key in comparisons:
        if compiled is None or runtime is None or major_minor(compiled) == runtime:
            continue
        evidence = (
            Evidence(compiled_key, compiled, runtime, DS_SETUP),
            Evidence(runtime_key, runtime),
            Evidence("deepspeed.installed_ops", ops_text),
        )
        if prebuilt:
            yield Finding(
                finding_id, Severity.ERROR, "segfault_abi_mismatch",
                f"DeepSpeed {ds.version}'s pre-built ops were compiled with {what} {compiled}, "
                f"but {what} {runtime} is installed",
                f"Loading a pre-built op ({ops_text}) raises \"{what if what == 'CUDA' else 'PyTorch'} version "
                "mismatch! DeepSpeed ops were compiled and installed with a different version than what is being "
                "used at runtime\", or a binary built for another torch crashes.",
                evidence, _ds_fixes(ds.version),
            )
        else:
            yield Finding(
                finding_id, Severity.INFO, "other",
                f"DeepSpeed {ds.version} was installed with {what} {compiled}; {what} {runtime} is installed now",
                "No op was pre-built, so DeepSpeed compiles its ops just in time against the installed torch: the "
                "recorded version does not matter, but ds_report's 'compiled w.' line will show it.",
                evidence,
            )
