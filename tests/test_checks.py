"""Checks are pure functions of a snapshot: each test builds the snapshot a broken (or healthy) machine yields."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ASSETS

from envcheck.checks import run_checks as _run_checks
from envcheck.checks import selected
from envcheck.checks.model import Severity
from envcheck.matrix import load_matrix
from envcheck.probes.python_env import read_deepspeed_info
from envcheck.snapshot import (
    CudaToolkit, DeepSpeed, Duplicate, Host, PythonEnv, RuntimeResult, Skipped, Snapshot, Torch,
)

MIB = 1024**2
GIB = 1024**3
MARKERS = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
           "os_name": "posix", "platform_python_implementation": "CPython"}
HEALTHY_HOST = Host(os="Ubuntu 22.04.4 LTS", kernel="5.15.0", arch="x86_64", glibc="2.35", cpu_count=96,
                    mem_total_bytes=2015 * GIB, mem_available_bytes=1900 * GIB, swap_total_bytes=8 * GIB,
                    shm_bytes=1007 * GIB, cgroup_version=2, core_ulimit="unlimited", core_pattern="core",
                    overcommit_memory=0)


MATRIX = load_matrix()


def run_checks(snap: Snapshot, _matrix: object = None, **kwargs):  # type: ignore[no-untyped-def]
    """The matrix-free checks of this file run against the bundled matrix, as the doctor runs them."""
    return _run_checks(snap, MATRIX, **kwargs)


def snapshot(**changes) -> Snapshot:  # type: ignore[no-untyped-def]
    """A healthy CPU host with an empty venv, as the probes would record it; `changes` break it."""
    base = Snapshot(schema_version=1, envcheck_version="0.1.0", captured_at="2026-11-29T00:00:00+00:00",
                    host=HEALTHY_HOST, python=env({}), skipped=(Skipped("nvidia", "no NVIDIA driver"),))
    return dataclasses.replace(base, **changes)


def env(packages: dict[str, str], requires: dict[str, tuple[str, ...]] | None = None, **extra) -> PythonEnv:  # type: ignore[no-untyped-def]
    return PythonEnv("3.11.7", "/opt/venv/bin/python", "/opt/venv", "venv", packages, requires or {},
                     marker_env=MARKERS, **extra)


def ids(snap: Snapshot, **kwargs) -> dict[str, Severity]:  # type: ignore[no-untyped-def]
    return {f.id: f.severity for f in run_checks(snap, None, **kwargs)}


def only(snap: Snapshot, finding_id: str):  # type: ignore[no-untyped-def]
    (found,) = [f for f in run_checks(snap, None) if f.id == finding_id]
    return found


def test_healthy_machine_has_no_findings() -> None:
    assert ids(snapshot()) == {}


@pytest.mark.parametrize("shm, severity", [(64 * MIB, Severity.ERROR), (768 * MIB, Severity.WARNING)])
def test_small_shm(shm: int, severity: Severity) -> None:
    snap = snapshot(host=dataclasses.replace(HEALTHY_HOST, shm_bytes=shm, container="docker"))
    finding = only(snap, "EC101")
    assert finding.severity == severity and finding.category == "shm_too_small"
    assert any("--ipc=host" in c for fix in finding.fixes for c in fix.commands)


def test_shm_of_one_gib_is_fine() -> None:
    assert "EC101" not in ids(snapshot(host=dataclasses.replace(HEALTHY_HOST, shm_bytes=GIB)))


def test_no_swap_and_little_headroom_against_the_cgroup_limit() -> None:
    host = dataclasses.replace(HEALTHY_HOST, swap_total_bytes=0, cgroup_mem_limit_bytes=64 * GIB,
                               mem_available_bytes=1900 * GIB)
    assert "EC102" not in ids(snapshot(host=host))  # the cgroup is small but untouched: headroom is the limit
    host = dataclasses.replace(host, mem_available_bytes=10 * GIB)
    finding = only(snapshot(host=host), "EC102")
    assert finding.category == "host_oom" and "64.0 GiB" in finding.title
    assert only(snapshot(host=host), "EC103").severity == Severity.INFO


def test_core_dumps_disabled_is_info() -> None:
    finding = only(snapshot(host=dataclasses.replace(HEALTHY_HOST, core_ulimit="0")), "EC104")
    assert finding.severity == Severity.INFO and finding.fixes[0].commands == ("ulimit -c unlimited",)


def test_vllm_pinning_another_torch_is_an_abi_error() -> None:
    python = env({"torch": "2.5.1+cu124", "vllm": "0.6.3", "transformers": "4.46.0", "tokenizers": "0.19.1"},
                 {"vllm": ("torch==2.4.0", "transformers>=4.45.2"),
                  "transformers": ("tokenizers<0.21,>=0.20",)})
    found = {f.id: f for f in run_checks(snapshot(python=python), None)}
    assert found["EC203"].severity == Severity.ERROR and found["EC203"].category == "segfault_abi_mismatch"
    assert "torch ==2.4.0" in found["EC203"].title and "2.5.1+cu124" in found["EC203"].title
    assert found["EC201"].severity == Severity.WARNING and "tokenizers" in found["EC201"].title


def test_requirement_markers_are_judged_for_the_probed_interpreter() -> None:
    python = env({"pytest": "8.0.0"}, {"pytest": ('tomli>=1; python_version < "3.11"', 'colorama; sys_platform == "win32"',
                                                  "missing-dep>=1")})
    found = [f for f in run_checks(snapshot(python=python), None) if f.id.startswith("EC20")]
    assert [(f.id, f.title) for f in found] == [("EC202", "pytest 8.0.0 requires missing-dep>=1, which is not installed")]


def test_local_version_labels_satisfy_plain_pins() -> None:
    python = env({"torch": "2.4.0+cu121", "xformers": "0.0.27.post2"}, {"xformers": ("torch==2.4.0",)})
    assert ids(snapshot(python=python)) == {}


def test_duplicates_and_broken_metadata() -> None:
    python = env({"transformers": "4.45.2"}, duplicates=(Duplicate("transformers", ("4.45.2", "4.38.2"), ("/a", "/b")),),
                 broken=("/opt/venv/lib/python3.11/site-packages/x-1.0.dist-info: metadata has no Version",))
    found = ids(snapshot(python=python))
    assert found == {"EC204": Severity.WARNING, "EC205": Severity.WARNING}


def test_deepspeed_prebuilt_ops_for_another_torch_are_an_error() -> None:
    ds = DeepSpeed(version="0.14.4", compiled_torch="2.3", compiled_cuda="12.1", installed_ops=("cpu_adam", "fused_adam"))
    snap = snapshot(deepspeed=ds, torch=Torch(version="2.5.1+cu124", cuda="12.4"))
    found = {f.id: f for f in run_checks(snap, None)}
    assert found["EC301"].severity == Severity.ERROR and found["EC302"].severity == Severity.ERROR
    assert found["EC301"].category == "segfault_abi_mismatch"
    assert "DS_BUILD_OPS=1" in found["EC301"].fixes[0].commands[0] and "0.14.4" in found["EC301"].fixes[0].commands[0]


def test_deepspeed_jit_only_install_mismatch_is_info() -> None:
    """A real install record: DeepSpeed 0.16.3 with no pre-built ops, installed against torch 2.3 / CUDA 12.4."""
    ds = read_deepspeed_info(str(ASSETS / "nvidia" / "ds-git_version_info_installed-1.py.txt"))
    snap = snapshot(deepspeed=ds, torch=Torch(version="2.5.1+cu124", cuda="12.4"))
    assert ids(snap) == {"EC301": Severity.INFO}


def test_deepspeed_matching_build_is_silent() -> None:
    ds = read_deepspeed_info(str(ASSETS / "nvidia" / "ds-git_version_info_installed-1.py.txt"))
    assert ids(snapshot(deepspeed=ds, torch=Torch(version="2.3.1+cu124", cuda="12.4"))) == {}


@pytest.mark.parametrize("result, finding_id, severity, category", [
    (RuntimeResult(False, -11, "SIGSEGV", "Fatal Python error: Segmentation fault"), "EC310", Severity.FATAL,
     "segfault_abi_mismatch"),
    (RuntimeResult(False, 1, None, "ImportError: /x/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"),
     "EC311", Severity.ERROR, "segfault_abi_mismatch"),
    (RuntimeResult(False, 1, None, "ImportError: libcudart.so.11.0: cannot open shared object file: No such file"),
     "EC312", Severity.ERROR, "missing_cuda_library"),
    (RuntimeResult(False, None, None, "did not finish within 60 s", timed_out=True), "EC313", Severity.ERROR, "other"),
    (RuntimeResult(False, 1, None, "RuntimeError: something else"), "EC314", Severity.ERROR, "other"),
])
def test_runtime_failures(result: RuntimeResult, finding_id: str, severity: Severity, category: str) -> None:
    snap = snapshot(runtime={"flash_attn_2_cuda": result, "torch": RuntimeResult(True, 0)})
    finding = only(snap, finding_id)
    assert (finding.severity, finding.category) == (severity, category)
    assert "flash_attn_2_cuda" in finding.title


def test_torch_itself_segfaulting_is_not_blamed_on_an_extension() -> None:
    snap = snapshot(runtime={"torch": RuntimeResult(False, -11, "SIGSEGV", None)})
    assert only(snap, "EC310").category == "segfault_other"


def _kit(path: str, version: str, via: tuple[str, ...], first: bool = False) -> CudaToolkit:
    return CudaToolkit(path, version, on_path="PATH" in via, first_on_path=first, found_via=via,
                       nvcc_path=f"{path}/bin/nvcc")


def test_nvcc_on_path_differs_from_cuda_home() -> None:
    kits = (_kit("/usr/local/cuda-11.8", "11.8.89", ("PATH",), first=True),
            _kit("/usr/local/cuda-12.4", "12.4.131", ("CUDA_HOME",)))
    finding = only(snapshot(cuda_toolkits=kits, env={"CUDA_HOME": "/usr/local/cuda-12.4"}), "EC401")
    assert finding.severity == Severity.WARNING and finding.category == "cuda_toolkit_mismatch"
    same = (_kit("/usr/local/cuda-12.4", "12.4.131", ("PATH",), first=True),
            _kit("/opt/cuda-12.4", "12.4.99", ("CUDA_HOME",)))
    assert only(snapshot(cuda_toolkits=same, env={"CUDA_HOME": "/opt/cuda-12.4"}), "EC401").severity == Severity.INFO
    both = (_kit("/usr/local/cuda-12.4", "12.4.131", ("PATH", "CUDA_HOME"), first=True),)
    assert ids(snapshot(cuda_toolkits=both, env={"CUDA_HOME": "/usr/local/cuda-12.4"})) == {}


def test_cuda_home_without_nvcc() -> None:
    assert only(snapshot(env={"CUDA_HOME": "/usr/local/cuda"}), "EC402").severity == Severity.WARNING


def test_select_and_ignore_by_prefix() -> None:
    host = dataclasses.replace(HEALTHY_HOST, shm_bytes=64 * MIB, core_ulimit="0")
    snap = snapshot(host=host)
    assert set(ids(snap)) == {"EC101", "EC104"}
    assert set(ids(snap, select=("EC104",))) == {"EC104"}
    assert set(ids(snap, ignore=("EC1",))) == set()
    assert set(ids(snap, select=("EC1",), ignore=("EC104",))) == {"EC101"}
    assert set(ids(snap, select=("EC104",), ignore=("EC1",))) == {"EC104"}  # the longer prefix wins


def test_selection_rule() -> None:
    assert selected("EC101", (), ())
    assert not selected("EC101", ("EC2",), ())
    assert not selected("EC101", (), ("EC10",))
    assert selected("EC101", ("EC101",), ("EC1",))


def test_a_crashing_check_becomes_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    from envcheck import checks

    checks._load_check_modules()

    def broken(_snapshot, _matrix):  # type: ignore[no-untyped-def]
        raise KeyError("boom")

    monkeypatch.setattr(checks, "REGISTRY", [checks.Check("test.broken", ("EC999",), broken), *checks.REGISTRY])
    found = run_checks(snapshot(host=dataclasses.replace(HEALTHY_HOST, core_ulimit="0")), None)
    assert [f.id for f in found] == ["EC900", "EC104"]
    assert "test.broken" in found[0].title


def test_findings_are_sorted_by_severity_then_id() -> None:
    host = dataclasses.replace(HEALTHY_HOST, shm_bytes=64 * MIB, core_ulimit="0", swap_total_bytes=0,
                               mem_available_bytes=GIB)
    snap = snapshot(host=host, runtime={"torch": RuntimeResult(False, -11, "SIGSEGV", None)})
    assert [f.id for f in run_checks(snap, None)] == ["EC310", "EC101", "EC102", "EC104"]
