"""resolve on the issue's targets: the answers come from the bundled matrix, offline, through the real CLI."""

from __future__ import annotations

import json

import pytest

from envcheck.cli import main


def resolve(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["resolve", *flags, "--no-lock", "--json"])  # ranges and choices: the matrix alone, no uv
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_current_driver_on_hopper_gets_the_newest_default_index_stack(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "580.95.05", "--gpu", "H100", "--for", "llamafactory")
    assert code == 0
    assert data["ranges"]["torch"] == "==2.14.*" and data["pins"]["cuda"] == "13.0"
    assert data["ranges"]["llamafactory"] == "==0.9.5" and data["pins"]["python"] == "3.11"
    assert data["torch_index"] == "cu130" and data["base_image"].startswith("nvidia/cuda:13.0")
    assert {r["package"] for r in data["reasons"]} >= {"python", "torch", "cuda", "torch_index", "deepspeed", "base_image"}


def test_535_driver_with_h100_stays_at_a_cuda_the_driver_supports(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "535.104.05", "--gpu", "H100", "--for", "llamafactory")
    assert code == 0
    assert data["pins"]["cuda"] == "12.1" and data["ranges"]["torch"] == "==2.5.*"
    assert data["torch_index"] == "cu121" and not data["default_index"]


def test_470_driver_falls_back_to_minor_version_compatibility_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "470.256.02", "--gpu", "A100")
    assert code == 0
    assert data["pins"]["cuda"] == "11.8"
    assert any("minor-version compatibility" in w for w in data["warnings"])


def test_v100_on_a_cuda13_driver_gets_a_cuda12_build_that_still_has_sm70(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "580.95.05", "--gpu", "V100", "--for", "llamafactory")
    assert code == 0
    assert data["pins"]["cuda"].startswith("12.")  # CUDA 13 builds dropped Volta
    assert data["torch_index"] in ("cu126", "cu128")


def test_rtx_5090_gets_a_build_with_sm120(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "580.95.05", "--gpu", "RTX 5090")
    assert code == 0
    line = tuple(int(x) for x in data["ranges"]["torch"].removeprefix("==").removesuffix(".*").split("."))
    assert line >= (2, 7)  # 12.8+ builds of 2.7 and later carry sm_120
    assert float(data["pins"]["cuda"]) >= 12.8


def test_python_39_gets_the_newest_stack_that_still_supports_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "580.95.05", "--gpu", "H100", "--python", "3.9", "--for", "llamafactory")
    assert code == 0
    assert data["ranges"]["torch"] == "==2.8.*"
    assert data["ranges"]["llamafactory"] == "==0.9.3"  # 0.9.4+ need Python 3.11


def test_flash_attn_on_t4_is_impossible_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["resolve", "--driver", "580.95.05", "--gpu", "T4", "--with", "flash-attn"])
    err = capsys.readouterr().err
    assert code == 1
    assert "flash-attn" in err and "compute capability >=8.0" in err and "7.5" in err


def test_a_torch_pin_is_honored(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = resolve(capsys, "--driver", "535.104.05", "--gpu", "H100", "--torch", "2.4")
    assert code == 0 and data["ranges"]["torch"] == "==2.4.*" and data["pins"]["cuda"] == "12.1"


def test_a_cuda_pin_the_driver_cannot_run_is_refused_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["resolve", "--driver", "535.104.05", "--gpu", "H100", "--cuda", "13.0"])
    err = capsys.readouterr().err
    assert code == 1 and "too old for CUDA 13.0" in err


def test_no_driver_is_impossible(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    snapshot = tmp_path / "s.json"
    snapshot.write_text(json.dumps({"schema_version": 1, "envcheck_version": "0", "captured_at": "x"}))
    assert main(["resolve", "--snapshot", str(snapshot)]) == 1
    assert "no NVIDIA driver" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--gpu", "Z9000", "--driver", "580"], ["--driver", "abc", "--gpu", "H100"],
                                   ["--driver", "580", "--gpu", "H100", "--with", "flash attn!"],
                                   ["--driver", "580", "--gpu", "H100", "--for", "vllm"]])
def test_bad_input_is_a_usage_error(capsys: pytest.CaptureFixture[str], flags: list[str]) -> None:
    assert main(["resolve", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("envcheck: error:") and "Traceback" not in err


def test_text_output_explains_every_choice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "--driver", "580.95.05", "--gpu", "H100", "--with", "deepspeed", "--no-lock"]) == 0
    out = capsys.readouterr().out
    for word in ("python", "torch", "cuda", "torch_index", "deepspeed", "base_image"):
        assert f"  {word}" in out
