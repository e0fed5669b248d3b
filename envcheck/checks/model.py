"""Findings: what a check says about a snapshot, with the evidence and the exact fix."""

from __future__ import annotations

import enum
from dataclasses import dataclass

CATEGORIES = frozenset({
    "host_oom", "gpu_oom", "segfault_abi_mismatch", "segfault_other", "cuda_arch_unsupported", "driver_too_old",
    "cuda_toolkit_mismatch", "missing_cuda_library", "nccl_error", "nccl_timeout", "shm_too_small", "numpy_abi",
    "torch_cpu_only", "deepspeed_build_failure", "version_conflict", "gpu_xid", "disk_full", "other",
})


class Severity(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    FATAL = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use info, warning, error or fatal)") from None


@dataclass(frozen=True)
class Evidence:
    fact: str  # the snapshot key path or the matrix fact it comes from
    observed: str | None
    expected: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class Fix:
    summary: str
    commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    category: str
    title: str
    detail: str
    evidence: tuple[Evidence, ...] = ()
    fixes: tuple[Fix, ...] = ()
    refs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.id}: unknown category {self.category!r}")

    def sort_key(self) -> tuple[int, str, str]:
        return (-int(self.severity), self.id, self.title)


@dataclass(frozen=True)
class Unevaluated:
    """A rule that applied but could not be judged because a fact was not probed or not in the matrix.

    Checks yield these beside Findings; the framework reports them together as one info finding (EC599), so the
    user learns what was not checked instead of reading silence as health.
    """

    rule: str
    missing: str
