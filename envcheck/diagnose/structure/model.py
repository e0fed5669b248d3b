"""What the structure layer finds: one Event per recognised fact, with where it was and what it blames."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Line:
    """One line of the scan's excerpt (a candidate line or a line of a traceback block)."""

    file: str
    number: int
    text: str


@dataclass(frozen=True)
class Event:
    kind: str  # "xid" | "linker" | "nvcc" | "nccl_shm" | "nccl_remote" | "disk_full" | "exception" | ...
    cause: str  # a name of the diagnose taxonomy; "" for a hint
    confidence: float
    title: str
    explanation: str
    fix: str
    file: str
    line: int
    text: str
    source: str  # where the message is printed, or the catalog that explains it
    library: str = ""  # the library or module the log blames, when it names one
    commands: tuple[str, ...] = ()
    symptom: bool = False  # a launcher's or build driver's summary: never the root cause when another exists

    @property
    def hint(self) -> bool:
        """A fact that only qualifies causes (the package pip was building, a CUDA build of torch, a Ctrl-C): it has
        no cause of its own and is never one."""
        return not self.cause


class Located(Protocol):
    """Where an exception line is: a parsed traceback's file, line number and text."""

    file: str
    line: int
    text: str


def event_at(where: Located, kind: str, cause: str, confidence: float, title: str, explanation: str, fix: str,
             source: str, library: str) -> Event:
    """An Event at WHERE's exception line (the traceback readers' one constructor)."""
    return Event(kind, cause, confidence, title, explanation, fix, where.file, where.line, where.text, source, library)
