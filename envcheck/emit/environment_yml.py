"""environment.yml for conda: Python, pip, the CUDA toolkit pieces JIT builds need at torch's CUDA, the pip stack.

The toolkit comes from conda-forge at torch's major.minor (cuda-version pins it), so DeepSpeed and flash-attn ops
build with an nvcc that matches torch.version.cuda. The pip section pins every package of the lock (top-level and
transitive) with ==, so two `conda env create` runs a month apart install the same stack; the hashes stay in
requirements.lock.txt. It is not `-r requirements.lock.txt`: conda-lock's parser reads each pip line as one
requirement and refuses options. For the same reason no index option is written: a torch variant that is not on
the default index is pinned with its local version (`torch==2.5.1+cu121`), so pip stops with "no matching
distribution" instead of installing another build, and the header says to name that index in pip's own
configuration (PIP_EXTRA_INDEX_URL) for `conda env create`. envcheck writes no index URL of its own.
"""

from __future__ import annotations

from envcheck.emit.header import header
from envcheck.resolve.exact import UNRANGED, Exact
from envcheck.resolve.solver import Resolution

TOOLKIT = ("cuda-cudart-dev", "cuda-nvcc", "libcublas-dev", "libcurand-dev", "libcusparse-dev")


def pip_requirements(result: Resolution) -> list[str]:
    """The top-level requirement lines of the stack, sorted (torch first is not needed: resolvers sort it out)."""
    return sorted(f"{name}{spec}" for name, spec in result.ranges.items() if name not in UNRANGED)


def render(result: Resolution, command: str, exact: Exact, name: str = "envcheck-train") -> str:
    """`exact` must be locked: an environment.yml holds exact pins only."""
    if not exact.locked:
        raise ValueError(f"environment.yml needs the exact pins of a lock: {exact.note}")
    lines = [header(result, "conda environment for a GPU training stack", command).rstrip("\n"),
             f"# Pins: every package of requirements.lock.txt ({exact.how.split(' pip compile')[0]}, "
             f"{len(exact.pins) - len(UNRANGED)} packages); ranges they were chosen in: see its Input line."]
    if not result.default_index:
        torch = exact.pins.get("torch", "")
        lines.append(f"# torch {torch} ({result.torch_index}) is not on the default package index: point pip at "
                     f"the index that serves {result.torch_index} wheels for conda's pip step, e.g. "
                     f"`PIP_EXTRA_INDEX_URL=<that index> conda env create -f environment.yml` (or install the lock "
                     f"with `uv pip sync --require-hashes --torch-backend={result.torch_index} requirements.lock.txt`"
                     "). Without it pip stops at torch; it does not install another build.")
    lines += [f"name: {name}", "channels:", "  - conda-forge", "dependencies:",
              f"  - python={result.python}", "  - pip", f"  - cuda-version={result.cuda}"]
    lines += [f"  - {package}" for package in TOOLKIT]
    lines.append("  - pip:")
    lines += [f"    - {package}=={version}" for package, version in exact.pins.items() if package not in UNRANGED]
    return "\n".join(lines) + "\n"
