"""Text, Markdown and JSON views of a FleetReport. Identical nodes are grouped (by their doctor findings and how
envcheck ran there), so 64 nodes fit a terminal; Markdown pastes into an issue."""

from __future__ import annotations

from typing import Any

from envcheck import __version__
from envcheck.checks.model import Finding
from envcheck.fleet.hosts import compress
from envcheck.fleet.model import FleetReport, NodeReport
from envcheck.serde import to_dict

FLEET_SCHEMA_VERSION = 1


def _status_counts(report: FleetReport) -> dict[str, int]:
    counts = {"ok": 0, "unreachable": 0, "timeout": 0, "bad_output": 0, "no_envcheck": 0}
    for node in report.nodes:
        counts[node.result.status] += 1
    return counts


def _how(report: FleetReport) -> str:
    ways: dict[str, list[str]] = {}
    for node in report.nodes:
        if node.result.how and node.result.status == "ok":
            ways.setdefault(node.result.how, []).append(node.node)
    names = {"installed": "found at this interpreter's path (shared filesystem)",
             "shipped": "shipped as envcheck.pyz over the engine", "command": "run with --envcheck-command"}
    return "; ".join(f"{names.get(how, how)} on {compress(nodes)}" for how, nodes in sorted(ways.items())) or "-"


def node_groups(report: FleetReport) -> list[tuple[tuple[str, ...], NodeReport]]:
    """Nodes with the same status and the same doctor findings, as (nodes, one representative)."""
    groups: dict[tuple, list[NodeReport]] = {}  # type: ignore[type-arg]
    for node in report.nodes:
        key = (node.result.status, tuple((f.id, f.severity, f.title) for f in node.findings))
        groups.setdefault(key, []).append(node)
    return sorted(((tuple(n.node for n in nodes), nodes[0]) for nodes in groups.values()),
                  key=lambda item: (-len(item[0]), item[0][0]))


def _headline(report: FleetReport) -> str:
    counts = _status_counts(report)
    bad = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n and k != "ok")
    return (f"{len(report.nodes)} nodes via {report.engine} in {report.duration_s:.1f} s: {counts['ok']} answered"
            + (f", {bad}" if bad else ""))


def _short(findings: tuple[Finding, ...]) -> str:
    if not findings:
        return "no findings"
    return ", ".join(f"{f.id} {f.severity.label}" for f in findings)


def _cut(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def render_text(report: FleetReport) -> str:
    lines = [f"envcheck fleet: {_headline(report)}", f"envcheck on the nodes: {_how(report)}", "", "nodes:"]
    for nodes, sample in node_groups(report):
        what = _short(sample.findings) if sample.result.status == "ok" else sample.result.status.replace("_", " ")
        lines.append(f"  {compress(nodes):<24} {len(nodes):>3}  {what}")
    seen: set[str] = set()
    doctor = [f for _, sample in node_groups(report) for f in sample.findings
              if (f.id, f.title) not in seen and not seen.add((f.id, f.title))]  # type: ignore[func-returns-value]
    if doctor:
        lines += ["", "doctor findings (per node, grouped above):"]
        lines += [f"  {f.severity.label.upper():<7} {f.id}  {_cut(f.title)}" for f in doctor]
    lines += ["", "across nodes:" if report.fleet_findings else "across nodes: every compared fact is the same"]
    for finding in report.fleet_findings:
        lines.append(f"  {finding.severity.label.upper():<7} {finding.id}  {_cut(finding.title)}")
        for detail in finding.detail.splitlines():
            lines.append(f"          {_cut(detail, 108)}")
        for fix in finding.fixes:
            lines.append(f"          fix: {_cut(fix.summary, 103)}" + "".join(f"\n            $ {c}" for c in fix.commands))
    worst = report.worst()
    lines += ["", f"worst: {worst.label if worst else 'nothing found'}"]
    return "\n".join(lines) + "\n"


def render_markdown(report: FleetReport) -> str:
    lines = [f"### envcheck fleet: {_headline(report)}", "", f"envcheck {__version__}; on the nodes: {_how(report)}",
             "", "| nodes | count | doctor |", "| --- | --- | --- |"]
    for nodes, sample in node_groups(report):
        what = _short(sample.findings) if sample.result.status == "ok" else f"**{sample.result.status}**: " \
            f"{sample.result.detail or ''}"
        lines.append(f"| `{compress(nodes)}` | {len(nodes)} | {what.replace('|', '/')} |")
    if report.fleet_findings:
        lines += ["", "#### Across nodes", ""]
        for finding in report.fleet_findings:
            lines.append(f"- **{finding.severity.label} {finding.id}** {finding.title}")
            for detail in finding.detail.splitlines():
                lines.append(f"  - {detail}")
    else:
        lines += ["", "Across nodes: every compared fact is the same."]
    return "\n".join(lines) + "\n"


def _finding(f: Finding) -> dict[str, Any]:
    data = to_dict(f)
    data["severity"] = f.severity.label
    return data


def to_json(report: FleetReport, snapshots: bool = True) -> dict[str, Any]:
    nodes = []
    for node in report.nodes:
        result = node.result
        nodes.append({"node": node.node, "status": result.status, "how": result.how, "detail": result.detail,
                      "duration_s": None if result.duration_s is None else round(result.duration_s, 3),
                      "findings": [_finding(f) for f in node.findings],
                      "snapshot": result.snapshot.to_dict() if snapshots and result.snapshot else None})
    counts = _status_counts(report)
    worst = report.worst()
    return {
        "fleet_schema_version": FLEET_SCHEMA_VERSION, "envcheck_version": __version__,
        "matrix_version": report.matrix_version, "engine": report.engine,
        "duration_s": round(report.duration_s, 3),
        "summary": {"nodes": len(report.nodes), **counts, "worst": worst.label if worst else None},
        "groups": [{"nodes": list(nodes), "hostlist": compress(nodes), "status": sample.result.status,
                    "finding_ids": [f.id for f in sample.findings]} for nodes, sample in node_groups(report)],
        "findings": [_finding(f) for f in report.fleet_findings],
        "differences": [{"fact": d.fact, "majority": d.majority, "outliers": list(d.outliers),
                         "groups": [{"value": g.value, "nodes": list(g.nodes), "hostlist": compress(g.nodes)}
                                    for g in d.groups]} for d in report.differences],
        "nodes": nodes,
    }
