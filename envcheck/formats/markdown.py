"""Markdown report to paste into a GitHub issue: a table of the machine, then findings."""

from __future__ import annotations

from envcheck.formats.summary import examined_line, machine_lines, no_torch_notice
from envcheck.report import Report


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    matrix = f", matrix {report.matrix_version}" if report.matrix_version else ""
    out = [f"### envcheck {report.envcheck_version} doctor{matrix}", "", examined_line(report), "", "| | |", "| --- | --- |"]
    out += [f"| {_cell(label)} | {_cell(text)} |" for label, text in machine_lines(report.snapshot)]
    out.append("")
    counts = report.summary()
    tally = ", ".join(f"{n} {label}" for label, n in counts.items() if n) or "none"
    out.append(f"**Findings:** {tally}")
    for finding in report.findings:
        out += ["", f"#### {finding.severity.label.upper()} {finding.id}: {finding.title} (`{finding.category}`)", "",
                finding.detail]
        if finding.evidence:
            out.append("")
            for item in finding.evidence:
                expected = f" (expected `{item.expected}`)" if item.expected else ""
                out.append(f"- `{item.fact}` = `{item.observed}`{expected}")
        for fix in finding.fixes:
            out += ["", f"Fix: {fix.summary}"]
            if fix.commands:
                out += ["```sh", *fix.commands, "```"]
    if report.hidden:
        out += ["", f"{report.hidden} finding(s) hidden by --select/--ignore."]
    notice = no_torch_notice(report)
    if notice:
        out += ["", notice]
    if report.snapshot.skipped:
        out += ["", "<details><summary>Not checked</summary>", ""]
        out += [f"- {item.probe}: {_cell(item.reason)}" for item in report.snapshot.skipped]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
