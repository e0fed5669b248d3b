"""Text report for a terminal: the machine in a few lines, then findings by severity, colour only on a TTY."""

from __future__ import annotations

import textwrap

from envcheck.checks.model import Finding, Severity
from envcheck.formats.summary import examined_line, machine_lines, no_torch_notice
from envcheck.report import Report

_COLOURS = {Severity.FATAL: "\033[1;31m", Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m",
            Severity.INFO: "\033[36m"}
_RESET = "\033[0m"
_BOLD = "\033[1m"
WIDTH = 100


def _paint(text: str, code: str, colour: bool) -> str:
    return f"{code}{text}{_RESET}" if colour else text


def _finding(finding: Finding, colour: bool) -> list[str]:
    label = _paint(f"{finding.severity.label.upper():<7}", _COLOURS[finding.severity], colour)
    lines = [f"{label} {finding.id}  {_paint(finding.title, _BOLD, colour)}  [{finding.category}]"]
    indent = " " * 14
    lines += textwrap.wrap(finding.detail, WIDTH, initial_indent=indent, subsequent_indent=indent)
    for item in finding.evidence:
        expected = f" (expected {item.expected})" if item.expected else ""
        first, *rest = (item.observed or "None").splitlines() or [""]
        lines.append(f"{indent}- {item.fact} = {first}{expected}")
        lines += [f"{indent}    {line}" for line in rest]  # a child's stderr keeps the report's layout
    for fix in finding.fixes:
        lines.append(f"{indent}fix: {fix.summary}")
        lines += [f"{indent}  $ {command}" for command in fix.commands]
    lines += [f"{indent}see {ref}" for ref in finding.refs]
    return lines


def render_text(report: Report, colour: bool = False) -> str:
    out = [_paint(examined_line(report), _BOLD, colour), f"envcheck {report.envcheck_version} doctor" +
           (f", matrix {report.matrix_version}" if report.matrix_version else ""), ""]
    lines = machine_lines(report.snapshot)
    width = max((len(label) for label, _ in lines), default=0)
    out += [f"  {label:<{width}}  {text}" for label, text in lines]
    out.append("")
    counts = report.summary()
    if report.findings:
        tally = ", ".join(f"{n} {label}" for label, n in counts.items() if n)
        out.append(_paint(f"Findings: {tally}", _BOLD, colour))
        for finding in report.findings:
            out.append("")
            out += _finding(finding, colour)
    else:
        out.append(_paint("No problems found." if not report.hidden else "No problems found among the selected findings.",
                          _BOLD, colour))
    if report.hidden:
        out += ["", f"{report.hidden} finding(s) hidden by --select/--ignore."]
    notice = no_torch_notice(report)
    if notice:
        out += ["", notice]
    if report.snapshot.skipped:
        out += ["", "Not checked:"]
        out += [f"  - {item.probe}: {item.reason}" for item in report.snapshot.skipped]
    return "\n".join(out) + "\n"
