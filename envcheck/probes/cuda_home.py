"""Where torch.utils.cpp_extension would look for CUDA, modelled on its `_find_cuda_home`, and what is there.

torch takes CUDA_HOME or CUDA_PATH; else the directory two levels above `which nvcc`, without resolving links;
else /usr/local/cuda if it exists (pytorch/pytorch torch/utils/cpp_extension.py, `_find_cuda_home`). It then
compiles with `<home>/bin/nvcc`, includes `<home>/include` and links `<home>/lib64` (or `lib`), so a home without
headers or libraries breaks every DeepSpeed, flash-attn or other extension build.
"""

from __future__ import annotations

import glob
import os
import shutil

from envcheck.snapshot import CudaHome

LOCAL_CUDA = "/usr/local/cuda"


def derive_home(environ: dict[str, str]) -> tuple[str | None, str]:
    """(home, how it was found) in torch's order; the home is kept as torch computes it."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(variable):
            return environ[variable], variable
    nvcc = shutil.which("nvcc", path=environ.get("PATH", ""))
    if nvcc:
        return os.path.dirname(os.path.dirname(nvcc)), "PATH"
    if os.path.exists(LOCAL_CUDA):
        return LOCAL_CUDA, LOCAL_CUDA
    return None, "none"


def has_headers(home: str) -> bool:
    """cuda_runtime.h where g++ is told to look: <home>/include, or a conda-style targets/<arch>/include."""
    if os.path.isfile(os.path.join(home, "include", "cuda_runtime.h")):
        return True
    return bool(glob.glob(os.path.join(glob.escape(home), "targets", "*", "include", "cuda_runtime.h")))


def has_libraries(home: str) -> bool:
    """libcudart in lib64/ or lib/ (torch links the first that exists), or a conda-style targets/<arch>/lib."""
    patterns = [os.path.join(glob.escape(home), d, "libcudart.so*") for d in ("lib64", "lib", os.path.join("targets", "*", "lib"))]
    return any(glob.glob(pattern) for pattern in patterns)


def probe_cuda_home(environ: dict[str, str] | None = None) -> CudaHome:
    environ = dict(os.environ) if environ is None else environ
    home, via = derive_home(environ)
    if home is None:
        return CudaHome(None, via)
    nvcc = os.path.join(home, "bin", "nvcc")
    found = os.path.isfile(nvcc) and os.access(nvcc, os.X_OK)
    toolkit = os.path.dirname(os.path.dirname(os.path.realpath(nvcc))) if found else None
    return CudaHome(os.path.normpath(home), via, found, has_headers(home), has_libraries(home), toolkit)
