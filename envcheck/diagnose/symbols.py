"""Name the library behind a loader error: which .so lacks which symbol (demangled), which .so is missing."""

from __future__ import annotations

import functools
import os
import re
import shutil

from envcheck import proc

_UNDEFINED = re.compile(r"(?P<lib>[^\s:'\"]+\.so[^\s:]*): undefined symbol: (?P<sym>\S+)")
_MISSING = re.compile(r"(?P<lib>[^\s:'\"]+\.so[^\s:]*): cannot open shared object file")


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
