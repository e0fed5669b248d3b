"""The nvcc a shell finds first vs the CUDA_HOME that torch extension builds use."""

from __future__ import annotations

import os
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.checks.versions import major_minor
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
