"""The scene, saved: after an abnormal end, who died of what, the OOM killer's record, the log's last lines, the
memory timeline, a fresh snapshot's doctor findings and diagnose's causes with the guard's evidence added."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from envcheck.diagnose import exitcodes
from envcheck.diagnose.kernel import KernelEvents, OomKill
from envcheck.diagnose.model import Cause, Diagnosis, Evidence, Fix
from envcheck.guard.model import Postmortem, ProcEnd, Sample
from envcheck.guard.runner import Config, Result
from envcheck.guard.samplers import read_cgroup

TAIL_LINES = 60
TIMELINE = 120


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).astimezone().isoformat(timespec="milliseconds")


def read_kernel() -> tuple[KernelEvents | None, str | None]:
    from envcheck.diagnose.kernel import read_system

    events, why = read_system(timeout=5.0)
    return events, why.reason if why else None


def run_kills(result: Result, events: KernelEvents | None) -> tuple[OomKill, ...]:
    """The kernel's OOM kills of the run's pids, inside the run's time (records without a time: by pid alone)."""
    if events is None:
        return ()
    lower = datetime.fromtimestamp(result.started - 2, timezone.utc)
    upper = datetime.fromtimestamp(result.ended + 10, timezone.utc)
    return tuple(k for k in events.oom_kills if (k.pid in result.seen or k.pid == result.pid)
                 and (k.time is None or lower <= k.time <= upper))


def cgroup_kills(result: Result) -> tuple[str, int, int] | None:
    """(cgroup, counter when first seen, counter at the end) when the cgroup's oom_kill counter went up."""
    # the last sample that read a cgroup's counter (a read can fail once the command and its cgroup are gone)
    last = next((s for s in reversed(result.samples) if s.cgroup is not None and s.cgroup_oom_kills is not None), None)
    if last is None:
        return None
    before = result.first_oom.get(last.cgroup, last.cgroup_oom_kills)
    # Read once more: the kernel counts the kill just after sending SIGKILL, so the last sample may be too early.
    version = "v1" if last.cgroup.startswith("/sys/fs/cgroup/memory/") else "v2"
    now = read_cgroup(version, last.cgroup)[2]
    after = max(last.cgroup_oom_kills, now if now is not None else 0)
    return (last.cgroup, before, after) if after > before else None


def reasons(result: Result, kills: tuple[OomKill, ...]) -> tuple[str, ...]:
    """Why this end is abnormal; empty for a clean exit."""
    found = []
    if result.returncode < 0:
        found.append(f"the command was killed by {exitcodes.signal_name(-result.returncode) or -result.returncode}")
    elif result.returncode:
        found.append(f"the command exited with status {result.returncode}")
    for name in dict.fromkeys(result.signals):
        found.append(f"the guard received {name} and forwarded it to the command's process group")
    counted = cgroup_kills(result)
    if counted:
        found.append(f"the OOM killer struck in memory cgroup {counted[0]} (oom_kill {counted[1]} -> {counted[2]})")
    for kill in kills:
        found.append(f"the kernel's OOM killer killed pid {kill.pid} ({kill.comm}) of the run")
    return tuple(found)


def _decode_exit(returncode: int, status: int, launcher: list[tuple[str, exitcodes.ExitInfo]]) -> dict[str, Any]:
    info = exitcodes.interpret(returncode)
    meaning = info.meaning
    if returncode > 128 and exitcodes.signal_name(256 - returncode):
        name = exitcodes.signal_name(256 - returncode)
        reported = [i for _, i in launcher if i.code == returncode - 256]
        meaning += (f"; {returncode} is also -{256 - returncode} modulo 256: a launcher that passes its child's "
                    f"-{256 - returncode} to sys.exit() exits {returncode}")
        if reported:
            meaning += f" — the log shows it did: a child was killed by {name}, it did not exit {returncode}"
    return {"returncode": returncode, "status": status, "signal": info.signal, "meaning": meaning}


def _wait_status(status: int) -> tuple[int, str | None]:
    if status & 0x7F:
        return -(status & 0x7F), exitcodes.signal_name(status & 0x7F)
    return (status >> 8) & 0xFF, None


def _processes(result: Result, kills: tuple[OomKill, ...],
               launcher: list[tuple[str, exitcodes.ExitInfo]]) -> tuple[ProcEnd, ...]:
    killed = {k.pid: k for k in kills}
    by_pid = {pid: (line, info) for line, info in launcher for pid in exitcodes.pids(line)}
    unclaimed = [(line, info) for line, info in launcher if not exitcodes.pids(line)]
    ends = []
    for pid, seen in sorted(result.seen.items()):
        role = "command" if pid == result.pid else "rank" if seen.get("rank") is not None else "child"
        evidence: list[str] = []
        code: int | None = None
        name: str | None = None
        if pid == result.pid:
            code = result.returncode
            name = exitcodes.signal_name(-code) if code < 0 else None
            how = exitcodes.interpret(code).meaning
            evidence.append(f"waitpid() of the guard: {code}")
        elif seen.get("exit_code") is not None:
            code, name = _wait_status(int(seen["exit_code"]))
            how = f"exited {code}" + (f" (killed by {name})" if name else "")
            evidence.append(f"/proc/{pid}/stat of the zombie: wait status {seen['exit_code']}")
        elif pid in by_pid:
            line, info = by_pid[pid]
            code, name, how = info.code, info.signal, f"its launcher reports: {info.meaning}"
            evidence.append(line.strip())
        elif unclaimed and seen.get("ppid") == result.pid and seen.get("last", 0) < result.ended - 1e-3:
            line, info = unclaimed[0]
            code, name = info.code, info.signal
            how = f"its parent (the command) reports a child's {info.code}: killed by {info.signal}" \
                if info.signal else f"its parent reports: {info.meaning}"
            evidence.append(line.strip())
        else:
            how = "ended with the command" if seen.get("last", 0) >= result.ended - 60 else "exited during the run"
        if pid in killed:
            code, name = -9, "SIGKILL"
            how = f"killed by the kernel's OOM killer ({killed[pid].reason})"
            evidence.append(killed[pid].text)
        if role == "child" and not evidence and len(result.seen) > 20:
            continue
        ends.append(ProcEnd(pid, str(seen.get("comm", "")), role, seen.get("first"), seen.get("last"), code, name,
                            how, tuple(evidence)))
    return tuple(ends)


def _reports_child(line: str) -> bool:
    """A launcher's report of a child's end (torchrun, deepspeed, subprocess), not a shell's or faulthandler's."""
    return any(pattern.search(line) for pattern in exitcodes._PATTERNS)  # noqa: SLF001


def _log_tail(path: str) -> tuple[str, ...]:
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - 65536))
            data = handle.read()
    except OSError:
        return ()
    return tuple(line.decode("utf-8", "replace") for line in data.splitlines()[-TAIL_LINES:])


def compact(sample: Sample) -> dict[str, Any]:
    return {"elapsed": sample.elapsed, "tree_rss_bytes": sample.tree_rss_bytes,
            "cgroup_usage_bytes": sample.cgroup_usage_bytes, "cgroup_limit_bytes": sample.cgroup_limit_bytes,
            "mem_available_bytes": sample.mem_available_bytes, "shm_used_bytes": sample.shm_used_bytes,
            "shm_total_bytes": sample.shm_total_bytes, "processes": len(sample.processes),
            "gpu_used_bytes": [g.used_bytes for g in sample.gpus]}


def _gb(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.2f} GiB"


def guard_evidence(result: Result, diagnosis: Diagnosis) -> tuple[Cause, ...]:
    """diagnose's causes with what only the guard saw added (source "guard"); a cause it alone proves is added."""
    extra: dict[str, list[str]] = {}
    counted = cgroup_kills(result)
    samples = result.samples
    if counted:
        extra.setdefault("host_oom", []).append(
            f"memory cgroup {counted[0]}: oom_kill counter {counted[1]} -> {counted[2]} during the run")
    if samples and (counted or diagnosis.signal == "SIGKILL"):
        first, last = samples[0], samples[-1]
        peak = max(samples, key=lambda s: s.tree_rss_bytes)
        extra.setdefault("host_oom", []).append(
            f"the run's RSS went from {_gb(first.tree_rss_bytes)} to a peak of {_gb(peak.tree_rss_bytes)} at "
            f"+{peak.elapsed:.1f} s; cgroup limit {_gb(last.cgroup_limit_bytes)}; MemAvailable at the end "
            f"{_gb(last.mem_available_bytes)}")
    for alert in result.alerts:
        cause = {"host_memory_growth": "host_oom", "host_oom_soon": "host_oom", "host_oom_kill": "host_oom",
                 "shm_high": "shm_too_small", "disk_high": "disk_full", "gpu_xid": "gpu_xid",
                 "gpu_memory_high": "gpu_oom"}.get(alert.rule)
        if cause:
            extra.setdefault(cause, []).append(f"alert {alert.rule} at +{alert.elapsed:.1f} s: {alert.message}")
    if samples and samples[-1].shm_total_bytes:
        peak_shm = max((s.shm_used_bytes or 0) for s in samples)
        extra.setdefault("shm_too_small", []).append(
            f"the command's /dev/shm: {_gb(peak_shm)} used at most of {_gb(samples[-1].shm_total_bytes)}")
    causes = list(diagnosis.causes)
    for n, cause in enumerate(causes):
        if cause.cause in extra:
            added = tuple(Evidence("guard", None, text) for text in extra[cause.cause])
            causes[n] = replace(cause, evidence=cause.evidence + added)
    present = {c.cause for c in causes}
    if counted and "host_oom" not in present:
        causes.append(Cause("host_oom", 0.9, "Killed by the OOM killer (memory cgroup limit)",
                            "The guard saw the OOM-kill counter of the run's memory cgroup go up: the kernel killed "
                            "a process of the run because the cgroup's memory limit was reached.",
                            tuple(Evidence("guard", None, t) for t in extra["host_oom"]),
                            (Fix("Raise the memory limit of the job/container, or lower host memory use "
                                 "(fewer dataloader workers, no CPU offload, smaller checkpoint gathers)."),)))
    return tuple(sorted(causes, key=lambda c: -c.confidence))


def build(config: Config, result: Result, why: tuple[str, ...], kills: tuple[OomKill, ...],
          kernel_why: str | None, capture: Callable[[], object] | None) -> Postmortem:
    from envcheck.diagnose.engine import Request, diagnose
    from envcheck.diagnose.render import to_dict
    from envcheck.redact import Redactor

    log = os.path.join(config.out_dir, "train.log")
    tail = _log_tail(log)
    launcher = [(line, info) for line in tail if _reports_child(line) and (info := exitcodes.from_text(line))
                is not None and info.code is not None and info.code < 0]
    exit_doc = _decode_exit(result.returncode, result.status, launcher)
    pids = tuple(sorted({result.pid, *result.seen}))
    # A launcher's report of its child's -N says more than its own exit 247: let diagnose read it from the log.
    code = None if launcher and result.returncode > 0 else result.returncode
    logs = (log,) if os.path.exists(log) and os.path.getsize(log) else ()
    request = Request(logs, code, system=True, probe=capture is not None,
                      since=datetime.fromtimestamp(result.started, timezone.utc) - timedelta(seconds=2),
                      until=datetime.fromtimestamp(result.ended, timezone.utc) + timedelta(seconds=10), pids=pids)
    snapshot: list[object] = []

    def keep() -> object:
        snapshot.append(capture() if capture else None)
        return snapshot[-1]

    diagnosis = diagnose(request, None, keep if capture else None)
    diagnosis = replace(diagnosis, causes=guard_evidence(result, diagnosis))
    findings: tuple[dict[str, Any], ...] = ()
    if snapshot and snapshot[0] is not None:
        from envcheck.checks import run_checks
        from envcheck.matrix import load_matrix

        findings = tuple({"id": f.id, "severity": f.severity.label, "category": f.category, "title": f.title,
                          "detail": f.detail} for f in sorted(run_checks(snapshot[0], load_matrix(None)),  # type: ignore[arg-type]
                                                              key=lambda f: f.sort_key()))
    counted = cgroup_kills(result)
    oom = None
    if counted or kills:
        oom = {"cgroup": counted[0] if counted else None, "oom_kills_before": counted[1] if counted else None,
               "oom_kills_after": counted[2] if counted else None,
               "kernel": [{"pid": k.pid, "comm": k.comm, "reason": k.reason, "anon_rss_kb": k.anon_rss_kb,
                           "limit_kb": k.limit_kb, "memcg": k.memcg, "time": k.time.isoformat() if k.time else None,
                           "text": k.text} for k in kills],
               "kernel_unreadable": kernel_why}
    redact = Redactor()
    return Postmortem(tuple(redact.text(a) for a in config.command), _iso(result.started), _iso(result.ended),
                      round(result.ended - result.started, 3), result.status, exit_doc, why,
                      _processes(result, kills, launcher), oom, tuple(redact.text(line) for line in tail),
                      tuple(compact(s) for s in result.samples[-TIMELINE:]), result.alerts,
                      redact.tree(to_dict(diagnosis)), findings, result.notes)
