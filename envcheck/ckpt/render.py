"""Human text of a ckpt Report: one line per checkpoint, its problems under it, and the resume choice last."""

from __future__ import annotations

from envcheck.ckpt.model import Report, Verdict


def _label(verdict: Verdict) -> str:
    ckpt = verdict.checkpoint
    step = f"step {ckpt.step}" if ckpt.step is not None else "no step"
    extra = "" if ckpt.resumable else ", weights only"
    manifest = f", manifest {verdict.manifest}" if verdict.manifest != "absent" else ""
    return f"{step}, {'+'.join(ckpt.layouts) or 'unknown'}{extra}{manifest}"


def render_text(report: Report) -> str:
    lines = [f"{report.path} ({report.kind}, {len(report.verdicts)} checkpoint(s)"
             f"{', deep' if report.deep else ''})"]
    width = max([len(v.checkpoint.name) for v in report.verdicts] + [4])
    for verdict in report.verdicts:
        lines.append(f"  {verdict.checkpoint.name:<{width}}  {verdict.status:<10}  {_label(verdict)}")
        for problem in verdict.problems:
            lines.append(f"      {problem.kind:<9} {problem.file}: {problem.detail}")
        for note in verdict.notes:
            lines.append(f"      note      {note}")
    for problem in report.problems:
        lines.append(f"  run: {problem.kind} {problem.file}: {problem.detail}")
    lines.append(resume_line(report))
    return "\n".join(lines) + "\n"


def resume_line(report: Report) -> str:
    if report.resume_from is None:
        return "resume from: nothing (no whole, resumable checkpoint)"
    chosen = report.resume_from.checkpoint
    newest = max((v.checkpoint.step or -1 for v in report.verdicts if v.checkpoint.resumable), default=-1)
    older = " (newer ones are not whole)" if (chosen.step or -1) < newest else ""
    return f"resume from: {chosen.path}{older}"


def skipped_lines(report: Report) -> list[str]:
    """For `latest`: why each newer checkpoint was passed over, one line each."""
    chosen = report.resume_from
    lines = []
    for verdict in report.verdicts:
        if verdict is chosen or verdict.whole or not verdict.checkpoint.resumable:
            continue
        first = verdict.problems[0] if verdict.problems else None
        why = f"{first.kind} {first.file}: {first.detail}" if first else verdict.status
        more = f" (+{len(verdict.problems) - 1} more)" if len(verdict.problems) > 1 else ""
        lines.append(f"skipped {verdict.checkpoint.name}: {verdict.status}: {why}{more}")
    return lines
