"""Run the stages: discover the layout, read every file once (in parallel, chunked), judge each checkpoint.

Files of a checkpoint are read by a small thread pool: hashlib and zlib release the GIL on big buffers, so two
cores hash two files at once. A resume choice needs only the newest whole checkpoint, so `latest` stops there.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from envcheck.ckpt import layout, manifest
from envcheck.ckpt.integrity import CHUNK, Expected, check_file
from envcheck.ckpt.model import (MISMATCH, MISSING, Checkpoint, FileResult, Problem, Report, Verdict,
                                 status_of)


class Progress(Protocol):
    def start(self, total_bytes: int) -> None: ...
    def advance(self, n: int) -> None: ...
    def finish(self) -> None: ...


def files_of(ckpt: Checkpoint) -> list[str]:
    """Every file of the checkpoint, relative to it; the run directory's own entry does not descend into the
    checkpoints beside it."""
    if not ckpt.recursive:
        return sorted(n for n in os.listdir(ckpt.path) if os.path.isfile(os.path.join(ckpt.path, n)))
    found = []
    for here, dirs, names in os.walk(ckpt.path):
        dirs.sort()
        for name in names:
            found.append(os.path.relpath(os.path.join(here, name), ckpt.path))
    return sorted(found)


def _plan(ckpt: Checkpoint, deep: bool, use_manifest: bool) -> tuple[list[tuple[str, str]], dict[str, Expected],
                                                                       list[Problem], list[str], str]:
    present = [f for f in files_of(ckpt) if os.path.basename(f) != manifest.NAME
               and not (os.path.basename(f).startswith(f".{manifest.NAME}.") and f.endswith(".tmp"))]
    checks = {r.path: r.check for r in ckpt.required}
    problems = list(ckpt.problems)
    notes: list[str] = []
    for req in ckpt.required:
        if req.path not in present and not os.path.exists(os.path.join(ckpt.path, req.path)):
            problems.append(Problem(req.path, MISSING, req.why))
    expected: dict[str, Expected] = {}
    state = "absent"
    if use_manifest:
        recorded, bad = manifest.load(ckpt.path)
        if bad is not None:
            problems.append(bad)
            state = "failed"
        elif recorded is not None:
            expected, state = recorded, "verified"
            for rel in sorted(set(recorded) - set(present)):
                if not any(p.file == rel for p in problems):
                    problems.append(Problem(rel, MISSING, "listed in the manifest, gone from the directory"))
            extra = sorted(set(present) - set(recorded))
            if extra:
                notes.append(f"{len(extra)} file(s) not in the manifest (added after it was written): "
                             f"{', '.join(extra[:5])}")
    tasks = [(rel, checks.get(rel) or layout.check_of(rel)) for rel in present]
    return tasks, expected, problems, notes, state


def _judge(ckpt: Checkpoint, results: list[FileResult], problems: list[Problem], notes: list[str],
           state: str) -> Verdict:
    for result in results:
        problems += result.problems
        notes += [f"{result.path}: {n}" for n in result.notes]
    if state == "verified" and any("manifest" in p.detail for p in problems):
        state = "failed"
    unique = tuple(dict.fromkeys(problems))
    return Verdict(ckpt, status_of(unique), unique, tuple(notes), state, tuple(results))


class _Reader:
    """Shared by the workers: one chunk buffer per thread, progress counted under a lock."""

    def __init__(self, progress: Progress | None) -> None:
        self.local = threading.local()
        self.lock = threading.Lock()
        self.progress = progress

    def advance(self, n: int) -> None:
        if self.progress is not None:
            with self.lock:
                self.progress.advance(n)

    def check(self, root: str, rel: str, check: str, deep: bool, expected: Expected | None) -> FileResult:
        buffer = getattr(self.local, "buffer", None)
        if buffer is None:
            buffer = self.local.buffer = bytearray(CHUNK)
        return check_file(root, rel, check, deep, expected, self.advance, buffer)


def _streamed_bytes(ckpt: Checkpoint, tasks: list[tuple[str, str]], deep: bool, expected: dict[str, Expected]) -> int:
    total = 0
    for rel, check in tasks:
        if check == "zip" or deep or rel in expected:
            try:
                total += os.path.getsize(os.path.join(ckpt.path, rel))
            except OSError:
                pass
    return total


def verify_all(checkpoints: list[Checkpoint], deep: bool, use_manifest: bool = True,
               progress: Progress | None = None, stop_at_whole: bool = False, workers: int = 0) -> list[Verdict]:
    """Verdicts in the order given; with stop_at_whole, stop after the first whole resumable checkpoint."""
    workers = workers or min(4, os.cpu_count() or 1)
    plans = [(c, *_plan(c, deep, use_manifest)) for c in checkpoints]
    if progress is not None:
        progress.start(sum(_streamed_bytes(c, t, deep, e) for c, t, e, *_ in plans))
    reader = _Reader(progress)
    verdicts = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for ckpt, tasks, expected, problems, notes, state in plans:
            futures = [pool.submit(reader.check, ckpt.path, rel, check, deep, expected.get(rel))
                       for rel, check in tasks]
            verdict = _judge(ckpt, [f.result() for f in futures], problems, notes, state)
            verdicts.append(verdict)
            if stop_at_whole and verdict.whole and ckpt.resumable:
                break
    if progress is not None:
        progress.finish()
    return verdicts


def run_problems(facts: dict, verdicts: list[Verdict]) -> list[Problem]:  # type: ignore[type-arg]
    """A bare DeepSpeed save directory: `latest` must exist and name a whole tag."""
    if "latest" not in facts:
        return []
    tag = facts["latest"]
    if tag is None:
        return [Problem("latest", MISSING, "DeepSpeed writes it last and load_checkpoint() reads it: without it, "
                                           "resuming finds no checkpoint (the last save did not finish)")]
    if not tag:
        return [Problem("latest", MISSING, "is empty or unreadable: DeepSpeed cannot find the tag")]
    named = next((v for v in verdicts if v.checkpoint.name == tag), None)
    if named is None:
        return [Problem("latest", MISSING, f"names {tag}, which does not exist")]
    if not named.whole:
        return [Problem("latest", MISMATCH, f"names {tag}, which is {named.status}")]
    return []


def newest_first(checkpoints: list[Checkpoint]) -> list[Checkpoint]:
    return sorted(checkpoints, key=lambda c: (c.resumable, c.step if c.step is not None else -1), reverse=True)


def verify(path: str, deep: bool = False, progress: Progress | None = None, stop_at_whole: bool = False,
           use_manifest: bool = True) -> Report:
    kind, checkpoints, facts = layout.discover(path)
    order = newest_first(checkpoints) if stop_at_whole else checkpoints
    verdicts = verify_all(order, deep, use_manifest, progress, stop_at_whole)
    if stop_at_whole:
        verdicts.sort(key=lambda v: checkpoints.index(v.checkpoint))
    resume = [v for v in verdicts if v.whole and v.checkpoint.resumable]
    best = max(resume, key=lambda v: v.checkpoint.step if v.checkpoint.step is not None else -1, default=None)
    return Report(path=os.path.abspath(path), kind=kind, verdicts=tuple(verdicts),
                  problems=tuple(run_problems(facts, verdicts)), resume_from=best, deep=deep)

