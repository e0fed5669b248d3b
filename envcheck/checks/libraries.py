"""CUDA libraries on LD_LIBRARY_PATH that can shadow the copies torch's nvidia-* wheels ship."""

from __future__ import annotations

import os
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.checks.versions import major
from envcheck.snapshot import Snapshot

# What torch's libraries load themselves, through DT_RPATH set on PyPI wheels (patchelf --force-rpath in
# pytorch/builder's manywheel scripts, pytorch/builder#1150): LD_LIBRARY_PATH cannot replace these.
DIRECT = frozenset({"libcudart", "libnccl", "libcudnn", "libcublas"})


def _soname(path: str) -> str:
    """libcublasLt.so.12.1.3.1 -> libcublasLt.so.12: the name the loader matches on."""
    base = os.path.basename(path)
    stem, _, version = base.partition(".so.")
    return f"{stem}.so.{version.split('.')[0]}" if version else base


@check("EC514")
def ld_library_path_shadows_wheels(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    """The nvidia-* wheels load their own dependencies (libcublasLt, libnvJitLink, cuDNN sub-libraries) through
    RUNPATH or dlopen, which come after LD_LIBRARY_PATH: a conda env's or a system toolkit's copy with the same
    soname is the one loaded (pytorch/pytorch#101314: `undefined symbol: cublasLtGetStatusString`)."""
    wheel = {(lib.name, _soname(lib.path)): lib for lib in snapshot.libraries if lib.origin == "wheel"}
    for lib in snapshot.libraries:
        if lib.origin != "LD_LIBRARY_PATH" or lib.name in DIRECT or not lib.version:
            continue
        shipped = wheel.get((lib.name, _soname(lib.path)))
        if shipped is None or not shipped.version or major(shipped.version) != major(lib.version):
            continue
        if shipped.version.split(".")[:2] == lib.version.split(".")[:2]:
            continue
        yield Finding(
            "EC514", Severity.WARNING, "segfault_abi_mismatch",
            f"{lib.name} {lib.version} on LD_LIBRARY_PATH shadows the {shipped.version} that torch's nvidia wheels ship",
            "The wheel's library loads this one by soname through RUNPATH or dlopen, which the loader searches after "
            "LD_LIBRARY_PATH: the mixed pair fails with undefined symbols (cublasLtGetStatusString), CUBLAS or cuDNN "
            "status errors, or crashes.",
            (Evidence(f"libraries[{lib.name}].path", lib.path), Evidence(f"libraries[{lib.name}].version", lib.version,
                                                                          shipped.version),
             Evidence(f"libraries[{lib.name}, wheel].path", shipped.path)),
            (Fix("Remove that directory from LD_LIBRARY_PATH for training runs",
                 ("export LD_LIBRARY_PATH=<without " + os.path.dirname(lib.path) + ">",)),),
            ("https://github.com/pytorch/pytorch/issues/101314",))
