"""Matrix-backed checks (EC5xx) on focused snapshots; the facts they rely on come from compat_matrix/."""

from __future__ import annotations

import dataclasses

from test_broken_machines import H100_NODE, gpus, healthy_h100, machine, python

from envcheck.checks import run_checks
from envcheck.checks.model import Severity
from envcheck.matrix import load_matrix
from envcheck.snapshot import CudaToolkit, Nvidia, RuntimeResult, Skipped, Torch

MATRIX = load_matrix()


def findings(snap, finding_id=None):  # type: ignore[no-untyped-def]
    found = run_checks(snap, MATRIX)
    return [f for f in found if finding_id is None or f.id == finding_id]


def kit(version: str, path: str = "/usr/local/cuda") -> tuple[CudaToolkit, ...]:
    return (CudaToolkit(path, version, True, True, ("PATH", "CUDA_HOME"), f"{path}/bin/nvcc"),)


def test_deepspeed_accepts_a_minor_mismatch_inside_its_list() -> None:
    """DeepSpeed 0.16.3's cuda_minor_mismatch_ok for CUDA 12 includes 12.1 and 12.4 (compat_matrix/packages.toml)."""
    snap = dataclasses.replace(healthy_h100(), cuda_toolkits=kit("12.1.105"), env={"CUDA_HOME": "/usr/local/cuda"})
    (finding,) = findings(snap, "EC505")
    assert finding.severity == Severity.INFO and "DeepSpeed accepts" in finding.title


def test_deepspeed_refuses_a_minor_outside_its_list() -> None:
    """12.9 is not in DeepSpeed 0.16.3's list (12.9 was added in 0.17.2): pre-builds and CPU-op JIT builds raise."""
    snap = dataclasses.replace(healthy_h100(), cuda_toolkits=kit("12.9.86"), env={"CUDA_HOME": "/usr/local/cuda"})
    (finding,) = findings(snap, "EC505")
    assert finding.severity == Severity.WARNING and "refuses to build some ops" in finding.title
    assert "cpu_adam" in finding.detail
    skipping = dataclasses.replace(snap, env={"CUDA_HOME": "/usr/local/cuda", "DS_SKIP_CUDA_CHECK": "1"})
    (skipped,) = findings(skipping, "EC505")
    assert skipped.severity == Severity.INFO and "DS_SKIP_CUDA_CHECK=1" in skipped.title


def test_deepspeed_without_a_cuda13_list_refuses_any_cuda13_minor_mismatch() -> None:
    """DeepSpeed <= 0.19.5 has no CUDA 13 entry in cuda_minor_mismatch_ok: 13.2 vs 13.0 raises, it is not unknown."""
    node = Nvidia("595.45.04", "13.2", "nvml", gpus("NVIDIA H100 80GB HBM3", "9.0", 8, 81559))
    snap = machine(nvidia=node, cuda_toolkits=kit("13.2.51"), env={"CUDA_HOME": "/usr/local/cuda"},
                   python=python({"torch": "2.13.0+cu130", "deepspeed": "0.19.5"}), torch=Torch("2.13.0+cu130", "13.0"))
    (finding,) = findings(snap, "EC505")
    assert finding.severity == Severity.WARNING
    assert not [f for f in findings(snap, "EC599") if any("cuda_minor_mismatch_ok" in e.observed for e in f.evidence)]


def test_deepspeed_jit_ops_without_any_toolkit() -> None:
    """A runtime image: DeepSpeed with no pre-built ops, torch with CUDA, GPUs, and no nvcc anywhere."""
    snap = dataclasses.replace(healthy_h100(), cuda_toolkits=(), env={})
    (finding,) = findings(snap, "EC515")
    # a warning, not an error: pip-only installs look like this, and the Trainer's own optimizer needs no build
    assert finding.severity == Severity.WARNING and finding.category == "deepspeed_build_failure"


def test_versioned_toolkit_outside_torchs_search_is_not_the_build_toolkit() -> None:
    """torch's cpp_extension never looks at /usr/local/cuda-11.8 by itself: that is 'no toolkit', not a mismatch."""
    stray = (CudaToolkit("/usr/local/cuda-11.8", "11.8.89", False, False, ("/usr/local",),
                         "/usr/local/cuda-11.8/bin/nvcc"),)
    snap = dataclasses.replace(healthy_h100(), cuda_toolkits=stray, env={})
    assert findings(snap, "EC505") == [] and [f.id for f in findings(snap, "EC515")] == ["EC515"]


def test_minor_mismatch_without_deepspeed_is_info() -> None:
    snap = machine(nvidia=H100_NODE, cuda_toolkits=kit("12.6.85"), python=python({"torch": "2.5.1+cu124"}),
                   torch=Torch("2.5.1+cu124", "12.4"), env={"CUDA_HOME": "/usr/local/cuda"})
    assert [f.severity for f in findings(snap, "EC505")] == [Severity.INFO]


def test_nvcc_newer_than_the_driver() -> None:
    snap = dataclasses.replace(healthy_h100(), cuda_toolkits=kit("13.0.88"), env={"CUDA_HOME": "/usr/local/cuda"})
    (finding,) = findings(snap, "EC502")
    assert finding.severity == Severity.ERROR and finding.category == "driver_too_old"


def test_blackwell_gpu_with_an_old_toolkit() -> None:
    """Compute capability 12.0 needs CUDA 12.8 to compile for (compat_matrix/gpus.toml)."""
    node = Nvidia("575.57.08", "12.9", "nvml", gpus("NVIDIA GeForce RTX 5090", "12.0", 2, 32607))
    snap = machine(nvidia=node, cuda_toolkits=kit("12.4.131"), env={"CUDA_HOME": "/usr/local/cuda"},
                   python=python({"torch": "2.7.1+cu128"}), torch=Torch("2.7.1+cu128", "12.8"))
    (finding,) = findings(snap, "EC513")
    assert finding.severity == Severity.ERROR and "12.0" in finding.title


def test_mixed_gpus() -> None:
    mixed = Nvidia("570.86.15", "12.8", "nvidia-smi", (*gpus("NVIDIA TITAN V", "7.0", 1, 12288),
                                                       *gpus("NVIDIA RTX 5880 Ada Generation", "8.9", 1, 49140)))
    (finding,) = findings(machine(nvidia=mixed, python=python({})), "EC512")
    assert finding.severity == Severity.WARNING and "7.0, 8.9" in finding.title


def test_gpu_capability_looked_up_by_name_when_not_probed() -> None:
    """The /proc fallback has no compute capability: the matrix supplies it from the GPU name."""
    node = Nvidia("535.104.05", None, "proc", (dataclasses.replace(gpus("Tesla P100-PCIE-16GB", "6.0", 1, 16384)[0],
                                                                   compute_capability=None),))
    snap = machine(nvidia=node, python=python({"torch": "2.7.1+cu128"}), torch=Torch("2.7.1+cu128", "12.8"))
    assert [f.severity for f in findings(snap, "EC503")] == [Severity.FATAL]


def test_runtime_arch_list_beats_the_matrix() -> None:
    """A source build compiled for sm_120 runs on an RTX 5090 even though the matrix's 2.5 cu124 row lacks it."""
    node = Nvidia("570.86.16", "12.8", "nvml", gpus("NVIDIA GeForce RTX 5090", "12.0", 1, 32607))
    runtime = {"torch": RuntimeResult(True, 0, facts={"arch_list": ["sm_80", "sm_90", "sm_120"], "version": "2.5.1"})}
    snap = machine(nvidia=node, python=python({"torch": "2.5.1+cu124"}), torch=Torch("2.5.1+cu124", "12.4"),
                   runtime=runtime)
    assert findings(snap, "EC503") == []


def test_python_outside_torch_range() -> None:
    snap = machine(python=dataclasses.replace(python({"torch": "2.5.1"}), version="3.8.18"),
                   torch=Torch("2.5.1", None), skipped=(Skipped("nvidia", "no NVIDIA driver"),))
    (finding,) = findings(snap, "EC506")
    assert finding.severity == Severity.ERROR and ">=3.9" in finding.title


def test_llamafactory_start_up_check() -> None:
    """LLaMA-Factory 0.9.3 checks transformers at start-up; 4.40.0 is below every range it accepts."""
    env = python({"llamafactory": "0.9.3", "transformers": "4.40.0", "torch": "2.5.1"})
    snap = machine(python=env, torch=Torch("2.5.1", None), skipped=(Skipped("nvidia", "no NVIDIA driver"),))
    found = [f for f in findings(snap, "EC508") if "transformers" in f.title]
    assert found and found[0].severity == Severity.ERROR
    disabled = dataclasses.replace(snap, env={"DISABLE_VERSION_CHECK": "1"})
    assert [f.severity for f in findings(disabled, "EC508") if "transformers" in f.title] == [Severity.WARNING]


def test_known_bad_entry_matches_and_names_its_id() -> None:
    """KB012: NumPy 2 under a torch older than 2.3 (compiled against NumPy 1.x)."""
    env = python({"torch": "2.1.2", "numpy": "2.0.1"})
    snap = machine(python=env, torch=Torch("2.1.2", None), skipped=(Skipped("nvidia", "no NVIDIA driver"),))
    found = [f for f in findings(snap, "EC510") if f.title.startswith("KB012")]
    assert found and found[0].category == "numpy_abi" and found[0].severity >= Severity.ERROR
    assert any(e.fact == "numpy" and e.observed == "2.0.1" for e in found[0].evidence)


def test_covered_known_bad_entries_are_left_to_their_check() -> None:
    """KB017 (nvcc 11 with a CUDA 12 torch under DeepSpeed) is covered by EC505: one finding, not two."""
    snap = machine(nvidia=H100_NODE, cuda_toolkits=kit("11.8.89"), env={"CUDA_HOME": "/usr/local/cuda"},
                   python=python({"torch": "2.3.1+cu121", "deepspeed": "0.14.4"}), torch=Torch("2.3.1+cu121", "12.1"))
    ids = [f.id for f in findings(snap)]
    assert "EC505" in ids and not [f for f in findings(snap, "EC510") if f.title.startswith("KB017")]


def test_unprobed_facts_are_listed_not_guessed() -> None:
    """The driver failed to answer (no skip says 'no driver'): rules needing it are listed in EC599."""
    snap = machine(nvidia=Nvidia(None, None, "proc", gpus("NVIDIA GeForce RTX 4090", "8.9", 2, 24564)),
                   python=python({"torch": "2.5.1+cu124"}), torch=Torch("2.5.1+cu124", "12.4"))
    (finding,) = findings(snap, "EC599")
    assert finding.severity == Severity.INFO
    rules = {e.fact for e in finding.evidence}
    assert "driver vs CUDA 12.4" in rules and "known-bad KB015" in rules


def test_nccl_loaded_differs_from_the_wheel() -> None:
    runtime = {"torch": RuntimeResult(True, 0, facts={"nccl_version": "2.18.1", "arch_list": ["sm_90"]})}
    snap = dataclasses.replace(healthy_h100(), runtime=runtime)
    (finding,) = findings(snap, "EC511")
    assert "2.18.1" in finding.title and "2.21.5" in finding.title


def test_unconfirmed_matrix_rows_never_raise_above_info() -> None:
    """KB036 (NCCL 2.30.4 hang on GB10) is unconfirmed since its reporter retracted the NVLS_ENABLE=0 fix
    (NVIDIA/nccl#2167, 2026-05-10): when it matches, it is info."""
    node = Nvidia("580.142", "13.0", "nvml", gpus("NVIDIA GB10", "12.1", 1, 122572))
    runtime = {"torch": RuntimeResult(True, 0, facts={"nccl_version": "2.30.4", "arch_list": ["sm_120"]})}
    snap = machine(nvidia=node, python=python({"torch": "2.11.0+cu130", "nvidia-nccl-cu13": "2.30.4"}),
                   torch=Torch("2.11.0+cu130", "13.0"), runtime=runtime)
    kb = [f for f in findings(snap, "EC510") if f.title.startswith("KB036")]
    unconfirmed = {k.id for k in MATRIX.known_bad if not k.confirmed}
    assert "KB036" in unconfirmed
    assert kb and all(f.severity == Severity.INFO for f in kb)
    other = dataclasses.replace(snap, runtime={"torch": RuntimeResult(True, 0, facts={"nccl_version": "2.30.3"})})
    assert not [f for f in findings(other, "EC510") if f.title.startswith("KB036")]


def test_no_unconfirmed_known_bad_entry_raises_above_info(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every unconfirmed entry, even forced to match and to be fatal, is reported as info and never blocks resolve."""
    from envcheck.checks import known_bad as check_module
    from envcheck.resolve import known_bad as resolve_module

    unconfirmed = [dataclasses.replace(k, severity="fatal", covered_by=None)
                   for k in MATRIX.known_bad if not k.confirmed]
    assert unconfirmed
    monkeypatch.setattr(check_module, "matches", lambda entry, snapshot, matrix: (True, [], []))
    monkeypatch.setattr(resolve_module, "_judge", lambda *args: resolve_module.HOLDS)
    forced = dataclasses.replace(MATRIX, known_bad=tuple(unconfirmed))
    found = [f for f in check_module.known_bad_combinations(machine(), forced) if hasattr(f, "severity")]
    assert len(found) == len(unconfirmed) and {f.severity for f in found} == {Severity.INFO}
    assert resolve_module.blocking(forced, None, None, {}) is None  # type: ignore[arg-type]


def test_kb026_stops_at_deepspeed_0_16() -> None:
    """DeepSpeed PR #6751 (first in v0.16.0) loads checkpoints with weights_only=False: 0.15.4 on torch 2.6 warns,
    0.16.0 does not."""
    def kb026(deepspeed: str) -> list[Severity]:
        env = python({"torch": "2.6.0", "deepspeed": deepspeed})
        snap = machine(python=env, torch=Torch("2.6.0", None), skipped=(Skipped("nvidia", "no NVIDIA driver"),))
        return [f.severity for f in findings(snap, "EC510") if f.title.startswith("KB026")]

    assert kb026("0.15.4") == [Severity.WARNING]
    assert kb026("0.16.0") == [] and kb026("0.16.3") == []


def test_torchs_direct_libraries_are_not_shadowed() -> None:
    """PyPI torch finds libnccl, libcudart, libcudnn and libcublas through DT_RPATH, searched before LD_LIBRARY_PATH."""
    from envcheck.snapshot import Library

    site = "/opt/venv/lib/python3.11/site-packages/nvidia"
    libs = (Library("libnccl", "2.18.3", "/usr/local/nccl/lib/libnccl.so.2.18.3", "LD_LIBRARY_PATH"),
            Library("libcudart", "12.1.105", "/usr/local/cuda-12.1/lib64/libcudart.so.12.1.105", "LD_LIBRARY_PATH"),
            Library("libnccl", "2.21.5", f"{site}/nccl/lib/libnccl.so.2", "wheel"),
            Library("libcudart", "12.4.127", f"{site}/cuda_runtime/lib/libcudart.so.12", "wheel"))
    snap = dataclasses.replace(healthy_h100(), libraries=libs)
    assert findings(snap, "EC514") == [] and findings(snap, "EC511") == []


def test_other_soname_on_ld_library_path_does_not_shadow() -> None:
    """libcudnn.so.8 cannot stand in for the wheel's libcudnn.so.9: the loader matches sonames."""
    from envcheck.snapshot import Library

    libs = (Library("libcudnn", "8.9.2", "/opt/conda/lib/libcudnn.so.8.9.2", "LD_LIBRARY_PATH"),
            Library("libcudnn", "9.1.0.70", "/opt/venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9", "wheel"))
    assert findings(dataclasses.replace(healthy_h100(), libraries=libs), "EC514") == []


def test_rtx40_p2p_entry_needs_two_visible_gpus() -> None:
    """accelerate applies its RTX 40 P2P rule only with more than one device (environment.py at v1.10.0)."""
    def kb015(count: int, visible: str | None = None) -> list[str]:
        node = Nvidia("535.183.01", "12.2", "nvml", gpus("NVIDIA GeForce RTX 4090", "8.9", count, 24564))
        env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
        snap = machine(nvidia=node, python=python({}), env=env)
        return [f.title for f in findings(snap, "EC510") if f.title.startswith("KB015")]

    assert kb015(1) == [] and kb015(8, visible="3") == []
    assert len(kb015(2)) == 1 and len(kb015(8, visible="0,1")) == 1


def test_flash_attn_without_a_prebuilt_wheel_for_this_torch() -> None:
    """flash-attn 2.7.0.post2's wheels cover torch < 2.6 (publish.yml): on torch 2.6 it must be a source build.
    Without an import that is a warning; a successful import in a child settles it."""
    from envcheck.snapshot import DeepSpeed

    stack = {"torch": "2.6.0+cu124", "flash-attn": "2.7.0.post2", "deepspeed": "0.16.4", "nvidia-nccl-cu12": "2.21.5"}
    base = dataclasses.replace(healthy_h100(), python=python(stack), torch=Torch("2.6.0+cu124", "12.4"),
                               deepspeed=DeepSpeed("0.16.4", "2.6", "12.4", None, "2.21", (), "cuda"), runtime=None)
    (finding,) = [f for f in findings(base, "EC507") if "flash-attn" in f.title]
    assert finding.severity == Severity.WARNING and finding.category == "segfault_abi_mismatch"
    imported = dataclasses.replace(base, runtime={"torch": RuntimeResult(True, 0, facts={"arch_list": ["sm_90"]}),
                                                  "flash_attn_2_cuda": RuntimeResult(True, 0)})
    assert [f for f in findings(imported, "EC507") if "flash-attn" in f.title] == []


def test_driver_known_only_by_its_supported_cuda() -> None:
    node = Nvidia(None, "12.2", "nvidia-smi", gpus("NVIDIA H100 80GB HBM3", "9.0", 8, 81559))
    snap = dataclasses.replace(healthy_h100(), nvidia=node, python=python({"torch": "2.13.0+cu130"}),
                               torch=Torch("2.13.0+cu130", "13.0"), deepspeed=None, runtime=None)
    assert [f.severity for f in findings(snap, "EC501")] == [Severity.FATAL]


def test_failed_xformers_import_is_a_warning() -> None:
    failed = RuntimeResult(False, 1, None, "ImportError: /x/xformers/_C.so: undefined symbol: _ZN2at4_ops5zeros4callE")
    snap = dataclasses.replace(healthy_h100(), runtime={"torch": RuntimeResult(True, 0, facts={"arch_list": ["sm_90"]}),
                                                        "xformers._C": failed})
    assert [f.severity for f in findings(snap, "EC311")] == [Severity.WARNING]


def test_vendor_prerelease_torch_matches_known_bad_ranges() -> None:
    """An NGC container's torch 2.6.0a0+...nv25.01 behaves as 2.6 for KB026 (torch >= 2.6 with DeepSpeed < 0.16.0)."""
    env = python({"torch": "2.6.0a0+ecf3bae40a.nv25.01", "deepspeed": "0.15.4"})
    snap = machine(python=env, torch=Torch("2.6.0a0+ecf3bae40a.nv25.01", "12.8"),
                   skipped=(Skipped("nvidia", "no NVIDIA driver"),))
    assert [f for f in findings(snap, "EC510") if f.title.startswith("KB026")]
