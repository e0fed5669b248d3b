"""A paste that ends at a warning naming why the run will fail (structure/risk.py): a weak cause when it is the
paste's last line and nothing in the paste is an error; no cause when the run goes on past it
(test_diagnose_printed's GOING_ON) or when an error shows the run failed otherwise. The corpus's dev logs that are
such pastes (c1022, c1318, c1410, c1660, c1724, c1900, c2171, c2173) are kept by test_diagnose_corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose_support import causes_of, primary_of

# each warning as its program prints it (structure/risk.py cites where)
WARNINGS = [
    ("Ultralytics YOLOv8.0.54 Python-3.10.6 torch-2.0.0+cpu CPU", "torch_cpu_only"),
    ("[WARNING|parser.py:242] 2024-04-11 11:16:12,325 >> Process rank: 0, device: cpu, n_gpu: 0, distributed "
     "training: False, 16-bits training: True", "torch_cpu_only"),
    ("/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:250: UserWarning: User provided device_type of "
     "'cuda', but CUDA is not available. Disabling", "torch_cpu_only"),
    ("/venv/lib/python3.10/site-packages/torch/cuda/amp/grad_scaler.py:120: UserWarning: torch.cuda.amp.GradScaler "
     "is enabled, but CUDA is not available.  Disabling.", "torch_cpu_only"),
    ("/venv/lib/python3.10/site-packages/whisper/transcribe.py:114: UserWarning: FP16 is not supported on CPU; using "
     "FP32 instead", "torch_cpu_only"),
    ("inference_codeformer.py:40: RuntimeWarning: Running on CPU now! Make sure your PyTorch version matches your "
     "CUDA.The unoptimized RealESRGAN is slow on CPU.", "torch_cpu_only"),
    ("Warning: torch.cuda.is_available() returned False.\nThis means that no GPU has been detected.\nFalling back to "
     "CPU mode.", "torch_cpu_only"),
    ("/venv/lib/python3.10/site-packages/bitsandbytes/cuda_setup/main.py:136: UserWarning: WARNING: No libcudart.so "
     "found! Install CUDA or the cudatoolkit package (anaconda)!\n  warn(msg)", "missing_cuda_library"),
    ("2025-10-09 20:16:32,652\tWARNING services.py:2159 -- WARNING: The object store is using /tmp instead of "
     "/dev/shm because /dev/shm has only 67104768 bytes available. This will harm performance! You may be able to "
     "free up space by deleting files in /dev/shm.", "shm_too_small"),
]


@pytest.mark.parametrize(("text", "cause"), WARNINGS)
def test_a_paste_that_ends_at_the_warning_names_its_weak_cause(tmp_path: Path, capsys, text: str, cause: str) -> None:
    first = primary_of(capsys, tmp_path, "Loading checkpoint shards: 100%|##########| 2/2\n" + text + "\n\n")
    assert first["cause"] == cause and first["confidence"] <= 0.3


@pytest.mark.parametrize(("text", "cause"), WARNINGS)
@pytest.mark.parametrize("error", [
    "ValueError: the config names no dataset",  # an error of the run's own after the warning
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    main()\n"
    "KeyError: 'input_ids'",
])
def test_an_error_in_the_paste_leaves_the_warning_no_cause(tmp_path: Path, capsys, text: str, cause: str,
                                                          error: str) -> None:
    """Before the warning or after it: the run failed otherwise (the honest unknown shows that error)."""
    for log in (error + "\n" + text + "\n", text + "\n" + error + "\n"):
        assert cause not in [c["cause"] for c in causes_of(capsys, tmp_path, log)]


def test_a_stronger_cause_leads_over_the_warning(tmp_path: Path, capsys) -> None:
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "23.65 GiB of which 1.02 GiB is free.\nUltralytics YOLOv8.0.54 Python-3.10.6 torch-2.0.0+cpu CPU\n")
    assert [c["cause"] for c in causes_of(capsys, tmp_path, text)] == ["gpu_oom"]


NCCL_START = ("node1:2610:2610 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>\n"
              "node1:2610:2610 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
              "node1:2610:2610 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.7<0>\n"
              "NCCL version 2.4.8+cuda10.0\n"
              "node1:2610:2610 [1] NCCL INFO Setting affinity for GPU 1 to ff00ff\n")


def test_a_paste_that_ends_in_ncclss_set_up_lines_reads_as_an_nccl_hang(tmp_path: Path, capsys) -> None:
    """NCCL <= 2.10 warns that libibverbs is missing on every machine without InfiniBand: its own WARN is no error."""
    first = primary_of(capsys, tmp_path, "python train.py\n" + NCCL_START)
    assert (first["cause"], first["confidence"], first["library"]) == ("nccl_error", 0.3, "nccl")


@pytest.mark.parametrize("after", ["{'loss': 2.31, 'learning_rate': 1.9e-05, 'epoch': 0.1}\n",
                                   "RuntimeError: the dataset has no split 'train'\n"])
def test_ncclss_set_up_lines_followed_by_anything_name_no_hang(tmp_path: Path, capsys, after: str) -> None:
    assert "nccl_error" not in [c["cause"] for c in causes_of(capsys, tmp_path, NCCL_START + after)]


# a read-only review's counter-examples (2026-12-02): pip's own lines name a +cpu wheel without running it; an error
# no other anchor marks, or a kill, shows the run failed otherwise
@pytest.mark.parametrize("text", [
    "Installing collected packages: torch\nSuccessfully installed MarkupSafe-2.1.3 torch-2.1.0+cpu "
    "typing-extensions-4.4.0",
    "#9 97.35 Successfully installed torch-2.1.0+cpu",
    "ERROR: torch-2.1.0+cpu-cp311-cp311-win_amd64.whl is not a supported wheel on this platform.",
    "wandb: ERROR Run initialization has timed out after 90.0 sec.\n/venv/lib/python3.10/site-packages/torch/cuda/"
    "amp/grad_scaler.py:120: UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
    "Disabling.",
    "(raylet) [2025-01-01 10:00:00,000 E 12 12] ERROR worker.py:405 -- Unhandled error\n2025-10-09 20:16:32,652\t"
    "WARNING services.py:2159 -- WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has "
    "only 67104768 bytes available. This will harm performance!",
])
def test_pips_lines_and_unmarked_errors_leave_the_warning_no_cause(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, text + "\n")["cause"] is None


def test_a_kill_keeps_the_warning_out_of_the_causes(tmp_path: Path, capsys) -> None:
    text = ("Killed\n/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:250: UserWarning: User provided "
            "device_type of 'cuda', but CUDA is not available. Disabling\n  warnings.warn(\n")
    assert [c["cause"] for c in causes_of(capsys, tmp_path, text)] == ["host_oom"]


def test_ncclss_teardown_lines_at_the_end_are_no_hang(tmp_path: Path, capsys) -> None:
    """A review's runs that ended: NCCL destroying its communicators, or a peer's connection closed at the end."""
    for end in ("node1:42:42 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE",
                "node1:42:99 [0] NCCL INFO [Service thread] Connection closed by localRank 1"):
        assert "nccl_error" not in [c["cause"] for c in causes_of(capsys, tmp_path, NCCL_START + end + "\n")]


def test_a_run_that_exited_0_or_finished_training_gets_no_last_resort(tmp_path: Path) -> None:
    from envcheck.diagnose.engine import Request, diagnose

    log = tmp_path / "run.log"
    log.write_text("python train.py\n" + NCCL_START, encoding="utf-8")
    assert [c.cause for c in diagnose(Request(logs=(str(log),), system=False)).causes] == ["nccl_error"]
    assert diagnose(Request(logs=(str(log),), system=False, exit_code=0)).causes == ()
    log.write_text("Training completed. Do not forget to share your model on huggingface.co/models =)\n"
                   + NCCL_START, encoding="utf-8")
    assert diagnose(Request(logs=(str(log),), system=False)).causes == ()


def test_error_lines_no_anchor_marks_are_seen_without_filling_the_excerpt(tmp_path: Path, capsys) -> None:
    """A log dense in 'ERROR' lines keeps its Xid line (a review's: the ERROR anchor once filled the bounded excerpt
    and lost it), and an ERROR line near the end still keeps a warning at the end from naming its cause."""
    lines = [f"2024-01-01 10:00:00 ERROR worker retrying request {i}" for i in range(5000)]
    lines += ["[ 123.456] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."]
    lines += [f"2024-01-01 10:00:00 ERROR worker retrying request {i}" for i in range(2000)]
    assert primary_of(capsys, tmp_path, "\n".join(lines) + "\n")["cause"] == "gpu_xid"
    text = ("wandb: ERROR Run initialization has timed out after 90.0 sec.\n" + "step 1\n" * 3000
            + "Ultralytics YOLOv8.0.54 Python-3.10.6 torch-2.0.0+cpu CPU\n")
    assert primary_of(capsys, tmp_path, text)["cause"] is None
