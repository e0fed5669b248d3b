"""gpus.toml: real NVML / nvidia-smi names resolve to the right row, and rows never shadow one another.

The names in REAL_NAMES were seen in public nvidia-smi / NVML / PyTorch output; each carries the thread it was seen in.
"""

from __future__ import annotations

import pytest

from envcheck.matrix import load_matrix
from envcheck.matrix.query import gpu_model


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


# (name as reported, expected row name, expected compute capability, where the name was seen)
REAL_NAMES = [
    # rows added in data_version 2026.12.01
    ("NVIDIA GeForce RTX 4080", "RTX 4080", "8.9", "https://github.com/OpenCharAI/OpenChar/issues/33"),
    ("NVIDIA GeForce RTX 4080 SUPER", "RTX 4080 SUPER", "8.9", "https://github.com/luolangaga/tubatoolsPlugin/pull/1563"),
    ("NVIDIA L20", "L20", "8.9", "https://github.com/drinkingcoder/FlowFormer-Official/issues/49"),
    ("NVIDIA GB10", "GB10", "12.1", "https://github.com/rossumai/nvgpu/pull/37"),
    ("NVIDIA RTX A5000", "RTX A5000", "8.6", "https://www.cnblogs.com/dreamer-fish/p/19190258"),
    ("NVIDIA RTX A4000", "RTX A4000", "8.6", "https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/692"),
    # rows that already existed
    ("NVIDIA H100 NVL", "H100", "9.0", "https://github.com/NVIDIA/gpu-admin-tools/issues/4"),
    ("NVIDIA H100 80GB HBM3", "H100", "9.0", "https://github.com/google/gvisor/issues/10413"),
    ("NVIDIA B200", "B200", "10.0", "https://github.com/pytorch/test-infra/pull/7631"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell", "12.0",
     "https://github.com/bigstack-oss/cubecos/issues/312"),
    ("NVIDIA RTX A6000", "RTX A6000", "8.6", "https://github.com/exo-explore/exo/pull/315"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "8.9", "https://github.com/exo-explore/exo/pull/315"),
    ("NVIDIA GeForce RTX 5090", "RTX 5090", "12.0", "https://github.com/noonghunna/club-3090/issues/1107"),
    ("NVIDIA GeForce RTX 5080", "RTX 5080", "12.0", "https://github.com/lllyasviel/FramePack/issues/702"),
    ("NVIDIA GeForce RTX 3090", "RTX 3090", "8.6", "https://github.com/noonghunna/club-3090/issues/1128"),
    ("NVIDIA L40", "L40", "8.9", "https://github.com/microsoft/superbenchmark/issues/624"),
]


@pytest.mark.parametrize("name, row, cc, seen_in", REAL_NAMES, ids=[n for n, *_ in REAL_NAMES])
def test_real_names_resolve(matrix, name: str, row: str, cc: str, seen_in: str) -> None:
    found = gpu_model(matrix, name)
    assert found is not None, name
    assert (found.name, found.compute_capability) == (row, cc)


# Names every pre-existing row matched before data_version 2026.12.01 (tests/test_matrix.py and the rows' notes
# use them); the new rows must not take any of them.
EXISTING = [
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA A100 80GB PCIe", "A100"),
    ("NVIDIA A40", "A40"),
    ("NVIDIA A30", "A30"),
    ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA H20", "H20"),
    ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA GB200", "GB200"),
    ("Tesla T4", "T4"),
    ("Tesla V100-SXM2-32GB", "V100"),
    ("Tesla P100-PCIE-16GB", "P100"),
    ("NVIDIA GeForce RTX 5090", "RTX 5090"),
    ("NVIDIA GeForce RTX 5080", "RTX 5080"),
    ("NVIDIA GeForce RTX 3090 Ti", "RTX 3090 Ti"),
    ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
    ("NVIDIA RTX A6000", "RTX A6000"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Blackwell"),
]


@pytest.mark.parametrize("name, row", EXISTING, ids=[n for n, _ in EXISTING])
def test_existing_rows_keep_their_names(matrix, name: str, row: str) -> None:
    found = gpu_model(matrix, name)
    assert found is not None and found.name == row, (name, found)


# Ordering: a longer product name must reach its own row, not the shorter one that is a prefix of it. These names
# are NVIDIA's product names in NVML's "NVIDIA GeForce ..." / "NVIDIA RTX ..." form (not all seen in a public log).
ORDERING = [
    ("NVIDIA GeForce RTX 4080 SUPER", "RTX 4080 SUPER"),
    ("NVIDIA GeForce RTX 4080", "RTX 4080"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", "RTX 4070 Ti SUPER"),
    ("NVIDIA GeForce RTX 4070 Ti", "RTX 4070 Ti"),
    ("NVIDIA GeForce RTX 5070 Ti", "RTX 5070 Ti"),
    ("NVIDIA GeForce RTX 5070", "RTX 5070"),
    ("NVIDIA GeForce RTX 3080 Ti", "RTX 3080 Ti"),
    ("NVIDIA GeForce RTX 3080", "RTX 3080"),
    ("NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada"),
    ("NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada"),
    ("NVIDIA RTX 4000 SFF Ada Generation", "RTX 4000 Ada"),
    ("NVIDIA RTX A4500", "RTX A4500"),
    ("NVIDIA A16", "A16"),
    ("NVIDIA A2", "A2"),
    ("NVIDIA RTX PRO 5000 Blackwell", "RTX PRO 5000 Blackwell"),
    ("NVIDIA RTX PRO 4500 Blackwell", "RTX PRO 4500 Blackwell"),
    ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "RTX PRO 4000 Blackwell"),
]


@pytest.mark.parametrize("name, row", ORDERING, ids=[n for n, _ in ORDERING])
def test_more_specific_rows_come_first(matrix, name: str, row: str) -> None:
    found = gpu_model(matrix, name)
    assert found is not None and found.name == row, (name, found)


def test_names_that_must_not_be_swallowed(matrix) -> None:
    # 'nvidia a2' must not take the RTX A2000; 'nvidia l20' / 'nvidia l4' must not take each other.
    a2000 = gpu_model(matrix, "NVIDIA RTX A2000")
    assert a2000 is None or a2000.name != "A2", a2000
    assert gpu_model(matrix, "NVIDIA L20").name == "L20"
    assert gpu_model(matrix, "NVIDIA L4").name == "L4"
    assert gpu_model(matrix, "NVIDIA GB10").name == "GB10"
    assert gpu_model(matrix, "NVIDIA GB200").name == "GB200"


def test_every_match_string_reaches_its_own_row(matrix) -> None:
    """No earlier row shadows a later one: each match string, read as a name, resolves to the row that owns it."""
    for row in matrix.gpus:
        for m in row.match:
            found = gpu_model(matrix, m)
            assert found is row, (m, row.name, found and found.name)


def test_new_rows_are_complete(matrix) -> None:
    ccs = {c.cc for c in matrix.compute_capabilities}
    for row in matrix.gpus:
        assert row.compute_capability in ccs, row.name
        assert row.source.strip(), row.name
        assert all(m == m.lower() for m in row.match), row.name
        if not row.confirmed:
            assert row.note, row.name
