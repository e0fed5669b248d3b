"""`envcheck doctor --python OTHER_VENV` on a real venv with a real torch and a real DeepSpeed install.

Building the venv installs torch 2.13.0 (the CPU wheel; about 20 s from a local wheel cache) and DeepSpeed from
source without build isolation (about 15 s). It is marked slow and network (it skips, with the reason, when the
package index is unreachable, and where the packages cannot be installed). Every requirement it installs by name is
pinned, so the venv does not change with what the index serves today.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, assert_valid_snapshot

pytestmark = [pytest.mark.slow, pytest.mark.network]
PINS = (("torch==2.13.0",), ("setuptools==84.2.1", "wheel==0.48.0"), ("--no-build-isolation", "deepspeed==0.19.8"))


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *args],
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def torch_deepspeed_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    python = root / "bin" / "python"
    for args in PINS:
        result = _pip(python, *args)
        if result.returncode != 0:
            pytest.skip(f"cannot install {' '.join(args)}: {result.stderr.strip().splitlines()[-1:]}")
    return python


def _doctor(python: Path, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "envcheck", "doctor", "--python", str(python), "--json", *args],
                            capture_output=True, text=True, timeout=300, cwd=REPO, env=os.environ)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_doctor_describes_the_other_venv_and_deepspeeds_build(torch_deepspeed_venv: Path) -> None:
    report = _doctor(torch_deepspeed_venv, "--no-deep")
    snap = report["snapshot"]
    assert_valid_snapshot(snap)
    assert snap["python"]["prefix"] == str(torch_deepspeed_venv.parent.parent)
    assert snap["python"]["packages"]["torch"].startswith("2.13.0")
    assert snap["python"]["packages"]["deepspeed"] == "0.19.8"
    assert "jsonschema" not in snap["python"]["packages"]  # envcheck's own test venv is not what was probed
    assert snap["torch"]["version"].startswith("2.13.0") and snap["torch"]["cuda"] is None
    assert snap["deepspeed"]["version"] == "0.19.8" and snap["deepspeed"]["compiled_torch"] == "2.13"
    assert snap["deepspeed"]["accelerator"] == "cpu" and snap["runtime"] is None


def test_deep_doctor_imports_the_real_torch_in_a_child(torch_deepspeed_venv: Path) -> None:
    report = _doctor(torch_deepspeed_venv, "--deep")
    torch = report["snapshot"]["runtime"]["torch"]
    assert torch["ok"] and torch["facts"]["version"].startswith("2.13.0")
    assert torch["facts"]["cuda_available"] is False and torch["facts"]["cuda"] is None
    assert not [f for f in report["findings"] if f["id"].startswith("EC31")]
