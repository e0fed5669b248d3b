"""CUDA libraries on LD_LIBRARY_PATH that can shadow the copies torch's nvidia-* wheels ship."""

from __future__ import annotations

import os
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.checks.versions import major
from envcheck.snapshot import Snapshot

_CATEGORY = {"libnccl": "nccl_error"}


def _soname(path: str) -> str:
    """libcublasLt.so.12.1.3.1 -> libcublasLt.so.12: the name the loader matches on."""
    base = os.path.basename(path)
    stem, _, version = base.partition(".so.")
    return f"{stem}.so.{version.split('.')[0]}" if version else base


@check("EC514")
def ld_library_path_shadows_wheels(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    """The loader searches LD_LIBRARY_PATH before a library's RUNPATH, so a conda env's or a system toolkit's copy
    with the same soname is the one that gets loaded (e.g. `undefined symbol: cublasLtGetStatusString`)."""
    wheel = {(lib.name, _soname(lib.path)): lib for lib in snapshot.libraries if lib.origin == "wheel"}
    for lib in snapshot.libraries:
        if lib.origin != "LD_LIBRARY_PATH" or lib.name == "libnccl" or not lib.version:
            continue
        shipped = wheel.get((lib.name, _soname(lib.path)))
        if shipped is None or not shipped.version or major(shipped.version) != major(lib.version):
            continue
        if shipped.version.split(".")[:2] == lib.version.split(".")[:2]:
            continue
        yield Finding(
            "EC514", Severity.WARNING, _CATEGORY.get(lib.name, "segfault_abi_mismatch"),
            f"{lib.name} {lib.version} on LD_LIBRARY_PATH can shadow the {shipped.version} that torch's wheel ships",
            "The dynamic loader finds the LD_LIBRARY_PATH copy first; torch then runs against a library it was not "
            "built with: undefined symbols (e.g. cublasLtGetStatusString), CUBLAS/cuDNN status errors or crashes.",
            (Evidence(f"libraries[{lib.name}].path", lib.path), Evidence(f"libraries[{lib.name}].version", lib.version,
                                                                          shipped.version),
             Evidence(f"libraries[{lib.name}, wheel].path", shipped.path)),
            (Fix("Remove that directory from LD_LIBRARY_PATH for training runs",
                 ("export LD_LIBRARY_PATH=<without " + os.path.dirname(lib.path) + ">",)),))
