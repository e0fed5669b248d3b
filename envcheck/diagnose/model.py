"""The records that cross diagnose's stage boundaries (CONTRACT.md "Diagnose JSON")."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class Skipped:
    """A source of evidence that could not be read, and why: inability is data."""

    source: str
    reason: str


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
