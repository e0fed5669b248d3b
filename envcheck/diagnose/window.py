"""Which kernel events and cores are this run's: its time window and its process ids.

Why: a machine's kernel log holds every process's history since boot. On a shared node, last week's OOM kill of
somebody else's job must not become the cause of today's run.

The rule, for each OOM kill or segfault:
1. Outside the window (the logs' first stamp minus BEFORE to their last stamp plus AFTER, since the kill ends the
   log; or --since/--until exactly), it is ignored, whatever its pid.
2. When the run's pids are known (--pid, or the log names them): an event of one of them is kept; an event of
   another pid is kept only when its command looks like a training process (python, pt_main_thread, deepspeed,
   torchrun, ...: a dataloader worker or a rank has its own pid) AND its time is known to be inside the window.
   Otherwise it is ignored as another process's.
3. An event whose time is unknown (seconds since boot and no boot time) is not judged by time.
4. With neither a window nor pids, every event is kept (and counts little unless the exit status agrees),
   unless the logs show the run's own error (a real exception, not a launcher's summary): then the run died of
   that, and an OOM kill or segfault that cannot be placed in its time is another process's history (ignored,
   reason "window_unknown").
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Sequence

from envcheck.diagnose.kernel import KernelEvents
from envcheck.diagnose.model import Ignored, RunWindow, ScanResult
from envcheck.diagnose.stamps import show

BEFORE = timedelta(minutes=1)  # clocks of the log and the kernel may differ a little
AFTER = timedelta(minutes=2)  # a kill ends the log: the kernel's record follows its last line
NO_STAMPS = "the logs carry no timestamps: "  # the start of build's note and of from_last_write's, which replaces it
_RUN_LIKE = re.compile(r"^(python[\d.]*|pt_main_thread|pt_autograd_\d+|pt_data_worker|torchrun|deepspeed|accelerate|"
                       r"llamafactory-cl|llamafactory|ray::.*|ds_.*|trainer|train.*)$", re.I)


def run_like(comm: str) -> bool:
    """A process name a training run's own processes carry (the kernel keeps 15 characters of it)."""
    return bool(_RUN_LIKE.match(comm.strip()))


def build(scan: ScanResult | None, since: datetime | None, until: datetime | None,
          pids: Sequence[int] = ()) -> RunWindow:
    """The window: --since/--until win over the logs' stamps, which are widened by the margins."""
    log_first = scan.first_time if scan else None
    log_last = scan.last_time if scan else None
    lower_from = "--since" if since else "log" if log_first else None
    upper_from = "--until" if until else "log" if log_last else None
    lower = since or (log_first - BEFORE if log_first else None)
    upper = until or (log_last + AFTER if log_last else None)
    run_pids = frozenset(pids) | (scan.pids if scan else frozenset())
    notes = []
    if scan and scan.files and log_first is None and not (since or until):
        notes.append(NO_STAMPS + "the run's time window is not known (give --since/--until)")
    return RunWindow(since or log_first, until or log_last, lower_from, upper_from, lower, upper, run_pids,
                     tuple(notes))


def from_last_write(run: RunWindow, paths: Sequence[str]) -> RunWindow:
    """Logs without stamps beside this machine's own kernel log: a kill ends the log, so the run ended about when its
    newest log was last written (its mtime), and the window is that moment widened by the margins. Without it every
    kill since boot would be judged as if it could be the run's."""
    if run.timed:
        return run
    try:
        newest = max(os.stat(path).st_mtime for path in paths)
    except (OSError, ValueError):  # stdin, a path gone, no logs
        return run
    end = datetime.fromtimestamp(newest).astimezone()
    notes = tuple(n for n in run.notes if not n.startswith(NO_STAMPS))
    notes += (NO_STAMPS + f"the run's end is taken as the newest log's last write ({show(end)})",)
    return replace(run, until=end, until_from="mtime", lower=end - BEFORE, upper=end + AFTER,
                   notes=notes)


def judge(events: KernelEvents, window: RunWindow,
          own_error: bool = False) -> tuple[KernelEvents, tuple[Ignored, ...], tuple[str, ...]]:
    """Keep the run's events (rule in the module docstring); count the rest per kind and reason. OWN_ERROR: the
    logs show a real exception of their own."""
    notes: list[str] = []
    if not window.timed and not window.pids:
        if not own_error or not (events.oom_kills or events.segfaults):
            return events, (), ()
        placed = (("oom_kill", events.oom_kills), ("segfault", events.segfaults))
        ignored = tuple(_ignored(kind, "window_unknown", [(r.time, r.pid) for r in records], window)  # type: ignore
                        for kind, records in placed if records)
        return replace(events, oom_kills=(), segfaults=()), ignored, ()
    if window.timed and events.clock == "monotonic" and events.boot is None and (events.oom_kills or events.segfaults):
        notes.append(f"{events.source} is stamped in seconds since boot and its boot time is unknown: its events "
                     f"are not filtered by time (give --boot-time, or save it with `dmesg --time-format iso`)")
    groups: dict[tuple[str, str], list[tuple[datetime | None, int]]] = {}
    kept: dict[str, list[object]] = {"oom_kill": [], "segfault": []}
    for kind, records in (("oom_kill", events.oom_kills), ("segfault", events.segfaults)):
        for record in records:
            reason = _reason(record.time, record.pid, record.comm, window)  # type: ignore[attr-defined]
            if reason is None:
                kept[kind].append(record)
            else:
                groups.setdefault((kind, reason), []).append((record.time, record.pid))  # type: ignore[attr-defined]
    ignored = tuple(_ignored(kind, reason, items, window) for (kind, reason), items in sorted(groups.items()))
    judged = replace(events, oom_kills=tuple(kept["oom_kill"]), segfaults=tuple(kept["segfault"]),  # type: ignore[arg-type]
                     timed=window.timed)
    return judged, ignored, tuple(notes)


def _reason(moment: datetime | None, pid: int, comm: str, window: RunWindow) -> str | None:
    inside = None
    if pid in window.pids and window.until_from == "mtime" and run_like(comm):
        # the log's own pid, still a run's process (a reused pid is another program's): a copied or appended-to
        # log's last write is no end of the run
        return None
    if moment is not None and window.timed:
        if window.lower is not None and moment < window.lower:
            return "before_window"
        if window.upper is not None and moment > window.upper:
            return "after_window"
        inside = True
    if window.pids and pid not in window.pids and not (inside and run_like(comm)):
        return "other_process"
    return None


_WORDS = {"oom_kill": ("OOM kill", "OOM kills"), "segfault": ("segfault", "segfaults"), "core": ("core", "cores")}


def _ignored(kind: str, reason: str, items: list[tuple[datetime | None, int]], window: RunWindow) -> Ignored:
    times = sorted(t for t, _ in items if t is not None)
    pids = tuple(sorted({p for _, p in items}))
    first, last = (times[0], times[-1]) if times else (None, None)
    return Ignored("core" if kind == "core" else "kernel", kind, reason, len(items), first, last, pids,
                   describe(kind, reason, len(items), first, last, pids, window))


def describe(kind: str, reason: str, count: int, first: datetime | None, last: datetime | None,
             pids: tuple[int, ...], window: RunWindow) -> str:
    """"3 OOM kills (2026-11-23T10:00:00+00:00 .. 2026-11-23T11:00:00+00:00) before the run's window (from
    2026-11-30T12:33:56+00:00) ignored"."""
    noun = _WORDS[kind][0 if count == 1 else 1]
    span = "" if first is None else f" ({show(first)})" if first == last else f" ({show(first)} .. {show(last)})"
    if reason == "before_window":
        why = f"before the run's window (from {show(window.lower)})"
    elif reason == "after_window":
        why = f"after the run's window (until {show(window.upper)})"
    elif reason == "window_unknown":
        why = "that cannot be placed in the run (no timestamps or pids in the logs, which show the run's own error)"
    else:
        shown = ", ".join(str(p) for p in pids[:5]) + (", ..." if len(pids) > 5 else "")
        run = ", ".join(str(p) for p in sorted(window.pids)[:5]) + (", ..." if len(window.pids) > 5 else "")
        why = f"of other processes (pid {shown}; the run's: {run})"
    return f"{count} {noun}{span} {why} ignored"


def core_ignored(times: Sequence[datetime], window: RunWindow) -> tuple[Ignored, ...]:
    """Core files the automatic search found but that were written outside the window."""
    groups: dict[str, list[datetime]] = {}
    for moment in times:
        reason = "before_window" if window.lower is not None and moment < window.lower else "after_window"
        groups.setdefault(reason, []).append(moment)
    return tuple(Ignored("core", "core", reason, len(items), min(items), max(items), (),
                         describe("core", reason, len(items), min(items), max(items), (), window))
                 for reason, items in sorted(groups.items()))
