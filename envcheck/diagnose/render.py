"""A Diagnosis as CONTRACT.md's "Diagnose JSON" (plus additive keys) and as text for a terminal."""

from __future__ import annotations

from typing import Any

from envcheck.diagnose.model import Cause, Diagnosis, Ignored, RunWindow
from envcheck.diagnose.stamps import show


def to_dict(d: Diagnosis) -> dict[str, Any]:
    return {
        "causes": [_cause(c) for c in d.causes],
        "exit_code": d.exit_code,
        "signal": d.signal,
        "exit_meaning": d.exit_meaning,
        "first_exception": None if d.first_exception is None else
        {"file": d.first_exception.file, "line": d.first_exception.line, "text": d.first_exception.text},
        "scanned": {"files": list(d.scanned), "bytes": d.bytes_read, "lines": d.lines, "joined_lines": d.joined_lines,
                    "repaired": list(d.repaired)},
        "skipped": [{"source": s.source, "reason": s.reason} for s in d.skipped],
        "window": _window(d.window),
        "ignored": [_ignored(i) for i in d.ignored],
    }


def _window(w: RunWindow | None) -> dict[str, Any] | None:
    if w is None:
        return None
    return {"since": show(w.since), "until": show(w.until), "since_from": w.since_from, "until_from": w.until_from,
            "lower": show(w.lower), "upper": show(w.upper), "pids": sorted(w.pids), "notes": list(w.notes)}


def _ignored(i: Ignored) -> dict[str, Any]:
    return {"source": i.source, "kind": i.kind, "reason": i.reason, "count": i.count, "first": show(i.first),
            "last": show(i.last), "pids": list(i.pids), "detail": i.detail}


def _cause(c: Cause) -> dict[str, Any]:
    return {
        "cause": c.cause, "confidence": c.confidence, "title": c.title, "explanation": c.explanation,
        "evidence": [{"source": e.source, "line": e.line, "text": e.text, "file": e.file} for e in c.evidence],
        "fixes": [{"summary": f.summary, "commands": list(f.commands)} for f in c.fixes],
        "signatures": list(c.signatures), "library": c.library or None,
        "findings": [{"id": f.id, "severity": f.severity, "title": f.title, "detail": f.detail} for f in c.findings],
    }


def to_text(d: Diagnosis) -> str:
    out: list[str] = []
    if d.signal or d.exit_code is not None:
        out.append(f"exit: {d.exit_meaning}")
    if not d.causes:  # the honest unknown: what was seen, and that nothing known explains it
        out.append("No known cause recognised: nothing in the log matched a known cause.")
        if d.first_exception:
            out.append(f"  first error (line {d.first_exception.line}): {d.first_exception.text}")
        status = f"{d.exit_code}" if d.exit_code is not None else d.signal
        out.append(f"  exit status {status}" if status else "  exit status: not known (give --exit-code)")
    for rank, c in enumerate(d.causes, 1):
        label = "primary cause" if rank == 1 else f"cause {rank}"
        blame = f" [{c.library}]" if c.library else ""
        out.append(f"\n{label}: {c.cause}{blame} (confidence {c.confidence:.2f}) - {c.title}")
        out.append(f"  {c.explanation}")
        for e in c.evidence[:6]:
            where = f"{e.file}:{e.line}" if e.file and e.line else e.file or e.source
            out.append(f"  [{e.source}] {where}: {e.text}")
        for f in c.findings:
            out.append(f"  [doctor {f.id} {f.severity}] {f.title}")
        for f in c.fixes[:3]:
            out.append(f"  fix: {f.summary}")
            out.extend(f"    $ {cmd}" for cmd in f.commands)
    for s in d.skipped:
        out.append(f"\nnot read: {s.source}: {s.reason}")
    w = d.window
    if w is not None and (w.timed or w.pids or w.notes):
        span = f"{show(w.lower) or '...'} .. {show(w.upper) or '...'}" if w.timed else "not known"
        pids = f"; pids {', '.join(str(p) for p in sorted(w.pids)[:8])}" if w.pids else ""
        out.append(f"\nrun window: {span}{pids}")
        out.extend(f"  note: {note}" for note in w.notes)
    for i in d.ignored:
        out.append(f"ignored: {i.detail}")
    if d.scanned:
        out.append(f"\nscanned {len(d.scanned)} file(s), {d.lines} lines, {d.bytes_read / 1e6:.1f} MB")
        undone = ([f"{d.joined_lines} wrapped line(s) joined to the line before"] if d.joined_lines else []) + list(
            d.repaired)
        if undone:
            # (nothing matched the lines as they are but weakly, or the paste was cut at a console's width)
            out.append(f"  read again as a paste: {'; '.join(undone)}")
    return "\n".join(out).lstrip("\n") + "\n"
