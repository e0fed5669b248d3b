"""One GPU-name reader for every command: typed shorthands and nvidia-smi's names reach the same matrix row."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

from envcheck.matrix import load_matrix
from envcheck.matrix.gpu_names import GpuNameError, resolve_gpu_name

MATRIX = load_matrix()


@pytest.mark.parametrize(("typed", "row", "memory"), [
    ("4090", "RTX 4090", None), ("rtx4090", "RTX 4090", None), ("rtx 4090", "RTX 4090", None),
    ("RTX-4090", "RTX 4090", None), ("NVIDIA GeForce RTX 4090", "RTX 4090", None), ("3090", "RTX 3090", None),
    ("3090 Ti", "RTX 3090 Ti", None), ("A6000", "RTX A6000", None), ("NVIDIA RTX A6000", "RTX A6000", None),
    ("H100 PCIe", "H100", 80), ("h100", "H100", None), ("NVIDIA H100 80GB HBM3", "H100", 80),
    ("NVIDIA H100 NVL", "H100", 94), ("A100 40GB", "A100", 40), ("NVIDIA A100-SXM4-80GB", "A100", 80),
    ("Tesla V100-SXM2-32GB", "V100", 32), ("T4", "T4", None), ("Tesla T4", "T4", None), ("A10G", "A10G", None),
    ("NVIDIA A10G", "A10G", None), ("A10", "A10", None), ("L4", "L4", None), ("L40S", "L40S", None),
    ("RTX PRO 6000", "RTX PRO 6000 Blackwell", None), ("5090", "RTX 5090", None), ("4080", "RTX 4080", None),
    ("RTX 4080 SUPER", "RTX 4080 SUPER", None), ("L20", "L20", None), ("GB10", "GB10", None),
])
def test_what_people_type_and_what_nvidia_smi_prints(typed: str, row: str, memory: int | None) -> None:
    found = resolve_gpu_name(MATRIX, typed)
    assert (found.model.name, found.memory_gib) == (row, memory)


def test_an_ambiguous_name_lists_the_candidates() -> None:
    with pytest.raises(GpuNameError, match="ambiguous: .*RTX PRO 6000 Blackwell.*RTX 6000 Ada.*RTX A6000"):
        resolve_gpu_name(MATRIX, "6000")


def test_names_a_driver_reports_are_never_guessed_by_containment() -> None:
    """'Quadro RTX 4000' is a Turing card (7.5): it must not become the RTX 4000 Ada row (8.9)."""
    from envcheck.matrix.query import gpu_model

    assert gpu_model(MATRIX, "Quadro RTX 4000") is None
    assert gpu_model(MATRIX, "NVIDIA GeForce RTX 4080").name == "RTX 4080"


def test_an_unknown_name_says_so_and_suggests() -> None:
    with pytest.raises(GpuNameError, match="not a GPU the matrix knows"):
        resolve_gpu_name(MATRIX, "Voodoo 5")


def _envcheck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envcheck", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


@pytest.mark.parametrize("typed", ["4090", "rtx 4090", "H100 PCIe", "A6000"])
def test_every_command_reads_the_same_names(typed: str) -> None:
    resolved = _envcheck("resolve", "--driver", "580.95.05", "--gpu", typed, "--python", "3.11", "--json")
    assert resolved.returncode == 0, resolved.stderr
    row = resolve_gpu_name(MATRIX, typed).model
    assert [g["name"] for g in json.loads(resolved.stdout)["target"]["gpus"]] == [row.name]
    planned = _envcheck("plan", "7B", "--method", "lora", "--gpu", typed, "--host-mem", "64", "--json")
    assert planned.returncode in (0, 1), planned.stderr
    assert row.name in json.dumps(json.loads(planned.stdout))
