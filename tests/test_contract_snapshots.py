"""Checks judge any valid schema-1 snapshot from CONTRACT.md's fields alone; the probe's extra fields refine.

The H100 snapshot is the healthy stack of issue 9 written in CONTRACT.md's shape (toolkits as {path, nvcc_version,
on_path}, no found_via); it once got EC515, EC402 and an EC507 error from an extra-only cap.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path

import pytest
from conftest import ASSETS, assert_valid_snapshot

from envcheck.checks import run_checks
from envcheck.checks.packages import Need, row_needs
from envcheck.matrix import load_matrix
from envcheck.matrix.model import PackageRelease
from envcheck.probes.cuda_home import probe_cuda_home
from envcheck.probes.cuda_toolkit import probe_cuda_toolkits
from envcheck.snapshot import CudaToolkit, Snapshot

H100 = ASSETS / "contract" / "h100x8-570-torch2.7.1-ds0.16.9-jit.json"
MATRIX = load_matrix()


def load(path: Path = H100) -> Snapshot:
    data = json.loads(path.read_text())
    assert_valid_snapshot(data)
    return Snapshot.from_dict(data)


def severe(snapshot: Snapshot) -> list[tuple[str, str]]:
    return [(f.id, f.title) for f in run_checks(snapshot, MATRIX) if f.severity >= 2]


def with_packages(snapshot: Snapshot, packages: dict[str, str], requires: dict[str, tuple[str, ...]] | None = None) -> Snapshot:
    python = dataclasses.replace(snapshot.python, packages={**snapshot.python.packages, **packages},
                                 requires={**snapshot.python.requires, **(requires or {})})
    return dataclasses.replace(snapshot, python=python)


def test_healthy_h100_in_contract_shape_gets_no_error() -> None:
    findings = run_checks(load(), MATRIX)
    assert [(f.id, f.title) for f in findings if f.severity >= 2] == []
    assert not [f for f in findings if f.id in ("EC402", "EC515")]


def test_the_minimal_schema_1_snapshot_gets_no_error() -> None:
    data = {"schema_version": 1, "envcheck_version": "0.1.0", "captured_at": "2026-12-01T00:00:00+00:00"}
    assert_valid_snapshot(data)
    assert severe(Snapshot.from_dict(data)) == []


def test_an_extra_only_cap_is_info_and_names_its_extra() -> None:
    ec507 = [f for f in run_checks(load(), MATRIX) if f.id == "EC507"]
    assert [(f.severity.label, f.title) for f in ec507] == [
        ("info", "transformers 4.52.4's [torch] extra asks torch >=2.1,<2.7, found 2.7.1")]


def test_an_extra_that_an_installed_package_asks_for_raises_a_warning() -> None:
    snapshot = with_packages(load(), {"my-trainer": "1.0"}, {"my-trainer": ("transformers[torch]==4.52.4",)})
    ec507 = [f for f in run_checks(snapshot, MATRIX) if f.id == "EC507"]
    assert [f.severity.label for f in ec507] == ["warning"]
    assert "my-trainer requires transformers[torch]" in ec507[0].detail
    # under a marker that does not hold for this interpreter, the request does not count
    snapshot = with_packages(load(), {"my-trainer": "1.0"},
                             {"my-trainer": ('transformers[torch]==4.52.4; python_version < "3.9"',)})
    assert [f.severity.label for f in run_checks(snapshot, MATRIX) if f.id == "EC507"] == ["info"]


def test_one_fact_gives_one_finding_transformers_runtime_floor() -> None:
    """transformers 5.1 disables PyTorch below 2.4 (KB022); its [torch] extra asks the same floor: say it once."""
    snapshot = with_packages(load(), {"transformers": "5.1.0", "torch": "2.3.1", "huggingface-hub": "1.3.0",
                                      "tokenizers": "0.22.1"})
    snapshot = dataclasses.replace(snapshot, torch=dataclasses.replace(snapshot.torch, version="2.3.1+cu121", cuda="12.1"))
    findings = run_checks(snapshot, MATRIX)
    assert [(f.id, f.severity.label) for f in findings if "KB022" in f.title] == [("EC510", "error")]
    assert not [f for f in findings if f.id == "EC507" and "torch" in f.title]
    # KB025 (pickle checkpoints need torch 2.6) is another fact and stays; it does not silence other torch needs
    assert [f.severity.label for f in findings if "KB025" in f.title] == ["warning"]


def test_matrix_requirement_markers_are_evaluated_for_the_target() -> None:
    row = PackageRelease("pkg", ">=1", {"numpy": '<2; python_version < "3.10"', "python": ">=3.8"}, "test",
                         extras={"torch": {"torch": '>=2.1; sys_platform == "linux"'}})
    old = {"python_version": "3.9", "sys_platform": "linux"}
    new = {"python_version": "3.12", "sys_platform": "linux"}
    assert Need("numpy", "<2", None) in row_needs(row, old)
    assert Need("numpy", "<2", None) not in row_needs(row, new)
    assert Need("torch", ">=2.1", "torch") in row_needs(row, new)
    assert Need("torch", ">=2.1", "torch") not in row_needs(row, {**new, "sys_platform": "win32"})


def test_cuda_home_through_a_link_without_found_via_is_not_called_empty() -> None:
    """CUDA_HOME=/usr/local/cuda (a link) while the toolkit is listed by its real path: the snapshot cannot tell,
    so EC402 does not guess; with the probe's found_via it can."""
    snapshot = load()
    snapshot = dataclasses.replace(snapshot, env={"CUDA_HOME": "/usr/local/cuda"})
    assert not [f for f in run_checks(snapshot, MATRIX) if f.id in ("EC402", "EC515")]
    kit = CudaToolkit("/usr/local/cuda-12.8", "12.8.93", on_path=False, found_via=("/usr/local",))
    probed = dataclasses.replace(snapshot, cuda_toolkits=(kit,))
    assert [f.id for f in run_checks(probed, MATRIX) if f.id == "EC402"] == ["EC402"]
    kit = dataclasses.replace(kit, found_via=("CUDA_HOME", "/usr/local/cuda"))
    assert not [f for f in run_checks(dataclasses.replace(snapshot, cuda_toolkits=(kit,)), MATRIX) if f.id == "EC402"]


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def wrapper_machine(tmp_path: Path) -> tuple[Path, Path]:
    """A real toolkit layout (nvcc answering like CUDA 12.8's, headers, libcudart) and a two-line wrapper `nvcc` in
    <prefix>/bin, as /usr/local/bin/nvcc is on some images."""
    real = tmp_path / "cuda-12.8"
    _executable(real / "bin" / "nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    (real / "include").mkdir()
    (real / "include" / "cuda_runtime.h").write_text("/* header */\n")
    (real / "lib64").mkdir()
    (real / "lib64" / "libcudart.so.12").write_text("")
    prefix = tmp_path / "prefix"
    _executable(prefix / "bin" / "nvcc", f'#!/bin/sh\nexec {real}/bin/nvcc "$@"\n')
    return real, prefix


def _probed(environ: dict[str, str]) -> Snapshot:
    toolkits, _ = probe_cuda_toolkits(environ)
    snapshot = dataclasses.replace(load(), cuda_toolkits=tuple(toolkits), cuda_home=probe_cuda_home(environ),
                                   env={k: v for k, v in environ.items() if k.startswith("CUDA")})
    assert_valid_snapshot(snapshot.to_dict())
    return snapshot


def test_a_wrapper_nvcc_on_path_gives_a_cuda_home_without_headers(wrapper_machine: tuple[Path, Path]) -> None:
    real, prefix = wrapper_machine
    environ = {"PATH": f"{prefix}/bin:/usr/bin:/bin"}
    snapshot = _probed(environ)
    assert snapshot.cuda_home is not None and snapshot.cuda_home.path == str(prefix)
    assert (snapshot.cuda_home.via, snapshot.cuda_home.nvcc, snapshot.cuda_home.headers) == ("PATH", True, False)
    ec516 = [f for f in run_checks(snapshot, MATRIX) if f.id == "EC516"]
    assert len(ec516) == 1 and ec516[0].severity.label == "warning"
    assert "DeepSpeed here has no pre-built ops" in ec516[0].detail
    assert str(prefix) in ec516[0].title and "include/cuda_runtime.h" in ec516[0].title
    # the fix it proposes, applied, clears it and raises nothing new at error or above
    fixed = _probed({**environ, "CUDA_HOME": str(real)})
    assert not [f for f in run_checks(fixed, MATRIX) if f.id == "EC516"]
    assert severe(fixed) == []


def test_a_real_toolkit_on_path_is_a_usable_cuda_home(wrapper_machine: tuple[Path, Path]) -> None:
    real, _prefix = wrapper_machine
    snapshot = _probed({"PATH": f"{real}/bin:/usr/bin:/bin"})
    assert snapshot.cuda_home is not None and (snapshot.cuda_home.headers, snapshot.cuda_home.libraries) == (True, True)
    assert not [f for f in run_checks(snapshot, MATRIX) if f.id in ("EC515", "EC516", "EC402")]
    assert os.path.realpath(snapshot.cuda_toolkits[0].path) == os.path.realpath(real)


# The key paths CONTRACT.md names ("Snapshot JSON (schema_version 1)"); everything else is the probe's refinement.
CONTRACT_KEYS = {
    "host": {"os", "kernel", "arch", "glibc", "mem_total_bytes", "mem_available_bytes", "swap_total_bytes",
             "shm_bytes", "cgroup_mem_limit_bytes", "container"},
    "nvidia": {"driver_version", "cuda_driver_version", "source", "gpus"},
    "gpus": {"index", "name", "compute_capability", "memory_total_bytes", "uuid_hash"},
    "cuda_toolkits": {"path", "nvcc_version", "on_path"},
    "python": {"version", "executable", "prefix", "kind", "packages"},
    "torch": {"version", "cuda", "hip", "git_version"},
    "deepspeed": {"version", "compiled_torch", "compiled_cuda", "installed_ops", "accelerator"},
    "libraries": {"name", "version", "path", "origin"},
}
TOP = {"schema_version", "envcheck_version", "captured_at", "host", "nvidia", "cuda_toolkits", "python", "torch",
       "deepspeed", "libraries", "env", "runtime", "skipped"}


def contract_only(data: dict) -> dict:
    """The snapshot with every field CONTRACT.md does not name removed."""
    out = {key: value for key, value in data.items() if key in TOP}
    for section in ("host", "nvidia", "python", "torch", "deepspeed"):
        if isinstance(out.get(section), dict):
            out[section] = {k: v for k, v in out[section].items() if k in CONTRACT_KEYS[section]}
    if isinstance(out.get("nvidia"), dict):
        out["nvidia"]["gpus"] = [{k: v for k, v in g.items() if k in CONTRACT_KEYS["gpus"]}
                                 for g in out["nvidia"].get("gpus", [])]
    for section in ("cuda_toolkits", "libraries"):
        if isinstance(out.get(section), list):
            out[section] = [{k: v for k, v in item.items() if k in CONTRACT_KEYS[section]} for item in out[section]]
    return out


HEALTHY = sorted((ASSETS / "healthy").glob("*.json")) + [H100]


@pytest.mark.parametrize("path", HEALTHY, ids=[p.stem for p in HEALTHY])
def test_healthy_stacks_stay_healthy_with_only_contract_fields(path: Path) -> None:
    data = contract_only(json.loads(path.read_text()))
    assert_valid_snapshot(data)
    assert severe(Snapshot.from_dict(data)) == []
