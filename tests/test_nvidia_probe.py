"""Driver and GPU probing against recorded real nvidia-smi and /proc outputs, a hanging nvidia-smi, and no NVML."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import ASSETS, FakeEnv

from envcheck.probes import nvidia

SMI = ASSETS / "nvidia"


def fake_smi(tmp_path: Path, table: str | None, csv: str | None, hang: bool = False, fail: str | None = None) -> str:
    """An nvidia-smi that prints recorded output: the CSV for --query-gpu, the table otherwise."""
    script = tmp_path / "nvidia-smi"
    if hang:
        body = "sleep 30\n"
    elif fail:
        body = f"cat '{SMI / fail}'\nexit 9\n"
    else:
        body = (f'case "$1" in --query-gpu=*) cat "{SMI / csv}" ;; *) cat "{SMI / table}" ;; esac\n')
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def test_csv_with_header_is_read_by_column_name() -> None:
    driver, gpus = nvidia.parse_smi_csv((SMI / "smi-csv-titanv-rtx5880ada.txt").read_text())
    assert driver == "570.86.15"
    assert [(g.index, g.name, g.compute_capability) for g in gpus] == [
        (0, "NVIDIA TITAN V", "7.0"), (1, "NVIDIA RTX 5880 Ada Generation", "8.9")]
    assert all(g.memory_total_bytes is None for g in gpus)  # that query had no memory.total


def test_wide_csv_with_mig_and_units() -> None:
    driver, (gpu,) = nvidia.parse_smi_csv((SMI / "smi-csv-h100-mig.txt").read_text())
    assert driver == "590.48.01"
    assert gpu.name.startswith("NVIDIA H100") and gpu.compute_capability == "9.0"
    assert gpu.mig_mode == "enabled"
    assert gpu.memory_total_bytes is not None and gpu.memory_total_bytes > 79 * 1024**3
    assert gpu.uuid_hash is not None and len(gpu.uuid_hash) == 12


def test_not_applicable_values_are_none() -> None:
    _, (gpu,) = nvidia.parse_smi_csv((SMI / "smi-csv-l40s.txt").read_text())
    assert gpu.name == "NVIDIA L40S" and gpu.mig_mode is None


@pytest.mark.parametrize("name, driver, cuda", [
    ("smi-table-h100-590.48.01.txt", "590.48.01", "13.1"),
    ("smi-table-h100x8-565.57.01.txt", "565.57.01", "12.7"),
    ("smi-table-rtx4090x8-550.127.05.txt", "550.127.05", "12.4"),
    ("smi-table-v100-525.105.17.txt", "525.105.17", "12.0"),
    ("smi-table-rtxpro6000blackwell-580.95.05.txt", "580.95.05", "13.0"),
    ("smi-table-rtx2080super-610.57.04.txt", "610.57.04", "13.3"),  # 610 renamed the fields KMD / CUDA UMD
])
def test_table_header_gives_driver_and_cuda(name: str, driver: str, cuda: str) -> None:
    assert nvidia.parse_smi_table((SMI / name).read_text()) == (driver, cuda)


@pytest.mark.parametrize("name, driver", [
    ("proc-version-580.95.05-open.txt", "580.95.05"),
    ("proc-version-565.57.01-open.txt", "565.57.01"),
    ("proc-version-580.173.02.txt", "580.173.02"),
    ("proc-version-384.98.txt", "384.98"),
])
def test_proc_version(name: str, driver: str) -> None:
    assert nvidia.parse_proc_version((SMI / name).read_text()) == driver


def test_smi_probe_end_to_end(tmp_path: Path) -> None:
    smi = fake_smi(tmp_path, "smi-table-h100-mig-590.48.01.txt", "smi-csv-h100-mig.txt")
    found, reason = nvidia.probe_smi(smi)
    assert reason is None
    assert (found.source, found.driver_version, found.cuda_driver_version) == ("nvidia-smi", "590.48.01", "13.1")
    assert len(found.gpus) == 1


def test_hanging_smi_costs_at_most_the_timeout(tmp_path: Path) -> None:
    smi = fake_smi(tmp_path, None, None, hang=True)
    started = time.monotonic()
    found, reason = nvidia.probe_smi(smi, timeout=1.0)
    assert time.monotonic() - started < 5
    assert found is None and "did not finish" in reason


def test_failing_smi_is_reported_with_its_message(tmp_path: Path) -> None:
    smi = fake_smi(tmp_path, None, None, fail="smi-fail-version-mismatch-nvml580.178.txt")
    found, reason = nvidia.probe_smi(smi)
    assert found is None
    assert "exited with 9" in reason and "580.178" in reason


def test_fallback_chain_records_every_failed_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc_root = tmp_path / "root"
    (proc_root / "proc/driver/nvidia/gpus/0000:01:00.0").mkdir(parents=True)
    (proc_root / "proc/driver/nvidia/version").write_text((SMI / "proc-version-580.95.05-open.txt").read_text())
    (proc_root / "proc/driver/nvidia/gpus/0000:01:00.0/information").write_text(
        "Model: \t\t NVIDIA RTX PRO 6000 Blackwell Workstation Edition\nIRQ:   \t\t 180\n")
    monkeypatch.setattr(nvidia, "probe_nvml", lambda: (None, "nvmlInit failed: NVML Shared Library Not Found"))
    found, skipped = nvidia.probe_nvidia(smi=str(tmp_path / "missing-nvidia-smi"), root=str(proc_root))
    assert found.source == "proc" and found.driver_version == "580.95.05"
    assert found.gpus[0].name == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    assert [s.probe for s in skipped] == ["nvidia.nvml", "nvidia.nvidia-smi"]
    assert "not found" in skipped[1].reason


def test_nvml_absent_here_is_a_reason() -> None:
    """This machine has no NVIDIA driver: the real NVML binding must fail cleanly in its child."""
    found, reason = nvidia.probe_nvml()
    assert found is None
    assert "NVML" in reason


def test_nvml_binding_missing_in_the_interpreter(fake_env: FakeEnv) -> None:
    found, reason = nvidia.probe_nvml(python=str(fake_env.python))
    assert found is None and "NVML binding not importable" in reason


def test_nvml_answers_are_read(fake_env: FakeEnv) -> None:
    """NVML cannot run here: a stand-in pynvml module answers with an H100's values (as in the recorded CSV)."""
    (fake_env.site / "pynvml.py").write_text(
        "class _Mem:\n    total = 85520809984\n"
        "def nvmlInit(): pass\n"
        "def nvmlShutdown(): pass\n"
        "def nvmlSystemGetDriverVersion(): return '590.48.01'\n"
        "def nvmlSystemGetCudaDriverVersion_v2(): return 13010\n"
        "def nvmlDeviceGetCount(): return 2\n"
        "def nvmlDeviceGetHandleByIndex(i): return i\n"
        "def nvmlDeviceGetName(h): return b'NVIDIA H100 80GB HBM3'\n"
        "def nvmlDeviceGetCudaComputeCapability(h): return (9, 0)\n"
        "def nvmlDeviceGetMemoryInfo(h): return _Mem()\n"
        "def nvmlDeviceGetUUID(h): return 'GPU-%08d-0000-0000-0000-000000000000' % h\n"
        "def nvmlDeviceGetMigMode(h):\n    raise RuntimeError('Not Supported')\n")
    found, reason = nvidia.probe_nvml(python=str(fake_env.python))
    assert reason is None
    assert (found.source, found.driver_version, found.cuda_driver_version) == ("nvml", "590.48.01", "13.1")
    assert [g.compute_capability for g in found.gpus] == ["9.0", "9.0"]
    assert found.gpus[0].name == "NVIDIA H100 80GB HBM3" and found.gpus[0].mig_mode is None
    assert found.gpus[0].uuid_hash != found.gpus[1].uuid_hash
    assert "GPU-" not in repr(found)  # the UUID itself never leaves the probe


def test_no_driver_at_all_skips_without_spawning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run():  # type: ignore[no-untyped-def]
        raise AssertionError("NVML child started on a machine without a driver")

    monkeypatch.setattr(nvidia, "probe_nvml", must_not_run)
    found, skipped = nvidia.probe_nvidia(root=str(tmp_path))
    assert found is None and [s.probe for s in skipped] == ["nvidia"]
    assert "no NVIDIA driver" in skipped[0].reason


def test_wsl_device_node_counts_as_a_driver(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "dxg").write_text("")
    assert nvidia.driver_present(str(tmp_path))
