"""One reader of GPU names for every command: what people type (`4090`, `rtx4090`, `A6000`, `H100 PCIe`,
`A100-40GB`) and what nvidia-smi prints (`NVIDIA GeForce RTX 4090`, `NVIDIA H100 80GB HBM3`) name the same row.

A name is reduced to a key: lower case, without vendor and brand words (NVIDIA, GeForce, Tesla, Quadro), memory
sizes (`80GB`), form factors and memory types (PCIe, SXM4, NVL, HBM3) and separators. The key must equal a row's
key, or equal it without its `rtx` prefix (`4090`); failing that, a key contained in exactly one row's key
(`rtx pro 6000` in `RTX PRO 6000 Blackwell`) is that row. Several candidates are an ambiguity, listed, never a
guess. The memory size a name carries (`A100 40GB`) is returned apart, to choose among a row's variants.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from envcheck.matrix import Matrix
from envcheck.matrix.model import GpuModel

_BRANDS = ("nvidia", "geforce", "tesla", "quadro")
_FORM = r"pcie|sxm\d?|nvl\d*|hbm\d?e?|gddr\d?x?|mig|oem"
_MEMORY = re.compile(r"\b(\d+)\s*(?:gb|gib|g)\b", re.IGNORECASE)


@dataclass(frozen=True)
class GpuName:
    """A resolved name: the matrix row, and the memory size the name asked for (GiB) if it gave one."""

    model: GpuModel
    memory_gib: int | None  # the size the name gave, else the one its form factor settles (H100 PCIe: 80)


class GpuNameError(ValueError):
    """An unknown or ambiguous name; the message lists the candidates."""


def memory_in(text: str) -> int | None:
    found = _MEMORY.search(text)
    return int(found.group(1)) if found else None


def form_in(text: str) -> str | None:
    """'H100 PCIe' -> 'pcie'; 'A100-SXM4-80GB' -> 'sxm'; 'H100 NVL' -> 'nvl'."""
    for word in re.split(r"[\s_\-/]+", text.lower()):
        for form in ("pcie", "sxm", "nvl"):
            if word.startswith(form):
                return form
    return None


def _memory(model: GpuModel, text: str) -> int | None:
    given = memory_in(text)
    if given is not None:
        return given
    form = form_in(text)
    return model.memory_by_form.get(form) if form else None


def name_key(text: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'rtx4090'; 'H100 PCIe 80GB' -> 'h100'; 'Tesla V100-SXM2-32GB' -> 'v100'."""
    text = _MEMORY.sub(" ", text.lower())
    words = [w for w in re.split(r"[\s_\-/]+", text) if w and w not in _BRANDS and not re.fullmatch(_FORM, w)]
    return "".join(words)


def _row_keys(model: GpuModel) -> set[str]:
    return {name_key(model.name), *(name_key(m) for m in model.match)} - {""}


def _candidates(matrix: Matrix, key: str, loose: bool) -> list[GpuModel]:
    exact = [m for m in matrix.gpus if key in _row_keys(m) or any(k == f"rtx{key}" for k in _row_keys(m))]
    if exact or not loose:
        return exact
    return [m for m in matrix.gpus if any(key in k for k in _row_keys(m))]


def resolve_gpu_name(matrix: Matrix, text: str, loose: bool = True) -> GpuName:
    """The matrix row a typed or reported GPU name means; GpuNameError with the candidates otherwise.
    `loose=False` (names a driver reported) takes exact keys only: 'Quadro RTX 4000' (Turing) must not become
    the 'RTX 4000 Ada' row by containment."""
    key = name_key(text)
    if not key:
        raise GpuNameError(f"{text!r} does not name a GPU")
    found = _candidates(matrix, key, loose)
    if len(found) == 1:
        return GpuName(found[0], _memory(found[0], text))
    if found:
        raise GpuNameError(f"{text!r} is ambiguous: " + ", ".join(m.name for m in found))
    close = difflib.get_close_matches(key, sorted({k for m in matrix.gpus for k in _row_keys(m)}), n=3, cutoff=0.6)
    names = [m.name for m in matrix.gpus if _row_keys(m) & set(close)]
    hint = f"; did you mean {' or '.join(names)}?" if names else " (see 'envcheck matrix show')"
    raise GpuNameError(f"{text!r} is not a GPU the matrix knows{hint}")
