"""`envcheck guard` with real processes: an OOM kill in a real memory cgroup, a segfault, a SIGBUS on a full tmpfs,
a launcher reporting its worker's -9, a hang stopped with SIGINT, a SIGTERM to the guard. The guard exits with the
command's status every time. No mocks (NVML's stand-in is in test_guard_rules.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from conftest import REPO, memory_cgroup

QUICK = {"ENVCHECK_GUARD_NO_SNAPSHOT": "1"}  # the doctor snapshot is covered once (segfault); the rest go faster


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.update(extra or {})
    return env


def _guard(out: Path, *command: str, interval: str = "0.2", flags: tuple[str, ...] = (),
           env: dict[str, str] | None = None, timeout: float = 90) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = subprocess.run([sys.executable, "-m", "envcheck", "guard", "--json", "--interval", interval, "--out",
                           str(out), *flags, "--", *command], capture_output=True, text=True, timeout=timeout,
                          env=_env(env if env is not None else QUICK), cwd=out.parent)
    summary = json.loads(done.stdout) if done.stdout.strip() else {}
    return done, summary


def _postmortem(out: Path) -> dict:
    assert (out / "postmortem.md").is_file() and (out / "timeline.svg").read_text().startswith("<svg")
    return json.loads((out / "postmortem.json").read_text())


def _alerts(out: Path) -> list[dict]:
    path = out / "alerts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_clean_run_tees_its_output_and_leaves_no_postmortem(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done, summary = _guard(out, sys.executable, "-c", "import sys; print('to stdout'); print('to stderr', "
                                                      "file=sys.stderr); import time; time.sleep(0.5)")
    assert done.returncode == 0 and summary["status"] == 0 and summary["postmortem"] is None
    log = (out / "train.log").read_text()
    assert "to stdout" in log and "to stderr" in log
    assert "to stdout" in done.stderr  # with --json the command's output goes to stderr, stdout is the summary
    samples = [json.loads(line) for line in (out / "metrics").read_text().splitlines()]
    assert len(samples) >= 2 and samples[0]["tree_rss_bytes"] > 0 and samples[0]["mem_available_bytes"] > 0
    assert samples[0]["disk_total_bytes"] > 0 and samples[0]["processes"][0]["comm"]
    assert not (out / "postmortem.json").exists()


def test_the_exit_status_is_passed_through_and_explained(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done, _ = _guard(out, sys.executable, "-c", "import sys; print('Traceback (most recent call last):'); "
                                                "print('ValueError: bad config'); sys.exit(3)")
    assert done.returncode == 3
    pm = _postmortem(out)
    assert pm["status"] == 3 and pm["reasons"] == ["the command exited with status 3"]
    assert "ValueError: bad config" in pm["log_tail"]


def test_a_missing_command_is_127_like_a_shell(tmp_path: Path) -> None:
    done, _ = _guard(tmp_path / "run", "no-such-command-envcheck")
    assert done.returncode == 127 and "command not found" in done.stderr


def test_a_segfault_is_139_with_a_postmortem_and_doctor_findings(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done, _ = _guard(out, sys.executable, "-c", "import ctypes; ctypes.string_at(0)", env={})
    assert done.returncode == 139, done.stderr
    pm = _postmortem(out)
    assert pm["exit"]["signal"] == "SIGSEGV" and pm["diagnosis"]["signal"] == "SIGSEGV"
    assert pm["diagnosis"]["causes"][0]["cause"].startswith("segfault")
    command = [p for p in pm["processes"] if p["role"] == "command"][0]
    assert command["exit_code"] == -11 and command["signal"] == "SIGSEGV"
    assert any("Segmentation fault" in line for line in pm["log_tail"])  # PYTHONFAULTHANDLER's stack
    assert pm["findings"] and all({"id", "severity", "title"} <= set(f) for f in pm["findings"])
    assert "SIGSEGV" in (out / "postmortem.md").read_text()


_BUS = ("import mmap, os\nfd = os.open('/dev/shm/envcheck-bus', os.O_CREAT | os.O_RDWR)\nos.ftruncate(fd, 64 << 20)\n"
        "m = mmap.mmap(fd, 64 << 20)\nprint('writing 64 MB to a shared-memory buffer', flush=True)\n"
        "import time; time.sleep(0.5)\n"
        "for i in range(0, 64 << 20, 4096):\n    m[i] = 1\n")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare (a private "
                                                                                  "mount namespace for a tiny tmpfs)")
def test_a_sigbus_on_a_full_small_dev_shm_is_135_and_shm_too_small(tmp_path: Path) -> None:
    out = tmp_path / "run"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -m is not allowed here: {probe.stderr.decode().strip()}")
    script = f"mount -t tmpfs -o size=8m tmpfs /dev/shm && exec {sys.executable} -c \"$0\""
    done, _ = _guard(out, "unshare", "-m", "bash", "-c", script, _BUS, interval="0.1")
    assert done.returncode == 135, done.stderr
    pm = _postmortem(out)
    assert pm["exit"]["signal"] == "SIGBUS"
    first = pm["diagnosis"]["causes"][0]
    assert first["cause"] == "shm_too_small"
    guard = [e["text"] for e in first["evidence"] if e["source"] == "guard"]
    assert guard and "of 8 MiB" in guard[-1]  # the command's own /dev/shm, read through /proc/PID/root


def test_a_launcher_reporting_its_workers_minus_9_is_a_sigkilled_child_not_an_exit_247(tmp_path: Path) -> None:
    out = tmp_path / "run"
    worker = "import os, time; print('worker', os.getpid(), flush=True); time.sleep(0.8); os.kill(os.getpid(), 9)"
    launcher = ("import os, subprocess, sys, time\n"
                f"p = subprocess.Popen([sys.executable, '-c', {worker!r}], env=dict(os.environ, LOCAL_RANK='0'))\n"
                "rc = p.wait()\nprint(f'[launch.py] Process {p.pid} exits with return code = {rc}', flush=True)\n"
                "time.sleep(0.6)\nsys.exit(rc)\n")
    done, _ = _guard(out, sys.executable, "-c", launcher, interval="0.1")
    assert done.returncode == 247, done.stderr  # what the launcher's sys.exit(-9) really gives
    pm = _postmortem(out)
    assert "-9 modulo 256" in pm["exit"]["meaning"] and "killed by SIGKILL" in pm["exit"]["meaning"]
    assert pm["diagnosis"]["signal"] == "SIGKILL"
    worker_pid = int(next(line.split()[1] for line in pm["log_tail"] if line.startswith("worker ")))
    ends = {p["pid"]: p for p in pm["processes"]}
    assert ends[worker_pid]["role"] == "rank"
    assert ends[worker_pid]["exit_code"] == -9 and ends[worker_pid]["signal"] == "SIGKILL"
    assert any(a["rule"] == "rank_gone" for a in _alerts(out))


def _start(out: Path, *command: str) -> subprocess.Popen[str]:
    # SIGINT at its default in the guard (and so in the command): a test run started in the background by a
    # non-interactive shell inherits SIGINT ignored, and a command that ignores it never stops.
    guard = subprocess.Popen([sys.executable, "-m", "envcheck", "guard", "--json", "--interval", "0.2", "--out",
                              str(out), "--", *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=_env(QUICK), preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (out / "train.log").exists() and "ready" in (out / "train.log").read_text():
            return guard
        time.sleep(0.05)
    guard.kill()
    pytest.fail("the guarded command never became ready")


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_hang_stopped_by_a_signal_to_the_guard(tmp_path: Path, sent: signal.Signals, status: int) -> None:
    out = tmp_path / "run"
    guard = _start(out, sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)")
    guard.send_signal(sent)
    stdout, stderr = guard.communicate(timeout=60)
    assert guard.returncode == status, stderr
    pm = _postmortem(out)
    assert f"the guard received {sent.name} and forwarded it to the command's process group" in pm["reasons"]
    assert pm["exit"]["signal"] == sent.name and json.loads(stdout)["postmortem"]


# It waits a second before it grows: bash moves itself into the cgroup just before exec, and a guard sampler that
# is slow to start (a loaded CI machine) must see it there before the kill, as it sees any job started in one.
_HOG = ("import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(1)\nb = []\n"
        "while True:\n    b.append(bytearray(4 << 20))\n    time.sleep(0.05)\n")


def test_an_oom_kill_in_a_memory_cgroup_is_137_host_oom_after_a_growth_alert(tmp_path: Path) -> None:
    group = memory_cgroup("envcheck-guard-test")
    if group is None:
        pytest.skip("needs root and a cgroup v1 memory controller")
    out = tmp_path / "run"
    try:
        done, _ = _guard(out, "bash", "-c", f"echo $$ > {group}/cgroup.procs && exec {sys.executable} -c \"$0\"", _HOG)
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert done.returncode == 137, done.stderr
    pm = _postmortem(out)
    assert pm["oom"]["cgroup"] == str(group) and pm["oom"]["oom_kills_after"] > pm["oom"]["oom_kills_before"]
    first = pm["diagnosis"]["causes"][0]
    assert first["cause"] == "host_oom"
    assert any(e["source"] == "guard" and "oom_kill counter" in e["text"] for e in first["evidence"])
    growth = [a for a in _alerts(out) if a["rule"] == "host_memory_growth"]
    assert growth and growth[0]["elapsed"] < pm["duration_s"]  # the alert came before the death
    pid = int(next(line.split()[1] for line in pm["log_tail"] if line.startswith("pid ")))
    if pm["oom"]["kernel_unreadable"] is None:  # the kernel's record, matched by pid and time
        assert [k["pid"] for k in pm["oom"]["kernel"]] == [pid]
        assert any(e["source"] == "kernel" and f"Killed process {pid}" in e["text"] for e in first["evidence"])
    ends = {p["pid"]: p for p in pm["processes"]}
    assert ends[pid]["signal"] == "SIGKILL" and "OOM killer" in ends[pid]["how"]


class _Hook(BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _loopback_works(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:  # e.g. under `unshare -n`: the loopback device is down
        return False


def test_alerts_go_to_stderr_jsonl_webhook_and_command_once_per_cooldown(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('schema_version = 1\n[[rule]]\nid = "disk_any"\nkind = "threshold"\nmetric = "disk_ratio"\n'
                     'threshold = 0.0\ncooldown = "1h"\nsummary = "disk {value:.0%} used"\n')
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reachable = _loopback_works(server.server_port)
    _Hook.bodies.clear()
    marks = tmp_path / "on-alert.txt"
    out = tmp_path / "run"
    try:
        done, summary = _guard(out, sys.executable, "-c", "import time; time.sleep(1)", interval="0.1",
                               flags=("--rules", str(rules), "--webhook", f"http://127.0.0.1:{server.server_port}/",
                                      "--on-alert", f'echo "$ENVCHECK_ALERT_RULE" >> {marks}'))
    finally:
        server.shutdown()
    assert done.returncode == 0 and summary["samples"] >= 5
    assert done.stderr.count("ALERT [warning] disk_any: disk") == 1
    assert [a["rule"] for a in _alerts(out)] == ["disk_any"]
    assert marks.read_text() == "disk_any\n"
    if reachable:
        assert [json.loads(b)["rule"] for b in _Hook.bodies] == ["disk_any"]
    else:  # a webhook that cannot be reached is a note, never a failure of the run
        assert "webhook: URLError" in done.stderr
