"""CUDA runtime libraries a process can load, from every place the loader or a wheel puts them.

torch's own libraries find the nvidia-* wheels' copies of their direct dependencies through DT_RPATH, which the
loader searches before LD_LIBRARY_PATH; the libraries those wheels load in turn (libcublasLt from libcublas,
libnvJitLink, cuDNN 9's sub-libraries, nvrtc) are found through RUNPATH or dlopen, after LD_LIBRARY_PATH. Listing
every copy shows which of them a stale directory on LD_LIBRARY_PATH can replace.
"""

from __future__ import annotations

import glob
import os
import re

from envcheck import proc
from envcheck.snapshot import Library, Skipped

LIBRARY_NAMES = (
    "libcudart", "libnccl", "libcudnn", "libcublas",
    # loaded by the libraries above rather than by torch itself: these are the ones LD_LIBRARY_PATH can shadow
    "libcublasLt", "libnvJitLink", "libnvrtc", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_graph",
    "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled", "libcudnn_heuristic",
)
LDCONFIG_TIMEOUT_S = 3.0
_LDCONFIG_LINE = re.compile(r"^\s*(lib\S+?\.so\S*)\s+\(([^)]*)\)\s+=>\s+(\S+)")


def version_from_filename(path: str) -> str | None:
    """libnccl.so.2.21.5 -> 2.21.5, following symlinks to the file that carries the full version."""
    best = None
    for candidate in (path, os.path.realpath(path)):
        match = re.search(r"\.so\.(\d+(?:\.\d+)*)$", os.path.basename(candidate))
        if match and (best is None or len(match.group(1)) > len(best)):
            best = match.group(1)
    return best


def _library_name(filename: str) -> str | None:
    for name in LIBRARY_NAMES:
        if filename == f"{name}.so" or filename.startswith(f"{name}.so."):
            return name
    return None


def parse_ldconfig(text: str) -> list[tuple[str, str]]:
    """(library name, path) for the libraries of interest in `ldconfig -p` output."""
    found = []
    for line in text.splitlines():
        match = _LDCONFIG_LINE.match(line)
        if match:
            name = _library_name(match.group(1))
            if name:
                found.append((name, match.group(3)))
    return found


def _scan_dir(directory: str) -> list[tuple[str, str]]:
    found = []
    for path in sorted(glob.glob(os.path.join(directory, "lib*.so*"))):
        name = _library_name(os.path.basename(path))
        if name:
            found.append((name, path))
    return found


def _keep_most_specific(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """One entry per real file: libnccl.so, libnccl.so.2 and libnccl.so.2.21.5 are usually the same library."""
    by_real: dict[str, tuple[str, str]] = {}
    for name, path in found:
        real = os.path.realpath(path)
        if real not in by_real or len(os.path.basename(path)) > len(os.path.basename(by_real[real][1])):
            by_real[real] = (name, path)
    return list(by_real.values())


def probe_libraries(
    wheel_libs: dict[str, str], environ: dict[str, str] | None = None
) -> tuple[list[Library], list[Skipped]]:
    environ = dict(os.environ) if environ is None else environ
    libraries: list[Library] = []
    skipped = []
    for directory in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if directory:
            for name, path in _keep_most_specific(_scan_dir(directory)):
                libraries.append(Library(name, version_from_filename(path), path, "LD_LIBRARY_PATH"))
    result = proc.run(["ldconfig", "-p"], timeout=LDCONFIG_TIMEOUT_S)
    if not result.ok:
        result = proc.run(["/sbin/ldconfig", "-p"], timeout=LDCONFIG_TIMEOUT_S)
    if result.ok:
        for name, path in _keep_most_specific(parse_ldconfig(result.stdout)):
            libraries.append(Library(name, version_from_filename(path), path, "ldconfig"))
    else:
        skipped.append(Skipped("libraries.ldconfig", result.describe_failure()))
    wheel_found = [(name, path) for path in wheel_libs if (name := _library_name(os.path.basename(path)))]
    for name, path in _keep_most_specific(wheel_found):
        libraries.append(Library(name, wheel_libs[path], path, "wheel"))
    libraries.sort(key=lambda lib: (lib.name, ("LD_LIBRARY_PATH", "ldconfig", "wheel").index(lib.origin), lib.path))
    return libraries, skipped
