"""Every nvcc a build could pick up, its version, and which one PATH finds first.

DeepSpeed and flash-attn JIT builds use CUDA_HOME (torch's `cpp_extension` resolves it from CUDA_HOME, CUDA_PATH,
then `which nvcc`), while a shell uses PATH: when the two disagree, a build silently uses another toolkit.
"""

from __future__ import annotations

import glob
import json
import os
import re

from envcheck import proc
from envcheck.snapshot import CudaToolkit, Skipped

NVCC_TIMEOUT_S = 5.0


def toolkit_root(nvcc: str) -> str:
    return os.path.dirname(os.path.dirname(nvcc))


def version_from_json(root: str) -> str | None:
    """CUDA >= 11.1 toolkits ship version.json; its cuda_nvcc entry is the compiler's version."""
    try:
        with open(os.path.join(root, "version.json"), encoding="utf-8") as handle:
            data = json.load(handle)
        version = data.get("cuda_nvcc", {}).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return str(version) if version else None


def parse_nvcc_version(text: str) -> str | None:
    """'Cuda compilation tools, release 13.0, V13.0.88' -> '13.0.88' (or '13.0' without the V part)."""
    full = re.search(r"release\s+\d+\.\d+,\s*V(\d+\.\d+\.\d+)", text)
    if full:
        return full.group(1)
    short = re.search(r"release\s+(\d+\.\d+)", text)
    return short.group(1) if short else None


def _candidates(environ: dict[str, str]) -> list[tuple[str, str]]:
    """(nvcc path, how it was found) in the order a user or a build would meet them."""
    found = []
    for directory in environ.get("PATH", "").split(os.pathsep):
        if directory:
            found.append((os.path.join(directory, "nvcc"), "PATH"))
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(variable):
            found.append((os.path.join(environ[variable], "bin", "nvcc"), variable))
    for root in sorted(glob.glob("/usr/local/cuda*")) + ["/opt/cuda"]:
        # /usr/local/cuda itself is torch's last fallback for CUDA_HOME; the versioned siblings are only found here.
        via = root if root in ("/usr/local/cuda", "/opt/cuda") else "/usr/local"
        found.append((os.path.join(root, "bin", "nvcc"), via))
    return found


def probe_cuda_toolkits(environ: dict[str, str] | None = None) -> tuple[list[CudaToolkit], list[Skipped]]:
    environ = dict(os.environ) if environ is None else environ
    by_binary: dict[str, dict] = {}  # type: ignore[type-arg]
    first_on_path: str | None = None
    skipped = []
    for nvcc, via in _candidates(environ):
        if not (os.path.isfile(nvcc) and os.access(nvcc, os.X_OK)):
            continue
        real = os.path.realpath(nvcc)
        if via == "PATH" and first_on_path is None:
            first_on_path = real
        entry = by_binary.setdefault(real, {"nvcc": nvcc, "via": [], "on_path": False})
        if via not in entry["via"]:
            entry["via"].append(via)
        entry["on_path"] = entry["on_path"] or via == "PATH"
    toolkits = []
    for real, entry in by_binary.items():
        root = toolkit_root(real)
        version = version_from_json(root)
        if version is None:
            result = proc.run([entry["nvcc"], "--version"], timeout=NVCC_TIMEOUT_S)
            version = parse_nvcc_version(result.stdout) if result.ok else None
            if version is None:
                skipped.append(Skipped("cuda_toolkits", f"{entry['nvcc']}: no version ({result.describe_failure() or 'unrecognised output'})"))
        toolkits.append(
            CudaToolkit(
                path=root,
                nvcc_version=version,
                on_path=entry["on_path"],
                first_on_path=real == first_on_path,
                found_via=tuple(entry["via"]),
                nvcc_path=entry["nvcc"],
            )
        )
    return toolkits, skipped
