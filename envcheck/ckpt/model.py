"""The data that crosses the ckpt stages: what was found, what is wrong with it, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Problem kinds. `missing`, `truncated` and `mismatch` make a checkpoint incomplete (the save did not finish);
# `corrupt` (a bad CRC or hash, an unreadable header) makes it corrupt, which wins over incomplete.
MISSING, TRUNCATED, MISMATCH, CORRUPT = "missing", "truncated", "mismatch", "corrupt"
INCOMPLETE_KINDS = (MISSING, TRUNCATED, MISMATCH)
COMPLETE, INCOMPLETE, BROKEN = "complete", "incomplete", "corrupt"


@dataclass(frozen=True)
class Problem:
    """One thing that stops a resume, naming the file (relative to the checkpoint) it is about."""

    file: str
    kind: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class Required:
    """A file the layout needs, and how to check it: `json`, `safetensors`, `zip` (torch.save) or `any`."""

    path: str                      # relative to the checkpoint directory
    check: str
    why: str                       # said when it is missing


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint directory as the layout reads it, before any file is opened past its metadata."""

    path: str                      # absolute
    name: str                      # relative to the PATH given (".": PATH itself)
    step: int | None
    layouts: tuple[str, ...]       # "hf-trainer", "peft", "deepspeed", "llamafactory", "hf-model"
    resumable: bool                # claims to be a training state (not just weights)
    required: tuple[Required, ...]
    problems: tuple[Problem, ...]  # found by the layout itself (a missing shard, a step that does not match)
    facts: dict[str, Any] = field(default_factory=dict, compare=False)
    recursive: bool = True         # False for a run directory's own final model: its checkpoints are not its files


@dataclass(frozen=True)
class FileResult:
    """What reading one file found."""

    path: str
    size: int
    bytes_read: int
    sha256: str | None
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """A checkpoint's verdict: complete, incomplete or corrupt, with every problem found."""

    checkpoint: Checkpoint
    status: str
    problems: tuple[Problem, ...]
    notes: tuple[str, ...]
    manifest: str                  # "verified", "failed", "absent"
    files: tuple[FileResult, ...]

    @property
    def whole(self) -> bool:
        return self.status == COMPLETE

    def to_dict(self, deep: bool) -> dict[str, Any]:
        ckpt = self.checkpoint
        data: dict[str, Any] = {
            "name": ckpt.name, "path": ckpt.path, "step": ckpt.step, "layouts": list(ckpt.layouts),
            "resumable": ckpt.resumable, "status": self.status,
            "problems": [p.to_dict() for p in self.problems], "notes": list(self.notes),
            "manifest": self.manifest, "files_checked": len(self.files),
            "bytes_read": sum(f.bytes_read for f in self.files), "facts": ckpt.facts,
        }
        if deep:
            data["files"] = [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files]
        return data


def status_of(problems: tuple[Problem, ...]) -> str:
    if any(p.kind == CORRUPT for p in problems):
        return BROKEN
    return INCOMPLETE if problems else COMPLETE


@dataclass(frozen=True)
class Report:
    """Every checkpoint under PATH, run-level problems (a `latest` naming nothing), and the one to resume from."""

    path: str
    kind: str                      # "run" (many checkpoints) or "checkpoint"
    verdicts: tuple[Verdict, ...]
    problems: tuple[Problem, ...]
    resume_from: Verdict | None
    deep: bool

    @property
    def ok(self) -> bool:
        return not self.problems and all(v.whole for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        from envcheck import __version__

        counts = {s: sum(v.status == s for v in self.verdicts) for s in (COMPLETE, INCOMPLETE, BROKEN)}
        return {"envcheck_version": __version__, "path": self.path, "kind": self.kind, "deep": self.deep,
                "ok": self.ok, "resume_from": self.resume_from.checkpoint.path if self.resume_from else None,
                "summary": counts, "problems": [p.to_dict() for p in self.problems],
                "checkpoints": [v.to_dict(self.deep) for v in self.verdicts]}
