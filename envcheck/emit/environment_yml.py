"""environment.yml for conda: Python, pip, the CUDA toolkit pieces JIT builds need at torch's CUDA, the pip stack.

The toolkit comes from conda-forge at torch's major.minor (cuda-version pins it), so DeepSpeed and flash-attn ops
build with an nvcc that matches torch.version.cuda. The pip section carries the top-level ranges; exact pins with
hashes live in requirements.lock.txt.
"""

from __future__ import annotations

from envcheck.emit.header import header
from envcheck.resolve.solver import Resolution

TOOLKIT = ("cuda-cudart-dev", "cuda-nvcc", "libcublas-dev", "libcurand-dev", "libcusparse-dev")


def pip_requirements(result: Resolution) -> list[str]:
    """The top-level requirement lines of the stack, sorted (torch first is not needed: resolvers sort it out)."""
    skip = {"python", "cuda"}
    return sorted(f"{name}{spec}" for name, spec in result.pins.items() if name not in skip)


def render(result: Resolution, command: str, name: str = "envcheck-train") -> str:
    lines = [header(result, "conda environment for a GPU training stack", command).rstrip("\n")]
    if not result.default_index:
        lines.append(f"# torch {result.torch_index} wheels are not on the default package index: create the env, then "
                     f"install the lock with `uv pip sync --require-hashes --torch-backend={result.torch_index} "
                     "requirements.lock.txt` (or point pip's own configuration at that index).")
    lines += [f"name: {name}", "channels:", "  - conda-forge", "dependencies:",
              f"  - python={result.python}", "  - pip", f"  - cuda-version={result.cuda}"]
    lines += [f"  - {package}" for package in TOOLKIT]
    lines.append("  - pip:")
    lines += [f"    - {line}" for line in pip_requirements(result)]
    return "\n".join(lines) + "\n"
