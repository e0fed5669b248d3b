"""faulthandler dumps: "Fatal Python error: Segmentation fault", the frames (most recent call first) and the
"Extension modules:" list; the package on top of the stack is the one to blame."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.symbols import package_of, so_name

ANCHORS = (b"Fatal Python error", b"most recent call first", b"Extension modules:", b"Segmentation fault",
           b"   from /", b") from /")
WITH_NEXT = (b"most recent call first",)  # the frame after the header is the top of the stack: the scan keeps it
_BARE = re.compile(r"Segmentation fault")
_FATAL = re.compile(r"Fatal Python error: (?P<what>Segmentation fault|Bus error|Aborted|Floating point exception|"
                    r"Illegal instruction)")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+ in (?P<func>\S+)')
# gdb's backtrace: "#0  0x00007f... in func () from /path/lib.so", the "from" part wrapped to the next line
_GDB_FROM = re.compile(r"(?:^\s+|\) )from (?P<path>/\S+\.so(?:\.[\d.]+)?)\s*$")
_EXTENSIONS = re.compile(r"Extension modules: (?P<mods>.*?)(?: \(total: \d+\))?$")
# Packages whose compiled extension is built against one torch/CUDA ABI: a crash in them is usually that mismatch.
COMPILED = ("flash_attn", "xformers", "bitsandbytes", "deepspeed", "apex", "vllm", "mamba_ssm", "causal_conv1d",
            "flashinfer", "auto_gptq", "awq", "exllamav2", "torch_scatter", "torch_sparse", "transformer_engine")
# A Python function named after an NCCL call on top of the stack (vLLM's pynccl_wrapper.py binds libnccl with ctypes:
# "line 257 in ncclAllReduce"): the crash is in NCCL itself, not in the package's compiled extension.
_NCCL_CALL = re.compile(r"^nccl[A-Z]\w*$")


def events(lines: list[Line]) -> list[Event]:
    found: list[Event] = []
    if not any(_FATAL.search(line.text) for line in lines):
        bare = next((line for line in lines if _BARE.search(line.text)), None)
        if bare is not None:  # a shell's or the user's report of SIGSEGV; a gdb backtrace may name the library
            where = _gdb_top(lines)
            found.append(Event("segfault", "segfault_other", 0.55, "Segmentation fault",
                               f"The process died of SIGSEGV in native code ({where}, gdb's top frame)." if where
                               else "The process died of SIGSEGV in native code; the log names no library.",
                               "Re-run with python -X faulthandler (or take a core and run gdb's bt) to see which "
                               "library crashed.", bare.file, bare.number, bare.text, "signal(7): SIGSEGV", where))
        return found
    for i, line in enumerate(lines):
        fatal = _FATAL.search(line.text)
        if not fatal:
            continue
        top, extensions = "", []
        for later in lines[i + 1:i + 60]:
            frame = _FRAME.search(later.text)
            if frame and not top:
                top = "nccl" if _NCCL_CALL.match(frame.group("func")) else package_of(frame.group("path"))
            ext = _EXTENSIONS.search(later.text)
            if ext:
                extensions = [m.strip() for m in ext.group("mods").split(",")]
                break
        library = next((m for m in extensions if top and m.split(".")[0].startswith(top)), top)
        compiled = any(library.startswith(p) for p in COMPILED)
        found.append(Event(
            "faulthandler", "segfault_abi_mismatch" if compiled else "segfault_other", 0.85 if compiled else 0.75,
            f"{fatal.group('what')} in {library or 'native code'} (faulthandler)",
            f"faulthandler shows the crash under {library or 'a native frame'}"
            + (": a compiled extension, most often built for another torch/CUDA than the one installed."
               if compiled else "."),
            (f"Reinstall {top or library.split('.')[0]} built for the installed torch/CUDA (pip install --no-build-isolation "
             f"--force-reinstall, or the wheel matching torch, CUDA and the C++ ABI)." if compiled else
             "Run the crashing call alone to reproduce; print the native stack with gdb from the core."),
            line.file, line.number, line.text, "CPython Python/faulthandler.c (Fatal Python error, Extension modules)",
            library))
    return found


def _gdb_top(lines: list[Line]) -> str:
    """The package (site-packages/<pkg>/...) or library of gdb's first "from /path/lib.so" frame, or ""."""
    for line in lines:
        found = _GDB_FROM.search(line.text)
        if found:
            path = found.group("path")
            return package_of(path) or so_name(path)
    return ""
