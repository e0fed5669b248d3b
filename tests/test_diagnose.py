"""envcheck diagnose on real text: logs recorded from real failures here and excerpts of users' logs from public
issue threads (tests/assets/diagnose/PROVENANCE.md names the source of each)."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.diagnose.combine import combine
from envcheck.diagnose.exitcodes import from_text, interpret
from envcheck.diagnose.kernel import read_file
from envcheck.diagnose.chunks import MAX_LINE
from envcheck.diagnose.scan import Matcher, scan
from envcheck.diagnose.source import open_log
from envcheck.matrix import load_matrix

ASSETS = Path(__file__).parent / "assets" / "diagnose"
RECORDED, PUBLIC = ASSETS / "recorded", ASSETS / "public"
TAXONOMY = {"host_oom", "gpu_oom", "segfault_abi_mismatch", "segfault_other", "cuda_arch_unsupported",
            "driver_too_old", "cuda_toolkit_mismatch", "missing_cuda_library", "nccl_error", "nccl_timeout",
            "shm_too_small", "numpy_abi", "torch_cpu_only", "deepspeed_build_failure", "version_conflict", "gpu_xid",
            "disk_full"}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["diagnose", "--offline", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


# (file, expected primary cause, expected signal)
CASES = [
    (RECORDED / "torchrun-oom.log", "host_oom", "SIGKILL"),
    (RECORDED / "torchrun-oom.log.gz", "host_oom", "SIGKILL"),
    (RECORDED / "deepspeed-oom.log", "host_oom", "SIGKILL"),
    (RECORDED / "torchrun-segv.log", "segfault_other", "SIGSEGV"),
    (RECORDED / "bash-segv.log", "segfault_other", "SIGSEGV"),
    (RECORDED / "bash-sigbus-shm64m.log", "shm_too_small", "SIGBUS"),
    (RECORDED / "dataloader-shm64m.log", "shm_too_small", None),
    (RECORDED / "import-undefined-symbol.log", "segfault_abi_mismatch", None),
    (RECORDED / "import-missing-library.log", "missing_cuda_library", None),
    (RECORDED / "torch-cpu-only-cuda.log", "torch_cpu_only", None),
    (RECORDED / "torchrun-nccl-cpu-only.log", "torch_cpu_only", None),
    (RECORDED / "assert-cuda-on-cpu-torch.log", "torch_cpu_only", None),  # a script's assert on is_available()
    (RECORDED / "cuda-device-on-cpu-torch.log", "torch_cpu_only", None),  # torch.cuda.device(0), torch.cuda.Stream()
    (RECORDED / "collect-env-cpu-torch.log", "torch_cpu_only", None),  # collect_env: its +cpu version lines
    # no CUDA toolkit stops DeepSpeed's op build (the corpus's label rule: any other failure to build a DeepSpeed op)
    (RECORDED / "ds-fused-adam-build.log", "deepspeed_build_failure", None),
    (RECORDED / "ds-jit-build-failure.log", "deepspeed_build_failure", None),
    (RECORDED / "ds-jit-build-oom.log", "host_oom", None),  # the OOM killer stopped cc1plus: the build failed of it
    (PUBLIC / "llamafactory-6608-torchrun-exitcode-9.log", "host_oom", "SIGKILL"),
    (PUBLIC / "llava-1085-deepspeed-return-code-9.log", "host_oom", "SIGKILL"),
    (PUBLIC / "lmflow-430-deepspeed-return-code-7.log", "shm_too_small", "SIGBUS"),
    (PUBLIC / "llamafactory-7396-nccl-watchdog.log", "nccl_timeout", None),
    (PUBLIC / "nccl-1016-unhandled-system-error.log", "nccl_error", None),
    (PUBLIC / "llamafactory-4026-cuda-oom.log", "gpu_oom", None),
    (PUBLIC / "llamafactory-4732-flash-attn-undefined-symbol.log", "segfault_abi_mismatch", None),
    (PUBLIC / "yuan-65-driver-too-old.log", "driver_too_old", None),
    (PUBLIC / "jetson-812-no-kernel-image.log", "cuda_arch_unsupported", None),
    (PUBLIC / "notebook-7522-numpy-abi.log", "numpy_abi", None),
    (PUBLIC / "mgm-91-deepspeed-cuda-mismatch.log", "cuda_toolkit_mismatch", None),
    (PUBLIC / "llamafactory-6884-version-check.log", "version_conflict", None),
    (PUBLIC / "pytorch-104259-libcudnn-missing.log", "missing_cuda_library", None),
]


@pytest.mark.parametrize("name", ["healthy-trainer-cpu.log", "healthy-torchrun-2proc-cpu.log", "healthy-deepspeed-cpu.log"])
def test_recorded_healthy_runs_name_no_cause(capsys, name: str) -> None:
    """Real runs that finished (HF Trainer, torchrun with two ranks, the DeepSpeed launcher and engine): their
    warnings, INFO lines, progress bars and the op DeepSpeed builds at start-up are no cause and no exit signal."""
    code, doc = run_json(capsys, str(RECORDED / name))
    assert code == 0 and doc["causes"] == [] and doc["signal"] is None and doc["exit_code"] is None


@pytest.mark.parametrize("path,cause,signal", CASES, ids=[c[0].name for c in CASES])
def test_primary_cause_of_real_logs(capsys, path: Path, cause: str, signal: str | None) -> None:
    code, doc = run_json(capsys, str(path))
    assert code == 1
    assert doc["causes"][0]["cause"] == cause
    assert doc["signal"] == signal
    confidences = [c["confidence"] for c in doc["causes"]]
    assert confidences == sorted(confidences, reverse=True)
    for c in doc["causes"]:
        assert c["cause"] in TAXONOMY and 0 <= c["confidence"] <= 1 and c["title"] and c["fixes"]
        assert {e["source"] for e in c["evidence"]} <= {"log", "kernel", "core", "exit_code"}


def test_every_cause_of_the_taxonomy_has_signatures() -> None:
    """gpu_xid and disk_full are read by the structure layer (NVRM lines, Errno 28), whose real examples are
    tests/test_diagnose_structure.py's; every other cause has matrix signatures."""
    causes = {s.cause for s in load_matrix().signatures}
    assert TAXONOMY - {"gpu_xid", "disk_full"} <= causes


def test_deepspeed_build_failure_lines_as_deepspeed_prints_them(tmp_path: Path, capsys) -> None:
    # The f-strings of op_builder/builder.py (DeepSpeed v0.19.5) filled in as they print.
    log = tmp_path / "ds.log"
    log.write_text("[WARNING] Unable to JIT load the fused_adam op due to ninja not being installed.\n")
    _, doc = run_json(capsys, str(log))
    assert doc["causes"][0]["cause"] == "deepspeed_build_failure"


def test_kernel_oom_record_confirms_sigkill_and_names_rss_and_limit(capsys) -> None:
    code, doc = run_json(capsys, str(RECORDED / "torchrun-oom.log"),
                         "--kernel-log", str(RECORDED / "dmesg-after-torchrun-oom.txt"))
    first = doc["causes"][0]
    assert first["cause"] == "host_oom" and first["confidence"] > 0.95
    assert any(e["source"] == "kernel" and "Killed process 2610" in e["text"] for e in first["evidence"])
    assert "253 MiB" in first["explanation"] and "400 MiB" in first["explanation"]


def test_kernel_log_parser_on_real_records() -> None:
    events = read_file(str(RECORDED / "dmesg-after-deepspeed-oom.txt"))
    kill = events.oom_kills[-1]
    assert (kill.pid, kill.comm, kill.anon_rss_kb, kill.limit_kb) == (2994, "python3", 893696, 1228800)
    assert kill.constraint == "CONSTRAINT_MEMCG" and kill.memcg == "/envcheck-rec"
    segfaults = read_file(str(RECORDED / "dmesg-segfaults.txt")).segfaults
    assert [s.library for s in segfaults] == ["libc.so.6", "libc.so.6"]


def test_unrelated_old_oom_kill_does_not_outrank_the_log(capsys) -> None:
    _, doc = run_json(capsys, str(PUBLIC / "llamafactory-4026-cuda-oom.log"),
                      "--kernel-log", str(RECORDED / "dmesg-after-torchrun-oom.txt"))
    assert doc["causes"][0]["cause"] == "gpu_oom"


def test_exit_code_alone(capsys) -> None:
    code, doc = run_json(capsys, "--exit-code", "137")
    assert (doc["exit_code"], doc["signal"], doc["causes"][0]["cause"]) == (137, "SIGKILL", "host_oom")
    _, doc = run_json(capsys, "--exit-code", "-11")
    assert (doc["signal"], doc["causes"][0]["cause"]) == ("SIGSEGV", "segfault_other")
    _, doc = run_json(capsys, "--exit-code", "1")
    assert doc["causes"] == [] and doc["signal"] is None


def test_exit_text_forms() -> None:
    assert from_text("traceback : Signal 9 (SIGKILL) received by PID 2610").signal == "SIGKILL"
    assert from_text("exitcode  : -7 (pid: 1)").signal == "SIGBUS"
    assert from_text("bash: line 1:  2771 Segmentation fault      python x.py").signal == "SIGSEGV"
    assert interpret(135).signal == "SIGBUS" and interpret(2).signal is None
    # MPICH's Hydra prints the raw wait status of a rank killed by a signal (128 more with a core dump)
    assert from_text("=   EXIT CODE: 9").signal == "SIGKILL"
    assert from_text("=   EXIT CODE: 139").signal == "SIGSEGV"
    assert from_text("> =   EXIT CODE: 9").signal == "SIGKILL"  # quoted in a reply
    assert from_text("exit code: 9") is None
    # zsh's own words, after "zsh: " or its job number; not a lowercase "killed" in prose
    assert from_text("zsh: killed     python train.py").signal == "SIGKILL"
    assert from_text("[1]  + segmentation fault  python train.py").signal == "SIGSEGV"
    assert from_text("the job was killed by the scheduler") is None


def test_nothing_recognised_says_so(tmp_path: Path, capsys) -> None:
    log = tmp_path / "ok.log"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad dataset row 7\n")
    assert main(["diagnose", "--offline", str(log)]) == 0
    out = capsys.readouterr().out
    assert "No known cause recognised" in out and "ValueError: bad dataset row 7" in out


@pytest.mark.parametrize("make,message", [
    (lambda p: p / "missing.log", "no such file"),
    (lambda p: p, "is a directory"),
    (lambda p: _write(p / "empty.log", b""), "is empty"),
    (lambda p: _write(p / "bin.log", bytes(range(256)) * 64), "binary"),
    (lambda p: _write(p / "core", b"\x7fELF\x02\x01\x01" + bytes(100)), "ELF"),
    (lambda p: _write(p / "empty.log.gz", gzip.compress(b"")), "is empty"),
    (lambda p: _write(p / "bad.gz", b"\x1f\x8b" + b"not gzip at all" * 10), "cannot read"),
])
def test_bad_input_is_exit_2_with_one_line(tmp_path: Path, capsys, make, message: str) -> None:
    path = make(tmp_path)
    assert main(["diagnose", "--offline", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_invalid_utf8_long_lines_and_no_final_newline(tmp_path: Path) -> None:
    body = b"noise \xff\xfe\n" * 1000 + b"x" * (3 * MAX_LINE) + b" CUDA out of memory. Tried to allocate 2 GiB\n"
    body += b"\xc3(" * 10 + b"\nlast line ncclSystemError: System call (e.g. socket, malloc) or external library call failed"
    path = tmp_path / "odd.log"
    path.write_bytes(body)
    with open_log(str(path)) as log:
        result = scan([log], Matcher(load_matrix().signatures))
    assert result.lines == 1003
    assert result.by_signature["SIG017"].hits[0].line == 1001
    assert result.by_signature["SIG015"].hits[0].line == 1003


def test_line_numbers_across_chunks(tmp_path: Path, monkeypatch) -> None:
    import envcheck.diagnose.scan as scan_mod

    monkeypatch.setattr(scan_mod, "CHUNK", 4096)
    lines = [f"step {i} loss 1.0" for i in range(5000)]
    lines[3210] = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\n")
    with open_log(str(path)) as log:
        result = scan_mod.scan([log], Matcher(load_matrix().signatures))
    assert result.lines == 5000 and result.by_signature["SIG023"].hits[0].line == 3211


def test_stdin(monkeypatch, capsys) -> None:
    import io
    import sys

    data = (PUBLIC / "yuan-65-driver-too-old.log").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(data))))
    _, doc = run_json(capsys, "-")
    assert doc["causes"][0]["cause"] == "driver_too_old"


def test_a_fix_given_twice_is_printed_once() -> None:
    """A signature and a linked doctor finding often propose the same fix in other words or with the same commands."""
    from envcheck.checks.model import Fix
    from envcheck.diagnose.combine import _Draft, _freeze

    draft = _Draft("segfault_abi_mismatch", {"log": 0.9}, "t", "e")
    draft.fixes += [Fix("Rebuild flash-attn for this torch", ("pip install --no-build-isolation flash-attn",)),
                    Fix("Reinstall flash-attn against the installed torch", ("pip install --no-build-isolation flash-attn",)),
                    Fix("Rebuild flash-attn for this torch.", ()),
                    Fix("Upgrade the driver", ())]
    assert [f.summary for f in _freeze(draft).fixes] == ["Rebuild flash-attn for this torch", "Upgrade the driver"]


@pytest.mark.parametrize("chunk", [4096, 4099, 65536])
def test_lines_cut_by_chunk_ends_are_matched_once_and_numbered(tmp_path: Path, monkeypatch, chunk: int) -> None:
    """Chunks are matched in place (bounds, not copies): a line that a chunk's end cuts is joined with the next
    chunk's first line, and every hit keeps its number, wherever the cut falls."""
    import envcheck.diagnose.scan as scan_mod

    monkeypatch.setattr(scan_mod, "CHUNK", chunk)
    error = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    lines = [f"step {i} " + "x" * (i * 37 % 211) for i in range(6000)]
    where = sorted({(i * 977) % 6000 for i in range(1, 40)})
    for number in where:
        lines[number] = error
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines) + "\n")
    with open_log(str(path)) as log:
        result = scan_mod.scan([log], Matcher(load_matrix().signatures))
    hits = result.by_signature["SIG023"]
    assert result.lines == 6000 and hits.count == len(where)
    assert [h.line for h in hits.hits] == [n + 1 for n in (*where[:3], where[-1])]
    assert all(h.text == error for h in hits.hits)


def test_this_machines_own_kernel_log_blames_no_kill_it_cannot_tie_to_the_run() -> None:
    """The live dmesg holds every process's kills since boot (a test's cgroup, another user's job): a kill whose pid
    the log does not name, outside the run's window and without a SIGKILL of the run, is no cause of this log."""
    recorded = read_file(str(RECORDED / "dmesg-after-torchrun-oom.txt"))  # python3 pid 2610, a segfault-free log
    live = replace(recorded, source="dmesg")
    assert recorded.oom_kills and [c.cause for c in combine(None, {}, None, recorded, None, set())] == ["host_oom"]
    assert combine(None, {}, None, live, None, set()) == ()
    # the same kill still counts when the log names its pid, or the run died of SIGKILL
    assert combine(None, {}, None, live, None, {2610})[0].cause == "host_oom"
    assert combine(None, {}, interpret(-9), live, None, set())[0].cause == "host_oom"
    faults = read_file(str(RECORDED / "dmesg-segfaults.txt"))
    assert combine(None, {}, None, replace(faults, source="journalctl -k"), None, set()) == ()
    assert combine(None, {}, None, faults, None, set())[0].cause == "segfault_other"
