"""Predictions against torch.cuda.max_memory_allocated() on a real GPU (marked gpu: skipped without one).

Needs an interpreter with CUDA torch and transformers: ENVCHECK_TORCH_PYTHON, or this interpreter. A Qwen3-0.6B
shape (tests/assets/plan/Qwen3-0.6B.config.json, random weights) is fine-tuned in fp32 for three AdamW steps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.plan.gpu import gpu_memory
from envcheck.plan.params import load_config
from envcheck.plan.setup import Setup

pytestmark = pytest.mark.gpu
ASSETS = Path(__file__).parent / "assets" / "plan"


@pytest.mark.parametrize("seq_len", [512, 2048])
def test_prediction_within_15_percent_of_max_memory_allocated(tmp_path, seq_len):
    python = os.environ.get("ENVCHECK_TORCH_PYTHON", sys.executable)
    config = ASSETS / "Qwen3-0.6B.config.json"
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(config.read_text())
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"gpu": {"config": str(folder), "seq_len": seq_len, "batch": 1}}))
    result = subprocess.run([python, str(ASSETS / "torch_probe.py"), str(request)], capture_output=True, text=True,
                            timeout=900)
    if result.returncode and "No module named" in result.stderr:
        pytest.skip(f"{python} lacks torch or transformers (set ENVCHECK_TORCH_PYTHON)")
    assert result.returncode == 0, result.stderr[-2000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])["gpu"]
    if "skipped" in measured:
        pytest.skip(measured["skipped"])
    spec = load_config(str(config))
    assert measured["params"] == spec.params
    predicted = gpu_memory(spec, Setup(method="full", precision="fp32", zero=0, seq_len=seq_len, attention="sdpa"))
    # max_memory_allocated has no CUDA context and no allocator waste: compare the allocated part of the plan
    allocated = predicted.weights + predicted.gradients + predicted.optimizer + predicted.activations
    assert allocated == pytest.approx(measured["max_allocated"], rel=0.15)
    assert predicted.total >= measured["max_reserved"] * 0.85
