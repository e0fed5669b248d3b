"""Matrix facts corrected after the 2026-12-01 audit (issue 9, item 8); each test fails if its fact is reverted.

The sources are in the rows' `source` keys; the tests read the bundled data through matrix.query.
"""

from __future__ import annotations

from envcheck.matrix import load_matrix, query

MATRIX = load_matrix()


def test_vllm_0_21_0_is_covered_with_the_0_20_pins() -> None:
    """vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl pins torch==2.11.0 and flashinfer-python==0.6.8.post1."""
    (row,) = query.package_releases(MATRIX, "vllm", "0.21.0")
    assert row.requires["torch"] == "==2.11.0"
    assert row.requires["flashinfer-python"] == "==0.6.8.post1"
    assert query.satisfies("3.14.0", row.requires["python"]) and not query.satisfies("3.15.0", row.requires["python"])
    assert "wheel metadata of vllm==0.21.0" in row.source
    assert "no Linux x86_64 wheel" not in (row.note or "")


def test_kb026_ends_before_deepspeed_0_16_and_cites_the_fix() -> None:
    (entry,) = [k for k in MATRIX.known_bad if k.id == "KB026"]
    assert query.satisfies("0.15.4", entry.when["deepspeed"])
    assert not query.satisfies("0.16.0", entry.when["deepspeed"])
    assert "https://github.com/deepspeedai/DeepSpeed/pull/6751" in entry.source
    assert entry.confirmed


def test_kb036_is_unconfirmed_after_the_retraction() -> None:
    """NVIDIA/nccl#2167: the reporter retracted 'NCCL_NVLS_ENABLE=0 fixes it' (2026-05-10)."""
    (entry,) = [k for k in MATRIX.known_bad if k.id == "KB036"]
    assert not entry.confirmed
    assert entry.severity in ("info", "warning")
    assert "retracted" in (entry.note or "")


def test_triton_pins_of_the_x_y_0_torch_wheels_are_recorded() -> None:
    """The rows keep the x.y.1 pin; the .0 wheels pin another triton (wheel metadata of torch 2.3.0, 2.7.0, 2.9.0
    and 2.12.0)."""
    pins = (("2.3.1", "12.1", "2.3.1", "2.3.0"), ("2.7.1", "12.6", "3.3.1", "3.3.0"),
            ("2.9.1", "12.8", "3.5.1", "3.5.0"), ("2.12.1", "13.0", "3.7.1", "3.7.0"))
    for torch, cuda, patch1, patch0 in pins:
        build = query.torch_build(MATRIX, torch, cuda)
        assert build is not None and build.triton == patch1
        release0 = torch.rsplit(".", 1)[0] + ".0"
        assert f"torch {release0} pins triton=={patch0}" in (build.note or "")
        assert f"wheel metadata of torch=={release0}" in build.source


def test_flash_attn_2_7_4_has_no_torch_2_1_wheel() -> None:
    """v2.7.4's publish.yml listed torch 2.1.2, but v2.7.4 does not compile against torch 2.1
    (Dao-AILab/flash-attention#1498); 2.7.4.post1 dropped it. The audit's claim of torch 2.1 wheels was not applied."""
    for version in ("2.7.4", "2.7.4.post1"):
        (row,) = query.package_releases(MATRIX, "flash-attn", version)
        assert not query.satisfies("2.1.2", row.requires["torch"])
        assert query.satisfies("2.2.2", row.requires["torch"]) and query.satisfies("2.6.0", row.requires["torch"])
        assert "https://github.com/Dao-AILab/flash-attention/issues/1498" in row.source
