"""What happened when torch and each compiled extension were imported in a child process."""

from __future__ import annotations

import dataclasses
import re
from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.snapshot import RuntimeResult, Snapshot

_MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")
_UNDEFINED_SYMBOL = re.compile(r"undefined symbol: (\S+)")

REINSTALL = {
    "torch": 'pip install --force-reinstall "torch=={version}"',
    "flash_attn_2_cuda": "pip install --force-reinstall --no-cache-dir --no-build-isolation flash-attn",
    "xformers._C": 'pip install --force-reinstall "xformers"  # the release that pins torch=={version}',
    "bitsandbytes": "pip install --force-reinstall bitsandbytes",
    "vllm._C": 'pip install --force-reinstall "vllm"  # the release that pins torch=={version}',
}


def _fix(module: str, snapshot: Snapshot) -> tuple[Fix, ...]:
    version = snapshot.torch.version if snapshot.torch and snapshot.torch.version else "<installed torch>"
    if module.startswith("deepspeed.ops."):
        ds = snapshot.deepspeed.version if snapshot.deepspeed and snapshot.deepspeed.version else "<version>"
        command = f'DS_BUILD_OPS=1 pip install --force-reinstall --no-cache-dir --no-deps --no-build-isolation "deepspeed=={ds}"'
    else:
        command = REINSTALL.get(module, "pip install --force-reinstall <package>").format(version=version)
    summary = ("Reinstall torch (its own files or a library it loads are damaged or mismatched)" if module == "torch"
               else f"Reinstall the package that provides {module}, built for the installed torch")
    return (Fix(summary, (command,)),)


def _evidence(module: str, result: RuntimeResult) -> tuple[Evidence, ...]:
    items = [Evidence(f"runtime.{module}.exit_code", str(result.exit_code))]
    if result.signal:
        items.append(Evidence(f"runtime.{module}.signal", result.signal))
    if result.error:
        items.append(Evidence(f"runtime.{module}.error", result.error))
    return tuple(items)


def _classify(module: str, result: RuntimeResult, snapshot: Snapshot) -> Finding:
    evidence = _evidence(module, result)
    error = result.error or ""
    is_extension = module != "torch"
    if result.timed_out:
        return Finding("EC313", Severity.ERROR, "other", f"importing {module} hung ({error})",
                       "A hang on import usually means a driver or NCCL initialisation that never returns.",
                       evidence, _fix(module, snapshot))
    if result.signal:
        return Finding(
            "EC310", Severity.FATAL, "segfault_abi_mismatch" if is_extension else "segfault_other",
            f"importing {module} killed the process with {result.signal}",
            f"The training run would die the same way (exit code {result.exit_code}). A crash on import is almost "
            "always a binary built for another torch, CUDA or C++ ABI.",
            evidence, _fix(module, snapshot))
    symbol = _UNDEFINED_SYMBOL.search(error)
    if symbol:
        return Finding(
            "EC311", Severity.ERROR, "segfault_abi_mismatch", f"{module} has an undefined symbol: {symbol.group(1)}",
            "The compiled module was linked against another torch (or CUDA, or C++ ABI) than the one installed; "
            "the error text is recorded verbatim.", evidence, _fix(module, snapshot))
    library = _MISSING_LIBRARY.search(error)
    if library:
        return Finding(
            "EC312", Severity.ERROR, "missing_cuda_library", f"{module} cannot load {library.group(1)}",
            "A shared library it was linked against is not on the loader's path: usually a wheel built for another "
            "CUDA major, or a missing nvidia-* wheel.", evidence, _fix(module, snapshot))
    return Finding("EC314", Severity.ERROR, "other", f"importing {module} failed",
                   error or "The child process exited with an error.", evidence, _fix(module, snapshot))


# Extensions whose package catches a failed load and carries on without them: xformers disables its
# memory-efficient kernels with "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions" (xformers/_cpp_lib.py).
OPTIONAL_EXTENSIONS = frozenset({"xformers._C"})


@check("EC310", "EC311", "EC312", "EC313", "EC314")
def runtime_import_failures(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    for module, result in sorted((snapshot.runtime or {}).items()):
        if result.ok:
            continue
        finding = _classify(module, result, snapshot)
        if module in OPTIONAL_EXTENSIONS and not result.signal and finding.severity > Severity.WARNING:
            finding = dataclasses.replace(
                finding, severity=Severity.WARNING,
                detail=finding.detail + " xformers catches this and runs without its C++/CUDA kernels (slower, more "
                                        "memory), so the run itself goes on.")
        yield finding
