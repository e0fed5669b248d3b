"""The records that cross diagnose's stage boundaries (CONTRACT.md "Diagnose JSON")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from envcheck.checks.model import Fix  # noqa: F401  (one fix record for doctor findings and diagnose causes)


@dataclass(frozen=True)
class Hit:
    """One log line that matched a signature."""

    signature: str  # SIG id
    file: str
    line: int
    text: str


@dataclass(frozen=True)
class SignatureHits:
    """All matches of one signature in one scan: the first few kept verbatim, the rest counted."""

    signature: str
    count: int
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class ScanResult:
    files: tuple[str, ...]
    bytes_read: int
    lines: int
    by_signature: dict[str, SignatureHits] = field(default_factory=dict)
    exceptions: tuple[Hit, ...] = ()  # the last line of each Python traceback seen (first and last kept)
    first_time: datetime | None = None  # the earliest and latest line stamps of the logs (the run's window)
    last_time: datetime | None = None
    pids: frozenset[int] = frozenset()  # process ids the logs name (launchers' reports, pid=N, Killed process N)
    excerpt: tuple[Any, ...] = ()  # structure.model.Line: the lines the structure layer reads, in log order
    blocks: tuple[Any, ...] = ()  # (list[Line], prefix length): the traceback blocks, in log order
    ends: tuple[tuple[str, int], ...] = ()  # (file, the number of its last non-blank line): where each log ends
    tails: tuple[Any, ...] = ()  # structure.model.Line: each log's last non-blank lines, whatever they hold
    late_errors: tuple[Any, ...] = ()  # structure.model.Line: lines saying error/failed/fatal in each log's last bytes


@dataclass(frozen=True)
class Evidence:
    source: str  # "log" | "kernel" | "core" | "exit_code"
    line: int | None
    text: str
    file: str | None = None


@dataclass(frozen=True)
class LinkedFinding:
    """A doctor finding on the snapshot that predicts the same cause."""

    id: str
    severity: str
    title: str
    detail: str


@dataclass(frozen=True)
class Cause:
    cause: str
    confidence: float
    title: str
    explanation: str
    evidence: tuple[Evidence, ...]
    fixes: tuple[Fix, ...]
    signatures: tuple[str, ...] = ()
    findings: tuple[LinkedFinding, ...] = ()
    library: str = ""  # the library or module the log blames (flash_attn_2_cuda, libcurand, transformers), or ""


@dataclass(frozen=True)
class Skipped:
    """A source of evidence that could not be read, and why: inability is data."""

    source: str
    reason: str


@dataclass(frozen=True)
class RunWindow:
    """When the run ran and which processes were its own: kernel events and cores outside it are not the run's.

    `lower`/`upper` are the bounds events are judged by: the log's first and last stamps widened by a margin, or
    --since/--until exactly. None is an open side."""

    since: datetime | None
    until: datetime | None
    since_from: str | None  # "log" | "--since"
    until_from: str | None  # "log" | "--until"
    lower: datetime | None
    upper: datetime | None
    pids: frozenset[int] = frozenset()
    notes: tuple[str, ...] = ()

    @property
    def timed(self) -> bool:
        return self.lower is not None or self.upper is not None


@dataclass(frozen=True)
class Ignored:
    """Evidence left out because it is not this run's: kernel events or cores outside its window or of other
    processes, counted per kind and reason."""

    source: str  # "kernel" | "core"
    kind: str  # "oom_kill" | "segfault" | "core"
    reason: str  # "before_window" | "after_window" | "other_process" | "window_unknown"
    count: int
    first: datetime | None
    last: datetime | None
    pids: tuple[int, ...]
    detail: str  # one sentence for people


@dataclass(frozen=True)
class Diagnosis:
    causes: tuple[Cause, ...]
    exit_code: int | None
    signal: str | None
    exit_meaning: str | None = None
    scanned: tuple[str, ...] = ()
    bytes_read: int = 0
    lines: int = 0
    first_exception: Evidence | None = None  # the first Python exception line in the logs
    skipped: tuple[Skipped, ...] = ()
    window: RunWindow | None = None
    ignored: tuple[Ignored, ...] = ()
    joined_lines: int = 0  # wrapped lines of a paste joined to the line before them to read it (pasted.py)
    repaired: tuple[str, ...] = ()  # what else pasting did that was undone to read it (pasted.py)
