"""Whole snapshots of realistic broken (and healthy) machines, judged through `envcheck doctor --snapshot --json`.

GPU names, driver versions and CUDA versions are taken from recorded real nvidia-smi outputs in
tests/assets/nvidia (see PROVENANCE.md) where one exists; the broken software stacks are the common ones from the
issue tracker of each project.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import assert_valid_snapshot

from envcheck import cli
from envcheck.snapshot import (
    CudaToolkit, DeepSpeed, Gpu, Host, Library, Nvidia, PythonEnv, RuntimeResult, Skipped, Snapshot, Torch,
)

GIB = 1024**3
MARKERS = {"python_version": "3.11", "python_full_version": "3.11.9", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
           "os_name": "posix", "platform_python_implementation": "CPython"}
HOST = Host(os="Ubuntu 22.04.4 LTS", kernel="5.15.0-113-generic", arch="x86_64", glibc="2.35", cpu_count=192,
            mem_total_bytes=2015 * GIB, mem_available_bytes=1950 * GIB, swap_total_bytes=0, shm_bytes=1007 * GIB,
            cgroup_version=2, core_ulimit="unlimited", core_pattern="|/usr/share/apport/apport -p%p -s%s -c%c",
            overcommit_memory=0)


def gpus(name: str, cc: str, count: int, memory_mib: int) -> tuple[Gpu, ...]:
    return tuple(Gpu(i, name, cc, memory_mib * 1024**2, f"{i:012x}") for i in range(count))


def python(packages: dict[str, str], requires: dict[str, tuple[str, ...]] | None = None) -> PythonEnv:
    return PythonEnv("3.11.9", "/opt/venv/bin/python", "/opt/venv", "venv", packages, requires or {},
                     marker_env=MARKERS)


def torch_ok(version: str, cuda: str | None, arch: list[str], nccl: str = "2.21.5") -> RuntimeResult:
    return RuntimeResult(True, 0, facts={"version": version, "cuda": cuda, "cuda_available": True, "arch_list": arch,
                                         "nccl_version": nccl})


def machine(**sections) -> Snapshot:  # type: ignore[no-untyped-def]
    base = Snapshot(schema_version=1, envcheck_version="0.1.0", captured_at="2026-11-29T12:00:00+00:00", host=HOST)
    return dataclasses.replace(base, **sections)


# 8x H100 80GB HBM3, driver 565.57.01, CUDA 12.7 (smi-table-h100x8-565.57.01.txt)
H100_NODE = Nvidia("565.57.01", "12.7", "nvml", gpus("NVIDIA H100 80GB HBM3", "9.0", 8, 81559))
H100_STACK = {"torch": "2.5.1+cu124", "deepspeed": "0.16.3", "transformers": "4.49.0", "accelerate": "1.1.1",
              "peft": "0.13.2", "flash-attn": "2.7.0.post2", "nvidia-nccl-cu12": "2.21.5", "numpy": "1.26.4"}
ARCH_CU124 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def healthy_h100() -> Snapshot:
    return machine(
        nvidia=H100_NODE,
        cuda_toolkits=(CudaToolkit("/usr/local/cuda-12.4", "12.4.131", True, True, ("PATH", "CUDA_HOME"),
                                   "/usr/local/cuda-12.4/bin/nvcc"),),
        python=python(H100_STACK),
        torch=Torch("2.5.1+cu124", "12.4"),
        deepspeed=DeepSpeed("0.16.3", "2.5", "12.4", None, "2.21", (), "cuda"),
        env={"CUDA_HOME": "/usr/local/cuda-12.4"},
        runtime={"torch": torch_ok("2.5.1+cu124", "12.4", ARCH_CU124),
                 "flash_attn_2_cuda": RuntimeResult(True, 0)},
    )


SCENARIOS = {
    # A 470-branch datacenter driver (CUDA 11.4) under a torch built for CUDA 12.4.
    "old_driver_new_torch": (
        lambda: dataclasses.replace(healthy_h100(), nvidia=Nvidia(
            "470.199.02", "11.4", "nvml", gpus("NVIDIA A100-SXM4-80GB", "8.0", 8, 81920)), runtime=None),
        "EC501", "fatal", "driver_too_old"),
    # Tesla P100 (6.0) with torch 2.7 cu128, whose build starts at sm_75.
    "p100_dropped_arch": (
        lambda: machine(nvidia=Nvidia("570.124.06", "12.8", "nvml", gpus("Tesla P100-PCIE-16GB", "6.0", 2, 16384)),
                        python=python({"torch": "2.7.1+cu128"}), torch=Torch("2.7.1+cu128", "12.8")),
        "EC503", "fatal", "cuda_arch_unsupported"),
    # Tesla V100 (7.0) with torch 2.11 cu128, which dropped Volta again.
    "v100_dropped_arch": (
        lambda: machine(nvidia=Nvidia("525.105.17", "12.0", "nvidia-smi", gpus("Tesla V100-SXM2-32GB", "7.0", 1, 32768)),
                        python=python({"torch": "2.11.0+cu128"}), torch=Torch("2.11.0+cu128", "12.8")),
        "EC503", "fatal", "cuda_arch_unsupported"),
    # RTX 5090 (Blackwell, 12.0) with torch 2.5.1 cu124 (kernels up to sm_90, no PTX).
    "rtx5090_old_torch": (
        lambda: machine(nvidia=Nvidia("570.86.16", "12.8", "nvml", gpus("NVIDIA GeForce RTX 5090", "12.0", 1, 32607)),
                        python=python({"torch": "2.5.1+cu124"}), torch=Torch("2.5.1+cu124", "12.4")),
        "EC503", "fatal", "cuda_arch_unsupported"),
    # flash-attn built for torch 2.4 under torch 2.5: the import misses a c10 symbol.
    "flash_attn_other_torch": (
        lambda: dataclasses.replace(healthy_h100(), runtime={
            "torch": torch_ok("2.5.1+cu124", "12.4", ARCH_CU124),
            "flash_attn_2_cuda": RuntimeResult(False, 1, None, "ImportError: /opt/venv/lib/python3.11/site-packages/"
                                               "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: "
                                               "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_"
                                               "traitsIcESaIcEEE")}),
        "EC311", "error", "segfault_abi_mismatch"),
    # DeepSpeed with pre-built ops compiled against torch 2.3 / CUDA 12.1, torch 2.5.1+cu124 installed since.
    "deepspeed_ops_older_torch": (
        lambda: dataclasses.replace(healthy_h100(), deepspeed=DeepSpeed(
            "0.14.4", "2.3", "12.1", None, "2.20", ("cpu_adam", "fused_adam"), "cuda")),
        "EC301", "error", "segfault_abi_mismatch"),
    # nvcc 11.8 (CUDA_HOME) with torch cu121: DeepSpeed JIT ops and flash-attn source builds refuse.
    "nvcc118_torch_cu121": (
        lambda: machine(nvidia=Nvidia("535.104.05", "12.2", "nvml", gpus("NVIDIA A100-SXM4-80GB", "8.0", 8, 81920)),
                        cuda_toolkits=(CudaToolkit("/usr/local/cuda-11.8", "11.8.89", True, True, ("PATH", "CUDA_HOME"),
                                                   "/usr/local/cuda-11.8/bin/nvcc"),),
                        python=python({"torch": "2.3.1+cu121", "deepspeed": "0.14.4"}),
                        torch=Torch("2.3.1+cu121", "12.1"), env={"CUDA_HOME": "/usr/local/cuda-11.8"}),
        "EC505", "error", "cuda_toolkit_mismatch"),
    # A conda env's cudatoolkit 12.1 exported on LD_LIBRARY_PATH: the nvidia-cublas-cu12 12.4 wheel's libcublas
    # loads libcublasLt.so.12 by soname and gets the conda one (pytorch/pytorch#101314).
    "conda_cublaslt_shadows_wheel": (
        lambda: dataclasses.replace(healthy_h100(), libraries=(
            Library("libcublasLt", "12.1.3.1", "/opt/conda/envs/train/lib/libcublasLt.so.12.1.3.1", "LD_LIBRARY_PATH"),
            Library("libcublasLt", "12.4.5.8",
                    "/opt/venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublasLt.so.12", "wheel")),
            env={"CUDA_HOME": "/usr/local/cuda-12.4", "LD_LIBRARY_PATH": "/opt/conda/envs/train/lib"}),
        "EC514", "warning", "segfault_abi_mismatch"),
    # The same with a cuDNN 9.0 sub-library (cuDNN 9 dlopens libcudnn_ops and friends) against nvidia-cudnn-cu12 9.1.
    "conda_cudnn_shadows_wheel": (
        lambda: dataclasses.replace(healthy_h100(), libraries=(
            Library("libcudnn_ops", "9.0.0", "/opt/conda/envs/train/lib/libcudnn_ops.so.9.0.0", "LD_LIBRARY_PATH"),
            Library("libcudnn_ops", "9.1.0.70",
                    "/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9", "wheel")),
            env={"CUDA_HOME": "/usr/local/cuda-12.4", "LD_LIBRARY_PATH": "/opt/conda/envs/train/lib"}),
        "EC514", "warning", "segfault_abi_mismatch"),
    # Docker's default 64 MB /dev/shm.
    "docker_default_shm": (
        lambda: dataclasses.replace(healthy_h100(), host=dataclasses.replace(HOST, shm_bytes=64 * 1024**2,
                                                                              container="docker")),
        "EC101", "error", "shm_too_small"),
    # CPU-only torch on a GPU node.
    "cpu_torch_on_gpu_node": (
        lambda: dataclasses.replace(healthy_h100(), torch=Torch("2.5.1+cpu", None), runtime=None,
                                    python=python({**H100_STACK, "torch": "2.5.1+cpu"})),
        "EC504", "error", "torch_cpu_only"),
    # A 535 driver (CUDA 12.2) under torch 2.5.1 cu124: runs only through minor-version compatibility.
    "driver_535_torch_cu124": (
        lambda: dataclasses.replace(healthy_h100(), nvidia=Nvidia(
            "535.104.05", "12.2", "nvml", gpus("NVIDIA H100 80GB HBM3", "9.0", 8, 81559)),
            cuda_toolkits=(), env={}, deepspeed=None,
            python=python({k: v for k, v in H100_STACK.items() if k != "deepspeed"})),
        "EC501", "warning", "driver_too_old"),
    # FlashAttention-2 installed on a T4 (Turing, 7.5).
    "flash_attn_on_t4": (
        lambda: machine(nvidia=Nvidia("550.54.15", "12.4", "nvml", gpus("Tesla T4", "7.5", 4, 15360)),
                        python=python({"torch": "2.5.1+cu124", "flash-attn": "2.7.0.post2"}, {"flash-attn": ("torch", "einops")}),
                        torch=Torch("2.5.1+cu124", "12.4")),
        "EC507", "error", "cuda_arch_unsupported"),
}


def doctor_json(snapshot: Snapshot, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    path = tmp_path / "snapshot.json"
    assert_valid_snapshot(snapshot.to_dict())
    path.write_text(json.dumps(snapshot.to_dict()))
    code = cli.main(["doctor", "--snapshot", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_broken_machine_is_flagged(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build, finding_id, severity, category = SCENARIOS[name]
    code, report = doctor_json(build(), tmp_path, capsys)
    found = [f for f in report["findings"] if f["id"] == finding_id]
    assert found, f"{name}: expected {finding_id}, got {[(f['id'], f['title']) for f in report['findings']]}"
    assert (found[0]["severity"], found[0]["category"]) == (severity, category)
    assert found[0]["fixes"] and all(fix["commands"] for fix in found[0]["fixes"])
    assert code == (1 if severity in ("error", "fatal") else code)


def test_healthy_h100_stack_raises_nothing_above_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = doctor_json(healthy_h100(), tmp_path, capsys)
    above_info = [(f["id"], f["title"]) for f in report["findings"] if f["severity"] != "info"]
    assert above_info == [] and code == 0


def test_cpu_only_laptop_raises_nothing_above_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    laptop = machine(
        host=Host(os="Ubuntu 24.04.1 LTS", kernel="6.8.0-49-generic", arch="x86_64", glibc="2.39", cpu_count=8,
                  mem_total_bytes=32 * GIB, mem_available_bytes=20 * GIB, swap_total_bytes=8 * GIB, shm_bytes=16 * GIB,
                  cgroup_version=2, core_ulimit="0", core_pattern="core", overcommit_memory=0),
        python=python({"torch": "2.5.1+cpu", "transformers": "4.49.0", "numpy": "1.26.4"}),
        torch=Torch("2.5.1+cpu", None),
        skipped=(Skipped("nvidia", "no NVIDIA driver: no /proc/driver/nvidia, /dev/nvidiactl, /dev/nvidia0 or /dev/dxg"),),
    )
    code, report = doctor_json(laptop, tmp_path, capsys)
    assert [f["id"] for f in report["findings"] if f["severity"] != "info"] == [] and code == 0


def test_driver_minor_version_compatibility_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 535 driver (CUDA 12.2) under torch cu124 runs through minor-version compatibility, with limits."""
    node = dataclasses.replace(healthy_h100(), nvidia=Nvidia("535.104.05", "12.2", "nvml",
                                                             gpus("NVIDIA H100 80GB HBM3", "9.0", 8, 81559)))
    _, report = doctor_json(node, tmp_path, capsys)
    (finding,) = [f for f in report["findings"] if f["id"] == "EC501"]
    assert finding["severity"] == "warning" and "minor-version compatibility" in finding["title"]


def test_gpu_served_only_by_ptx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RTX 5090 under torch 2.9 cu126: no sm_120 kernels and no PTX in that build's arch list -> fatal; under
    the cu128 build it has sm_120 kernels -> nothing."""
    blackwell = Nvidia("580.95.05", "13.0", "nvml", gpus("NVIDIA GeForce RTX 5090", "12.0", 1, 32607))
    bad = machine(nvidia=blackwell, python=python({"torch": "2.9.1+cu126"}), torch=Torch("2.9.1+cu126", "12.6"))
    _, report = doctor_json(bad, tmp_path, capsys)
    assert [f["severity"] for f in report["findings"] if f["id"] == "EC503"] == ["fatal"]
    good = dataclasses.replace(bad, python=python({"torch": "2.9.1+cu128"}), torch=Torch("2.9.1+cu128", "12.8"))
    _, report = doctor_json(good, tmp_path, capsys)
    assert [f["id"] for f in report["findings"] if f["id"] == "EC503"] == []
