"""The first error a compiler printed in a build, and what it says: a header that is not installed, a gcc that nvcc
does not support, nvcc's own fatal message. A stopped build names its reason from it instead of "see above"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.diagnose.structure.model import Line

# gcc/clang: "file.h:10:10: fatal error: cusparse.h: No such file or directory"; MSVC: "fatal error C1083: Cannot open
# include file: 'cusparse.h': No such file or directory".
_HEADER = re.compile(r"fatal error:? (?:C1083: Cannot open include file: '(?P<msvc>[^']+)'"
                     r"|(?P<gcc>[\w/.+-]+\.(?:h|hpp|cuh)): No such file or directory)")
# CUDA's crt/host_config.h: "#error -- unsupported GNU version! gcc versions later than 15 are not supported!"
_GNU = re.compile(r"unsupported GNU version! gcc versions later than (?P<max>\d+) are not supported")
# nvcc's own stop (not the GPU architecture, which is cuda_arch_unsupported): "nvcc fatal   : <message>".
_NVCC = re.compile(r"nvcc fatal\s*:(?!\s*Unsupported gpu architecture)\s*(?P<msg>.+)")
# The toolkit's compiler itself missing: subprocess's FileNotFoundError for CUDA_HOME/bin/nvcc, which DeepSpeed's
# op_builder (installed_cuda_version runs "nvcc -V") and torch's cpp_extension run before compiling.
NO_NVCC = re.compile(r"No such file or directory: '(?P<path>[^']*[/\\]nvcc(?:\.exe)?)'")
# No CUDA toolkit at all where torch.utils.cpp_extension looks for one: _join_cuda_home's "CUDA_HOME environment
# variable is not set. Please set it to your CUDA install root.", the CUDA_NOT_FOUND_MESSAGE of torch 2.13 ("CUDA was
# not found on the system, please set the CUDA_HOME or the CUDA_PATH environment variable ...") and its "nvcc not found
# at '<path>'. Ensure CUDA path '<CUDA_HOME>' is correct.".
NO_TOOLKIT = re.compile(r"CUDA_HOME environment variable is not set|CUDA was not found on the system, please set the "
                        r"CUDA_HOME|nvcc not found at '[^']+'")
# torch.utils.cpp_extension's verify_ninja_availability: "Ninja is required to load C++ extensions".
NO_NINJA = "Ninja is required to load C++ extensions"
# torch.utils.cpp_extension's _check_cuda_version: "The current installed version of g++ (4.8.5) is less than the
# minimum required version by CUDA 11.8 (6.0.0). Please make sure to use an adequate version of g++ (>=6.0.0,
# <=11.5.0)." (or "greater than the maximum"), before any compiler runs.
_GXX_BOUNDS = re.compile(r"The current installed version of (?P<cc>\S+) \((?P<have>\d+(?:\.\d+)*)\) is "
                         r"(?:less|greater) than the (?:minimum|maximum) required version by CUDA (?P<cuda>\d+(?:\.\d+)*)"
                         r"(?:.*adequate version of \S+ \((?P<bounds>[^)]+)\))?")
# A compiler's error line: file:line[:col]: [fatal] error: message (gcc, clang, nvcc's cudafe) or file(line): error
# (nvcc, MSVC). gcc's "Killed signal terminated program" is the OOM killer's, read as host_oom elsewhere.
_ERROR = re.compile(r"\.(?:c|cc|cpp|cxx|cu|cuh|h|hpp)(?::\d+(?::\d+)?|\(\d+\)): (?:fatal )?error\b:?\s*(?P<msg>.*)")
# A compiler killed by a signal, as its driver reports it (SIG152's three forms): gcc's "Killed signal terminated
# program cc1plus", nvcc's "'cicc' died due to signal 9 (Kill signal)", collect2's "ld terminated with signal 9 [Killed]".
KILLED = re.compile(r"signal terminated program|' died due to signal 9\b|\bterminated with signal 9 \[Killed\]")
# DeepSpeed's import-time probe of every op (op_builder/builder.py probe_is_compatible): "[WARNING] fused_adam
# compatibility check failed (<the error>), treating the op as not compatible", after which DeepSpeed goes on; the
# error it quotes (nvcc missing, CUDA_HOME unset) stopped no build.
PROBE = "treating the op as not compatible"
# CUDA headers that live in the toolkit's library dev packages, not in nvcc's own package.
_CUDA_HEADERS = ("cuda", "cublas", "cusparse", "cusolver", "curand", "cufft", "cupti", "nvrtc", "nvToolsExt", "nvtx3/",
                 "cudnn", "nccl", "thrust/", "cub/", "crt/")


@dataclass(frozen=True)
class CompilerError:
    """The first compiler error of a build: its line, a short reason for a title, and what to do."""

    line: Line
    reason: str
    explanation: str
    fix: str


def first_error(lines: list[Line]) -> CompilerError | None:
    """The first line of LINES that is a compiler's error, read for its reason; None when there is none."""
    for line in lines:
        if KILLED.search(line.text) or PROBE in line.text:
            continue
        for read in _READERS:
            found = read(line)
            if found is not None:
                return found
    return None


def _header(line: Line) -> CompilerError | None:
    header = _HEADER.search(line.text)
    return _missing_header(line, header.group("msvc") or header.group("gcc") or "") if header else None


def _gnu(line: Line) -> CompilerError | None:
    gnu = _GNU.search(line.text)
    if not gnu:
        return None
    top = gnu.group("max")
    return CompilerError(
        line, f"nvcc does not support this gcc (later than {top})",
        f"The CUDA toolkit's host_config.h refuses gcc versions later than {top}: nvcc compiles host code with the "
        "system's gcc, and this one is newer than the toolkit knows.",
        f"Build with a gcc of version {top} or older (CC=gcc-{top} CXX=g++-{top}, or conda install "
        f"gxx_linux-64={top}), or install a newer CUDA toolkit that supports this gcc.")


def _bounds(line: Line) -> CompilerError | None:
    bounds = _GXX_BOUNDS.search(line.text)
    if not bounds:
        return None
    cc, have, cuda = bounds.group("cc"), bounds.group("have"), bounds.group("cuda")
    wanted = bounds.group("bounds") or "the range CUDA supports"
    return CompilerError(
        line, f"{cc} {have} is outside what CUDA {cuda} supports",
        f"torch.utils.cpp_extension checks the host compiler against the CUDA toolkit before building: {cc} {have} "
        f"is outside CUDA {cuda}'s range ({wanted}).",
        f"Build with a {cc} in {wanted} (CC/CXX pointing at it, or conda install gxx_linux-64 of that version), or "
        f"use a CUDA toolkit that supports {cc} {have}.")


def _no_ninja(line: Line) -> CompilerError | None:
    if NO_NINJA not in line.text:
        return None
    return CompilerError(
        line, "ninja is not installed",
        "torch.utils.cpp_extension builds extensions at run time with ninja, and there is no ninja on PATH in this "
        "environment.", "pip install ninja in the same environment (check: ninja --version), then run again.")


def _no_nvcc(line: Line) -> CompilerError | None:
    missing = NO_NVCC.search(line.text)
    if not missing:
        return None
    path = missing.group("path")
    return CompilerError(
        line, f"nvcc is not installed ({path})",
        f"The build ran the CUDA toolkit's compiler at {path} and there is none: CUDA_HOME points at a folder without "
        "the toolkit (a runtime-only install, or no toolkit at all).",
        "Install the CUDA toolkit (its nvcc) of torch.version.cuda's release and point CUDA_HOME at it, or install the "
        "op pre-built so that nothing is compiled at run time.")


def _no_toolkit(line: Line) -> CompilerError | None:
    if not NO_TOOLKIT.search(line.text):
        return None
    return CompilerError(
        line, "no CUDA toolkit (CUDA_HOME) was found",
        "torch.utils.cpp_extension needs the CUDA toolkit's nvcc to build a CUDA op, and it found none: CUDA_HOME is "
        "unset and no nvcc is on PATH (a machine with the driver and torch's bundled CUDA runtime only), or torch is a "
        "CPU build, for which it looks for no toolkit at all.",
        "If torch.version.cuda is None, install a CUDA build of torch first; otherwise install the CUDA toolkit (its "
        "nvcc) of torch.version.cuda's release and export CUDA_HOME to it, or install the op pre-built so that "
        "nothing is compiled at run time.")


def _nvcc_fatal(line: Line) -> CompilerError | None:
    nvcc = _NVCC.search(line.text)
    if not nvcc:
        return None
    message = nvcc.group("msg").strip()
    return CompilerError(line, f"nvcc: {message}", f"nvcc stopped before compiling: {message}.",
                         "Fix what nvcc names (the host compiler it runs, CUDA_HOME, its flags), then rebuild.")


def _compile_error(line: Line) -> CompilerError | None:
    error = _ERROR.search(line.text)
    if not error:
        return None
    message = error.group("msg").strip()
    return CompilerError(line, f"the compiler's first error: {message}" if message else "a compile error",
                         "The compiler rejected a source file of the build (its first error is shown).",
                         "Read the first error: usually a gcc, CUDA toolkit or torch that the source does not support; "
                         "use the versions its release supports.")


# In this order: a line with a missing header is also a compiler error line, and it says more.
_READERS = (_header, _gnu, _bounds, _no_ninja, _no_nvcc, _no_toolkit, _nvcc_fatal, _compile_error)


def _missing_header(line: Line, name: str) -> CompilerError:
    base = name.rsplit("/", 1)[-1]
    if base == "Python.h":
        return CompilerError(line, "Python.h is not installed",
                             "The compiler could not find Python.h: Python's development headers are not installed.",
                             "Install Python's headers (apt install python3-dev, or the matching python3.X-dev).")
    if name.startswith(_CUDA_HEADERS) or base.startswith(_CUDA_HEADERS):
        return CompilerError(
            line, f"the CUDA header {name} is not installed",
            f"The compiler could not find {name}: the CUDA toolkit under CUDA_HOME lacks the development files of "
            "that library (a toolkit with nvcc only, e.g. conda's cuda-nvcc, has no cuBLAS/cuSPARSE/cuRAND headers).",
            "Install the CUDA toolkit's library development packages for torch.version.cuda's release (the full "
            "toolkit, the distribution's cuda-libraries-dev, or conda install cuda-libraries-dev), and point CUDA_HOME "
            "at it.")
    return CompilerError(line, f"{name} is not installed",
                         f"The compiler could not find the header {name}.",
                         f"Install the development package that provides {name}, then rebuild.")
