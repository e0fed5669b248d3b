"""`envcheck plan` as users and scripts meet it: exit codes, JSON, text, the DeepSpeed file, bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck import cli

ASSETS = Path(__file__).parent / "assets" / "plan"
REPO = Path(__file__).parent.parent
LLAMA_8B = str(ASSETS / "Llama-3.1-8B.config.json")
HAS_GPU = shutil.which("nvidia-smi") is not None and os.path.exists("/proc/driver/nvidia/version")


def plan(capsys, *args: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_plan_that_fits(capsys):
    code, out, err = plan(capsys, LLAMA_8B, "--method", "qlora", "--gpu", "RTX 4090", "--host-mem", "64", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["fits"] is True
    assert data["model"]["params"] == 8_030_261_248
    assert data["config"]["method"] == "qlora" and data["config"]["zero"] == 0
    assert data["hardware"]["gpu_bytes"] == 24 * 2**30
    assert data["gpu_bytes_per_device"]["total"] < 24 * 2**30


def test_plan_that_does_not_fit_exits_1_with_advice(capsys):
    code, out, _ = plan(capsys, "70B", "--method", "full", "--gpus", "1", "--gpu-mem", "24", "--host-mem", "64")
    assert code == 1
    assert "DOES NOT FIT" in out and "advice" in out


def test_text_table_lists_components_and_phases(capsys):
    code, out, _ = plan(capsys, LLAMA_8B, "--method", "full", "--gpus", "8", "--gpu", "H100 80GB",
                        "--host-mem", "1024")
    assert code == 0
    for word in ("weights", "gradients", "optimizer states", "activations", "logits", "load", "steady state",
                 "checkpoint save", "resume", "assumptions", "ZeRO-2"):
        assert word in out


def test_emit_ds_config_never_overwrites_without_force(capsys, tmp_path):
    target = tmp_path / "ds.json"
    args = ["13B", "--method", "full", "--gpus", "8", "--gpu-mem", "80", "--host-mem", "1024", "--json"]
    code, out, err = plan(capsys, *args, "--emit-ds-config", str(target))
    assert code == 0, err
    written = json.loads(target.read_text())
    assert written == json.loads(out)["deepspeed_config"]
    assert written["zero_optimization"]["stage"] == 2
    target.write_text("keep me")
    code, out, err = plan(capsys, *args, "--emit-ds-config", str(target))
    assert code == 2 and "exists" in err and out == ""
    assert target.read_text() == "keep me"
    code, _, _ = plan(capsys, *args, "--emit-ds-config", str(target), "--force")
    assert code == 0 and json.loads(target.read_text()) == written


@pytest.mark.parametrize("args, message", [
    (["7B", "--gpu-mem", "80", "--zero", "2", "--offload", "all"], "needs ZeRO-3"),
    (["7B", "--gpu-mem", "80", "--zero", "0", "--offload", "optimizer"], "needs ZeRO 1, 2 or 3"),
    (["7B", "--gpu", "A100"], "40, 80 GiB"),
    (["7B", "--gpu", "Voodoo 5"], "is not a GPU the matrix knows"),
    (["7B", "--gpu-mem", "-1"], "positive"),
    (["nonsense", "--gpu-mem", "80"], "neither a parameter count"),
    (["7B", "--gpu-mem", "80", "--lora-targets", "w_nothing"], "matches no linear layer"),
    (["7B", "--gpu-mem", "80", "--method", "full", "--lora-targets", "qv"], "applies to --method lora"),
    (["7B", "--gpu-mem", "80", "--gpus", "0"], "at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = plan(capsys, *args)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU path")
def test_without_a_gpu_here_a_gpu_size_is_required_but_host_comes_from_this_machine(capsys):
    code, _, err = plan(capsys, "7B")
    assert code == 2 and "no NVIDIA GPU found" in err
    code, out, err = plan(capsys, "7B", "--gpu-mem", "80", "--json")
    assert code in (0, 1), err
    host = json.loads(out)["hardware"]
    assert host["host_source"].startswith("this machine") and host["host_bytes"] > 0


def test_console_entry_point_runs_plan():
    result = subprocess.run([sys.executable, "-m", "envcheck", "plan", "8.03e9", "--gpu-mem", "24", "--host-mem", "64",
                             "--json"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode in (0, 1), result.stderr
    assert json.loads(result.stdout)["model"]["params"] == 8_030_000_000
    help_text = subprocess.run([sys.executable, "-m", "envcheck", "plan", "--help"], capture_output=True, text=True,
                               cwd=REPO, timeout=60)
    assert help_text.returncode == 0 and "--emit-ds-config" in help_text.stdout
