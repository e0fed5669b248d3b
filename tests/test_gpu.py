"""Run only on a machine with an NVIDIA GPU and driver (the `gpu` marker; skipped elsewhere)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, assert_valid_snapshot

pytestmark = pytest.mark.gpu


def test_probe_reads_the_driver_and_every_gpu_through_nvml() -> None:
    result = subprocess.run([sys.executable, "-m", "envcheck", "probe", "--no-deep"], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    snap = json.loads(result.stdout)
    assert_valid_snapshot(snap)
    nvidia = snap["nvidia"]
    assert nvidia["source"] == "nvml" and nvidia["driver_version"] and nvidia["cuda_driver_version"]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
    assert len(nvidia["gpus"]) == len(smi)
    for gpu, line in zip(nvidia["gpus"], smi):
        index, name, cc = (part.strip() for part in line.split(","))
        assert (str(gpu["index"]), gpu["name"], gpu["compute_capability"]) == (index, name, cc)
        assert gpu["memory_total_bytes"] > 0 and len(gpu["uuid_hash"]) == 12


def test_smi_fallback_agrees_with_nvml() -> None:
    from envcheck.probes import nvidia

    via_nvml, reason = nvidia.probe_nvml()
    via_smi, smi_reason = nvidia.probe_smi()
    assert reason is None and smi_reason is None
    assert via_nvml.driver_version == via_smi.driver_version
    assert [(g.name, g.compute_capability) for g in via_nvml.gpus] == [(g.name, g.compute_capability) for g in via_smi.gpus]
