"""Name the library behind a loader error: which .so lacks which symbol (demangled), which .so is missing."""

from __future__ import annotations

import functools
import os
import re
import shutil

from envcheck import proc

# a path, not the parenthesis or bracket a message puts around it ("Reason: ImportError (libcudnn.so.8: cannot ...")
_UNDEFINED = re.compile(r"(?P<lib>[^\s:'\"(\[]+\.so[^\s:]*): undefined symbol: (?P<sym>\S+)")
# Linux's "(deleted)": the loader names a library whose file was removed since the process mapped it (a package
# upgraded under a running process).
_MISSING = re.compile(r"(?P<lib>[^\s:'\"(\[]+\.so[^\s:]*)(?: \(deleted\))?: cannot open shared object file")
# glibc elf/dl-lookup.c: "<lib>: symbol cudaFreeAsync version libcudart.so.11.0 not defined in file libcudart.so.11.0
# with link time reference": the library that needs the symbol version is the one to blame.
_VERSION_UNDEFINED = re.compile(r"(?P<lib>[^\s:'\"(\[]+\.so[^\s:]*): symbol \S+ version \S+ not defined in file")
# macOS dyld through dlopen (dyld/DyldAPIs.cpp prefixes "dlopen(<path>, <flags>): " to Loader.cpp's "Symbol not
# found: <sym>"): the library whose load failed is the one at the path.
_MAC_SYMBOL = re.compile(r"dlopen\((?P<lib>[^,\s)]+\.(?:so|dylib)), \d+\): Symbol not found")
# glibc elf/dl-version.c: "version `GLIBCXX_3.4.29' not found (required by /.../cpu_adam.so)": the library that
# needs the newer libstdc++/glibc is the one to blame.
_VERSION_NEEDED = re.compile(r"version .?(?:GLIBCXX|CXXABI|GLIBC)_[\d.]+. not found \(required by (?P<lib>[^)\s]+)\)")


# GitHub turns a pasted file name that looks like a host name into a link, and copying the rendered page keeps it
# in Markdown: "[flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so](http://flash_attn_2_cuda.cpython-39-....so/)".
# Web consoles that render paths as links keep the path as the link's end:
# "[/dev/shm/nccl-X](https://host/dev/shm/nccl-X)".
_AUTOLINK = re.compile(r"\[(?P<text>[^\]\s]+)\]\(https?://(?:[^\s()]*?(?=(?P=text)/?\)))?(?P=text)/?\)")


def unlinked(text: str) -> str:
    """TEXT with GitHub's autolinks of file names put back as the file names."""
    return _AUTOLINK.sub(r"\g<text>", text) if "](http" in text else text


@functools.lru_cache(maxsize=64)
def demangle(symbol: str) -> str | None:
    """C++ symbol as source code spells it, through c++filt when it is installed; None otherwise."""
    if not symbol.startswith("_Z") or shutil.which("c++filt") is None:
        return None
    result = proc.run(["c++filt", symbol], timeout=5)
    text = result.stdout.strip()
    return text if result.ok and text and text != symbol else None


def describe_line(text: str) -> str | None:
    """'flash_attn_2_cuda.so needs c10::cuda::... which the loaded libraries do not define', or None."""
    text = unlinked(text)
    found = _UNDEFINED.search(text)
    if found:
        symbol = found.group("sym")
        readable = demangle(symbol)
        owner = " (a torch/c10 symbol: the extension was built for another torch)" if symbol.startswith(
            ("_ZN3c10", "_ZN2at", "_ZN5torch")) else ""
        return (f"{os.path.basename(found.group('lib'))} ({found.group('lib')}) needs {readable or symbol}, "
                f"which the loaded libraries do not define{owner}")
    found = _MISSING.search(text)
    if found:
        return f"the dynamic loader cannot find {found.group('lib')}"
    return None


_SO_NAME = re.compile(r"(?:^|[/\\\s'\"])(?P<name>[A-Za-z_][\w-]*?)(?:\.cpython-[^\s:/'\"]*|\.abi3)?\.(?:so|dylib)\b")
_NOT_PACKAGES = frozenset({"site-packages", "dist-packages", "lib-dynload", "bin", "build"})
_LINK = re.compile(r"cannot find -l(?P<lib>[\w+.-]+)")
_MODULE = re.compile(r"No module named '(?P<mod>[\w]+)")


_PACKAGE_DIR = re.compile(r"(?:site|dist)-packages[/\\](?P<pkg>[A-Za-z_]\w*)")


def package_of(path: str) -> str:
    """The installed package a file belongs to (.../site-packages/flash_attn/... -> flash_attn), or ""."""
    found = _PACKAGE_DIR.search(path)
    return found.group("pkg") if found else ""


def so_name(path: str) -> str:
    """A shared library's name without folder, ABI tag and version: .../libtorch_cuda.so.1 -> libtorch_cuda."""
    named = _SO_NAME.search(" " + os.path.basename(path))
    return named.group("name") if named else os.path.basename(path)


def library_of(text: str) -> str:
    """The library a loader/linker/import line names: flash_attn_2_cuda (an extension's .so), libcudnn (a missing
    .so.N), libcurand (ld's -lcurand), the missing module; "" when it names none."""
    text = unlinked(text)
    for regex in (_UNDEFINED, _MISSING, _VERSION_NEEDED, _MAC_SYMBOL, _VERSION_UNDEFINED):
        found = regex.search(text)
        if found:
            path = found.group("lib")
            name = so_name(path)
            parent = os.path.basename(os.path.dirname(path))
            package = parent and parent not in _NOT_PACKAGES and not parent.startswith(("python", "lib"))
            return f"{parent}.{name}" if name.startswith("_") and package else name  # vllm/_C.abi3.so: vllm._C
    found = _LINK.search(text)
    if found:
        return f"lib{found.group('lib')}"
    found = _MODULE.search(text)
    if found:
        return found.group("mod")
    return "numpy" if "NumPy" in text else ""
