"""The records that cross guard's stage boundaries: samplers -> Sample -> rules -> Alert; at the end, Postmortem.

JSON shapes: docs/guard-json.md (metrics lines are `Sample`s, alerts.jsonl lines are `Alert`s)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProcMem:
    """One process of the run's tree at one sample."""

    pid: int
    ppid: int
    comm: str
    state: str  # /proc/PID/stat state: R, S, D, Z (a zombie not yet reaped by its parent), ...
    rss_bytes: int
    pss_bytes: int | None = None  # from smaps_rollup, on the samples where it is read
    rank: str | None = None  # RANK / LOCAL_RANK of the topmost process carrying it (a launcher's worker)
    exit_code: int | None = None  # a zombie's wait status as the kernel keeps it (/proc/PID/stat field 52)


@dataclass(frozen=True)
class GpuProc:
    pid: int
    used_bytes: int | None


@dataclass(frozen=True)
class Gpu:
    index: int
    used_bytes: int
    total_bytes: int
    processes: tuple[GpuProc, ...] = ()


@dataclass(frozen=True)
class Xid:
    gpu: int
    xid: int
    time: float


@dataclass(frozen=True)
class Sample:
    """What the samplers saw at one moment. A None is a value that could not be read (see `skipped`)."""

    time: float  # seconds since the epoch
    elapsed: float  # seconds since the command started
    tree_rss_bytes: int
    tree_pss_bytes: int | None
    processes: tuple[ProcMem, ...]
    cgroup: str | None  # the memory cgroup of the command (path under the hierarchy)
    cgroup_usage_bytes: int | None
    cgroup_limit_bytes: int | None  # None: no limit
    cgroup_oom_kills: int | None
    vmstat_oom_kills: int | None
    mem_total_bytes: int | None
    mem_available_bytes: int | None
    swap_total_bytes: int | None
    swap_free_bytes: int | None
    shm_used_bytes: int | None
    shm_total_bytes: int | None
    disk_used_bytes: int | None  # the filesystem of DIR
    disk_total_bytes: int | None
    gpus: tuple[Gpu, ...] = ()
    xids: tuple[Xid, ...] = ()  # Xid events since the previous sample
    ranks_gone: tuple[int, ...] = ()  # pids of rank processes gone since the previous sample
    skipped: tuple[str, ...] = ()  # "sampler: why" for each sampler that could not run (first sample, or new)

    @property
    def headroom_bytes(self) -> int | None:
        """Memory left before the OOM killer: the cgroup limit minus its usage, else MemAvailable."""
        if self.cgroup_limit_bytes is not None and self.cgroup_usage_bytes is not None:
            left = self.cgroup_limit_bytes - self.cgroup_usage_bytes
            if self.mem_available_bytes is None:
                return left
            return min(left, self.mem_available_bytes)
        return self.mem_available_bytes


@dataclass(frozen=True)
class Rule:
    """One alert rule from rules.toml (documented in envcheck/guard/rules.toml and README)."""

    id: str
    kind: str  # "threshold" | "rate" | "time_to_limit" | "increase"
    metric: str
    threshold: float
    for_s: float = 0.0
    window_s: float = 60.0
    severity: str = "warning"
    cooldown_s: float = 600.0
    summary: str = ""
    min_delta: float = 0.0  # rate: the metric must also have moved this much within the window


@dataclass(frozen=True)
class Alert:
    rule: str
    severity: str
    time: float
    elapsed: float
    key: str  # which series: a GPU index, "" for the host
    value: float
    threshold: float
    message: str


@dataclass(frozen=True)
class ProcEnd:
    """How one process of the tree ended, as far as the guard could tell, and from what evidence."""

    pid: int
    comm: str
    role: str  # "command" (the guard's child), "rank", "child"
    first_seen: float | None
    last_seen: float | None
    exit_code: int | None  # as a launcher reports it: -N for a signal
    signal: str | None
    how: str  # one sentence
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Postmortem:
    command: tuple[str, ...]
    started: str  # ISO times
    ended: str
    duration_s: float
    status: int  # the guard's exit status (as a shell reports the command's)
    exit: dict[str, Any]  # {"returncode", "code", "signal", "meaning"}
    reasons: tuple[str, ...]  # why this end is abnormal
    processes: tuple[ProcEnd, ...]
    oom: dict[str, Any] | None  # the cgroup counter and the kernel's record
    log_tail: tuple[str, ...]
    timeline: tuple[dict[str, Any], ...]  # the last samples, compacted
    alerts: tuple[Alert, ...]
    diagnosis: dict[str, Any]  # diagnose's JSON (docs/diagnose-json.md) with the guard's evidence added
    findings: tuple[dict[str, Any], ...]  # a fresh snapshot's doctor findings
    skipped: tuple[str, ...] = field(default=())
