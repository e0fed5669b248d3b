"""diagnose reads only this run's kernel events and cores: its time window (the log's stamps, --since/--until) and
its pids (the log's, --pid). The kernel logs are real recordings (tests/assets/diagnose/PROVENANCE.md); the logs
are written here in the line shapes of LLaMA-Factory, DeepSpeed, Python logging and transformers, stamped in this
machine's local time, as real logs are."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import memory_cgroup

from envcheck.cli import main
from envcheck.diagnose.kernel import read_file
from envcheck.diagnose.stamps import kernel_stamp, local

RECORDED = Path(__file__).parent / "assets" / "diagnose" / "recorded"
ISO_KILLS = RECORDED / "dmesg-iso-two-oom-kills.txt"  # python3 pid 17447, then tail pid 17516
MONO_KILL = RECORDED / "dmesg-after-torchrun-oom.txt"  # python3 pid 2610 at 1597.549 s after boot
KILL = datetime(2026, 12, 1, 8, 48, 28, 263651, tzinfo=timezone.utc)  # the python3 kill in ISO_KILLS
MONO_SECONDS = 1597.549


def steps_log(path: Path, start: datetime, end: datetime, every: timedelta = timedelta(seconds=30)) -> Path:
    """Healthy LLaMA-Factory training steps (its logger's format), stamped in local time from START to END."""
    lines, moment, step = [], start, 0
    while moment <= end:
        stamp = moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"[INFO|{stamp}] llamafactory.extras.callbacks:143 >> {{'loss': 1.{step % 97:04d}, "
                     f"'learning_rate': 4.9e-05, 'epoch': 0.{step:02d}, 'throughput': 1234.56}}")
        moment, step = moment + every, step + 1
    path.write_text("\n".join(lines) + "\n")
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["diagnose", "--offline", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def kernel_texts(doc: dict) -> list[str]:
    return [e["text"] for c in doc["causes"] for e in c["evidence"] if e["source"] == "kernel"]


def test_oom_kills_of_the_week_before_are_ignored(tmp_path: Path, capsys) -> None:
    log = steps_log(tmp_path / "train.log", KILL + timedelta(days=7), KILL + timedelta(days=7, hours=1))
    code, doc = run_json(capsys, str(log), "--kernel-log", str(ISO_KILLS))
    assert code == 0 and doc["causes"] == []
    [ignored] = doc["ignored"]
    assert (ignored["source"], ignored["kind"], ignored["reason"], ignored["count"]) == \
        ("kernel", "oom_kill", "before_window", 2)
    assert ignored["pids"] == [17447, 17516] and ignored["first"].startswith("2026-12-01T08:48:28")
    assert doc["window"]["since_from"] == "log" and doc["window"]["until_from"] == "log"
    main(["diagnose", "--offline", str(log), "--kernel-log", str(ISO_KILLS)])
    out = capsys.readouterr().out
    assert "No known cause recognised" in out and "2 OOM kills" in out and "before the run's window" in out


def test_a_kill_inside_the_window_is_still_host_oom(tmp_path: Path, capsys) -> None:
    # The log stops at the kill, as a killed run's log does; the kernel's record follows its last line.
    log = steps_log(tmp_path / "train.log", KILL - timedelta(minutes=20), KILL - timedelta(seconds=1))
    code, doc = run_json(capsys, str(log), "--kernel-log", str(ISO_KILLS))
    assert code == 1 and doc["causes"][0]["cause"] == "host_oom"
    assert any("Killed process 17447 (python3)" in t for t in kernel_texts(doc))
    assert doc["causes"][0]["confidence"] >= 0.85 and doc["ignored"] == []


def test_a_kill_long_after_the_log_ends_is_ignored(tmp_path: Path, capsys) -> None:
    log = steps_log(tmp_path / "train.log", KILL - timedelta(hours=2), KILL - timedelta(hours=1))
    code, doc = run_json(capsys, str(log), "--kernel-log", str(ISO_KILLS))
    assert code == 0 and [i["reason"] for i in doc["ignored"]] == ["after_window"]


def test_since_and_until_win_over_the_log(tmp_path: Path, capsys) -> None:
    log = steps_log(tmp_path / "train.log", KILL + timedelta(days=7), KILL + timedelta(days=7, hours=1))
    code, doc = run_json(capsys, str(log), "--kernel-log", str(ISO_KILLS), "--since", "2026-12-01T08:00:00Z")
    assert code == 1 and doc["causes"][0]["cause"] == "host_oom"
    assert doc["window"]["since_from"] == "--since" and doc["window"]["lower"] == "2026-12-01T08:00:00+00:00"
    code, doc = run_json(capsys, "--exit-code", "-9", "--kernel-log", str(ISO_KILLS),
                         "--since", "2026-12-01T08:48:29+00:00", "--until", "2026-12-01T08:49:00+00:00")
    assert [i["pids"] for i in doc["ignored"]] == [[17447]]  # only the tail kill is inside
    assert any("Killed process 17516 (tail)" in t for t in kernel_texts(doc))


def test_a_pid_that_does_not_match_is_ignored(capsys) -> None:
    code, doc = run_json(capsys, "--exit-code", "-9", "--kernel-log", str(ISO_KILLS), "--pid", "4242")
    assert kernel_texts(doc) == []
    assert [(i["reason"], i["count"]) for i in doc["ignored"]] == [("other_process", 2)]
    assert "the run's: 4242" in doc["ignored"][0]["detail"]
    assert doc["causes"][0]["cause"] == "host_oom" and doc["causes"][0]["confidence"] == 0.6  # the -9 alone
    _, doc = run_json(capsys, "--exit-code", "-9", "--kernel-log", str(ISO_KILLS), "--pid", "17447")
    assert [t.split(": ", 1)[1][:34] for t in kernel_texts(doc) if "Killed process" in t] == \
        ["Killed process 17447 (python3) tot"]
    assert [(i["reason"], i["pids"]) for i in doc["ignored"]] == [("other_process", [17516])]
    assert doc["causes"][0]["confidence"] > 0.95


def test_another_pid_inside_the_window_counts_only_for_a_training_process(tmp_path: Path, capsys) -> None:
    # A dataloader worker or a rank has its own pid: a python3 kill inside the window is kept, `tail`'s is not.
    log = steps_log(tmp_path / "train.log", KILL - timedelta(minutes=20), KILL)
    code, doc = run_json(capsys, str(log), "--kernel-log", str(ISO_KILLS), "--pid", "4242")
    assert code == 1 and any("Killed process 17447 (python3)" in t for t in kernel_texts(doc))
    assert [(i["reason"], i["pids"]) for i in doc["ignored"]] == [("other_process", [17516])]


def test_neither_window_nor_pids_keeps_every_event(capsys) -> None:
    code, doc = run_json(capsys, "--exit-code", "-9", "--kernel-log", str(ISO_KILLS))
    assert code == 1 and doc["ignored"] == [] and not doc["window"]["pids"]
    assert any("Killed process 17516" in t for t in kernel_texts(doc))


def test_without_window_or_pids_a_run_that_shows_its_own_error_is_not_blamed_on_the_kernel_log(
        tmp_path: Path, capsys) -> None:
    """A timestamp-less log that ends in its own traceback died of that; the machine's OOM kills cannot be placed in
    it. The same log ending abruptly (no error of its own) keeps them: they may be its death."""
    own = tmp_path / "own.log"
    own.write_text("epoch 1 step 10 loss 1.23\nTraceback (most recent call last):\n  File \"train.py\", line 88, "
                   "in <module>\n    main()\nKeyError: 'labels'\n", encoding="utf-8")
    code, doc = run_json(capsys, str(own), "--kernel-log", str(ISO_KILLS))
    assert code == 0 and doc["causes"] == [] and "KeyError" in doc["first_exception"]["text"]
    [ignored] = doc["ignored"]
    assert (ignored["kind"], ignored["reason"], ignored["count"]) == ("oom_kill", "window_unknown", 2)
    abrupt = tmp_path / "abrupt.log"
    abrupt.write_text("epoch 1 step 10 loss 1.23\nepoch 1 step 11 loss 1.21\n", encoding="utf-8")
    code, doc = run_json(capsys, str(abrupt), "--kernel-log", str(ISO_KILLS))
    assert doc["causes"][0]["cause"] == "host_oom" and doc["ignored"] == []


def test_pids_named_by_the_log_match_the_kernel(capsys) -> None:
    # DeepSpeed's launcher: "process 2994 spawned" and "Killing subprocess 2994"; the kernel killed 2994.
    code, doc = run_json(capsys, str(RECORDED / "deepspeed-oom.log"),
                         "--kernel-log", str(RECORDED / "dmesg-after-deepspeed-oom.txt"))
    assert 2994 in doc["window"]["pids"] and code == 1
    assert doc["causes"][0]["cause"] == "host_oom" and any("Killed process 2994" in t for t in kernel_texts(doc))


def test_monotonic_stamps_without_a_boot_time_are_not_filtered_by_time(tmp_path: Path, capsys) -> None:
    log = steps_log(tmp_path / "train.log", KILL + timedelta(days=7), KILL + timedelta(days=7, hours=1))
    code, doc = run_json(capsys, str(log), "--kernel-log", str(MONO_KILL))
    assert doc["ignored"] == [] and any("Killed process 2610" in t for t in kernel_texts(doc))
    assert any("seconds since boot" in n and "boot time is unknown" in n for n in doc["window"]["notes"])
    main(["diagnose", "--offline", str(log), "--kernel-log", str(MONO_KILL)])
    assert "not filtered by time" in capsys.readouterr().out


@pytest.mark.parametrize("days,cause", [(7, None), (0, "host_oom")])
def test_monotonic_stamps_with_a_boot_time_are_dated(tmp_path: Path, capsys, days: int, cause: str | None) -> None:
    kill = KILL - timedelta(days=days)
    boot = kill - timedelta(seconds=MONO_SECONDS)
    log = steps_log(tmp_path / "train.log", KILL - timedelta(minutes=10), KILL)
    code, doc = run_json(capsys, str(log), "--kernel-log", str(MONO_KILL), "--boot-time", boot.isoformat())
    assert doc["window"]["notes"] == []
    if cause is None:
        assert code == 0 and [(i["reason"], i["pids"]) for i in doc["ignored"]] == [("before_window", [2610])]
    else:
        assert code == 1 and doc["causes"][0]["cause"] == cause and doc["ignored"] == []


def test_kernel_records_carry_their_wall_time() -> None:
    kills = read_file(str(ISO_KILLS)).oom_kills
    assert [k.time for k in kills] == [KILL, datetime(2026, 12, 1, 8, 48, 29, 437891, tzinfo=timezone.utc)]
    events = read_file(str(MONO_KILL))
    assert events.clock == "monotonic" and events.oom_kills[-1].time is None
    boot = datetime(2026, 11, 29, 19, 20, tzinfo=timezone.utc)
    dated = read_file(str(MONO_KILL), boot).oom_kills[-1].time
    assert dated is not None and abs((dated - boot).total_seconds() - MONO_SECONDS) < 0.01


# The same record as each tool prints it: dmesg --time-format iso, journalctl -o short-iso, rsyslog's kern.log,
# dmesg -T, journalctl -o short (no year), plain dmesg.
MESSAGE = "Memory cgroup out of memory: Killed process 17447 (python3) total-vm:221464kB, anon-rss:204160kB"


@pytest.mark.parametrize("line,expected", [
    (f"2026-12-01T08:48:28,263651+00:00 {MESSAGE}", KILL),
    (f"2026-12-01T10:48:28+0200 node17 kernel: {MESSAGE}", KILL.replace(microsecond=0)),
    (f"2026-12-01T08:48:28.263651+00:00 node17 kernel: [ 1597.549014] {MESSAGE}", KILL),
    (f"[Tue Dec  1 08:48:28 2026] {MESSAGE}", "local"),
    (f"Dec  1 08:48:28 node17 kernel: {MESSAGE}", "local"),
])
def test_kernel_stamp_shapes(line: str, expected: object) -> None:
    moment, clock = kernel_stamp(line, None, datetime(2026, 12, 5, tzinfo=timezone.utc))
    assert clock == "wall"
    assert moment == (local(2026, 12, 1, 8, 48, 28) if expected == "local" else expected)


def test_plain_dmesg_stamp_needs_the_boot_time() -> None:
    line = f"[ 1597.551401] {MESSAGE}"
    assert kernel_stamp(line, None, None) == (None, "monotonic")
    boot = datetime(2026, 12, 1, 8, 21, 51, tzinfo=timezone.utc)
    moment, _ = kernel_stamp(line, boot, None)
    assert moment == boot + timedelta(seconds=1597.551401)


@pytest.mark.parametrize("line,offset", [
    ("2026-11-30 12:34:56,123 - INFO - __main__ - loading the model", None),  # Python logging
    ("2026-11-30T12:34:56 step 10 loss 1.25", None),
    ("[2026-11-30 12:34:56,123] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda",
     None),  # DeepSpeed
    ("[INFO|2026-11-30 12:34:56] llamafactory.hparams.parser:355 >> Process rank: 0, world size: 1", None),
    ("11/30/2026 12:34:56 - INFO - transformers.training_args - PyTorch: setting up devices", None),
    ("[rank0]: 2026-11-30 12:34:56 - INFO - step 10", None),  # torchrun's rank prefix
    ("2026-11-30T12:34:56+05:30 step 10 loss 1.25", "+05:30"),
])
def test_log_stamp_shapes(tmp_path: Path, capsys, line: str, offset: str | None) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"{line}\n{{'loss': 1.2, 'epoch': 0.1}}\n")
    _, doc = run_json(capsys, str(log))
    assert doc["window"]["since"] == local(2026, 11, 30, 12, 34, 56, 0, offset).isoformat(timespec="seconds")


def test_dates_quoted_inside_a_message_are_not_the_run_s_time(tmp_path: Path, capsys) -> None:
    log = tmp_path / "train.log"
    log.write_text("[INFO|2026-11-30 12:34:56] llamafactory.data.loader:143 >> Loading dataset "
                   "snapshot_2024-01-01 00:00:00 from the hub\n")
    _, doc = run_json(capsys, str(log))
    assert doc["window"]["since"] == doc["window"]["until"] == local(2026, 11, 30, 12, 34, 56).isoformat()


def test_log_time_is_local_time(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same instant written by a machine in UTC+05:30: the kill at 08:48 UTC is 14:18 there."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    try:
        log = tmp_path / "train.log"
        log.write_text("[INFO|2026-12-01 14:00:00] llamafactory.extras.callbacks:143 >> {'loss': 1.2}\n"
                       "[INFO|2026-12-01 14:18:27] llamafactory.extras.callbacks:143 >> {'loss': 1.1}\n")
        code, doc = run_json(capsys, str(log), "--kernel-log", str(ISO_KILLS))
        assert code == 1 and doc["window"]["since"] == "2026-12-01T14:00:00+05:30"
        assert any("Killed process 17447" in t for t in kernel_texts(doc))
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.parametrize("argv,message", [
    (["--since", "yesterday"], "argument --since: 'yesterday' is not an ISO date"),
    (["--until", "2026-13-40"], "argument --until: '2026-13-40' is not an ISO date"),
    (["--boot-time", "12345.6"], "argument --boot-time"),
    (["--pid", "abc"], "argument --pid: 'abc' is not a process id"),
    (["--pid", "0"], "argument --pid: '0' is not a process id"),
    (["--pid", "-5"], "argument --pid"),
    (["--since", "2026-12-02", "--until", "2026-12-01"], "is after --until"),
])
def test_bad_window_values_are_exit_2_with_one_line(capsys, argv: list[str], message: str) -> None:
    assert main(["diagnose", "--offline", "--exit-code", "-9", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _allow_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


@needs_gcc
def test_a_core_written_before_the_run_is_not_picked_up(tmp_path: Path, capsys) -> None:
    (tmp_path / "crash.c").write_text("int main(void) { return *(volatile int *)0; }\n")
    subprocess.run(["gcc", "-o", "crasher", "crash.c"], cwd=tmp_path, check=True)
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.skip("core dumps are forbidden by the hard limit")
    assert subprocess.run(["./crasher"], cwd=tmp_path, preexec_fn=_allow_core).returncode == -11
    cores = [p for p in tmp_path.iterdir() if p.name.startswith("core")]
    if not cores:
        pytest.skip("core_pattern does not write a core into the working directory here")
    week_ago = time.time() - 7 * 86400
    os.utime(cores[0], (week_ago, week_ago))
    now = datetime.now(timezone.utc)
    log = steps_log(tmp_path / "train.log", now - timedelta(minutes=5), now)
    with open(log, "a") as handle:
        handle.write("bash: line 1:  4242 Segmentation fault      python train.py\n")
    code = main(["diagnose", "--json", str(log), "--kernel-log", str(ISO_KILLS)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["signal"] == "SIGSEGV"
    assert [(i["kind"], i["reason"], i["count"]) for i in doc["ignored"] if i["source"] == "core"] == \
        [("core", "before_window", 1)]
    assert not any(e["source"] == "core" for c in doc["causes"] for e in c["evidence"])
    assert any(s["source"] == "core" and "inside the run's window" in s["reason"] for s in doc["skipped"])


def test_real_oom_kill_read_from_this_machine_s_kernel_log(tmp_path: Path, capsys) -> None:
    """A real kill in a memory cgroup, read back from the live dmesg (with its wall-clock stamps): diagnose finds
    this kill, and keeps no record from outside the log's window (other tests on this machine kill processes too,
    and one may fall inside it)."""
    group = memory_cgroup("envcheck-window")
    if group is None:
        pytest.skip("needs root and a cgroup v1 memory controller")
    if subprocess.run(["dmesg", "--time-format", "iso"], capture_output=True).returncode != 0:
        pytest.skip("dmesg --time-format iso is not allowed here")
    hog = ("import logging, os, time\n"
           "logging.basicConfig(format='[%(levelname)s|%(asctime)s] %(name)s:%(lineno)s >> %(message)s',"
           " datefmt='%Y-%m-%d %H:%M:%S', level=logging.INFO)\n"
           "log = logging.getLogger('train')\nlog.info('Process rank: 0, pid=%d', os.getpid())\n"
           "b = []\nwhile True:\n    b.append(bytearray(8 << 20))\n    log.info(\"{'loss': 1.2}\")\n")
    try:
        done = subprocess.run(["bash", "-c", f"echo $$ > {group}/cgroup.procs; {sys.executable} -c \"$0\"; true",
                               hog], capture_output=True, timeout=120)
    finally:
        try:
            group.rmdir()
        except OSError:
            pass
    log = tmp_path / "run.log"
    log.write_bytes(done.stdout + done.stderr)
    pid = int(done.stderr.split(b"pid=")[1].split()[0])
    time.sleep(0.5)
    code = main(["diagnose", "--json", str(log)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["causes"][0]["cause"] == "host_oom" and pid in doc["window"]["pids"]
    killed = [t for t in kernel_texts(doc) if "Killed process" in t]
    assert any(f"Killed process {pid} " in t for t in killed)
    lower, upper = (datetime.fromisoformat(doc["window"][k]) for k in ("lower", "upper"))
    for text in kernel_texts(doc):
        moment, clock = kernel_stamp(text, None, None)
        assert clock == "wall" and moment is not None and lower <= moment <= upper + timedelta(seconds=1)


@pytest.mark.parametrize(("after_kill", "kept"), [(-20, [17447]), (60, [17447]), (600, [])])
def test_a_log_without_stamps_beside_this_machine_s_kernel_log_ends_at_its_last_write(
        tmp_path: Path, after_kill: int, kept: list[int]) -> None:
    """A nohup log has no stamps, but the kill ended it: its mtime dates the run's end. python3 17447 was killed at
    08:48:28 UTC; a log last written 20 s before it (output still buffered) or 60 s after is the run's, one written
    10 minutes later is not (an excerpt saved after the fact, another run)."""
    from envcheck.diagnose import window

    log = tmp_path / "nohup.out"
    log.write_text("step 100 loss 1.2\nstep 200 loss 1.1\n", encoding="utf-8")
    kill = datetime(2026, 12, 1, 8, 48, 28, tzinfo=timezone.utc)
    moment = (kill + timedelta(seconds=after_kill)).timestamp()
    os.utime(log, (moment, moment))
    run = window.from_last_write(window.build(None, None, None), [str(log)])
    assert run.until_from == "mtime" and run.upper - run.lower == window.BEFORE + window.AFTER
    events, ignored, _ = window.judge(read_file(str(ISO_KILLS)), run)
    assert [k.pid for k in events.oom_kills if k.comm == "python3"] == kept
    assert not kept or events.timed
    # a window the logs' stamps or --since/--until give stays as it is; stdin has no mtime
    timed = window.build(None, kill, None)
    assert window.from_last_write(timed, [str(log)]) is timed
    assert not window.from_last_write(window.build(None, None, None), ["-"]).timed


def _diagnose_beside_recorded_kernel(monkeypatch: pytest.MonkeyPatch, log: Path, kill_offset: int):
    """diagnose LOG as on the machine whose kernel log is ISO_KILLS, LOG last written KILL_OFFSET seconds after the
    python3 kill."""
    from envcheck.diagnose import kernel
    from envcheck.diagnose.engine import Request, diagnose

    moment = (KILL + timedelta(seconds=kill_offset)).timestamp()
    os.utime(log, (moment, moment))
    monkeypatch.setattr(kernel, "read_system", lambda **_: (read_file(str(ISO_KILLS)), None))
    return diagnose(Request(logs=(str(log),), system=True))


@pytest.mark.parametrize(("log_pid", "after_kill"), [
    (17447, 3600),  # the killed rank's pid: its kernel record is the run's although the log was copied an hour after
    (17400, 20),  # another pid (a dataloader worker, python3 17447) killed about the log's last write: run-like
])
def test_a_kill_of_the_run_is_the_run_s_by_its_pid_or_by_the_last_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_pid: int, after_kill: int) -> None:
    """torchrun names a rank's pid. The kernel's record of that pid is the run's whatever the log's mtime says (a
    copied or appended-to log's last write is no end of the run); a run-like process killed inside the window the
    last write gives is the run's too, though its pid is not the one the log names."""
    log = tmp_path / "train.log"
    log.write_text("step 100 loss 1.2\ntorch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
                   f"local_rank: 0 (pid: {log_pid}) of binary: /usr/bin/python3\n", encoding="utf-8")
    result = _diagnose_beside_recorded_kernel(monkeypatch, log, after_kill)
    assert result.causes[0].cause == "host_oom"
    assert any(e.source == "kernel" and "17447" in e.text for e in result.causes[0].evidence)


def test_a_log_with_its_own_exception_takes_no_unplaced_kill_by_its_last_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log without stamps or pids that ends in its own exception: a kill on this machine near its last write is
    another process's, not a cause to put before the exception."""
    log = tmp_path / "train.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                   "    import flash_attn\nModuleNotFoundError: No module named 'flash_attn'\n", encoding="utf-8")
    result = _diagnose_beside_recorded_kernel(monkeypatch, log, 20)
    assert "host_oom" not in [c.cause for c in result.causes]
    assert any(i.reason == "window_unknown" for i in result.ignored)
