"""The doctor's result: the snapshot it judged, the findings, and their count per severity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envcheck import __version__
from envcheck.checks.model import Finding, Severity
from envcheck.serde import to_dict
from envcheck.snapshot import Snapshot


@dataclass(frozen=True)
class Report:
    snapshot: Snapshot
    findings: tuple[Finding, ...]
    matrix_version: str | None
    hidden: int = 0  # findings left out by --select/--ignore: said, so that silence is not read as health
    envcheck_version: str = __version__

    def summary(self) -> dict[str, int]:
        counts = {severity.label: 0 for severity in sorted(Severity, reverse=True)}
        for finding in self.findings:
            counts[finding.severity.label] += 1
        return counts

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def fails(self, threshold: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst >= threshold

    def to_dict(self) -> dict[str, Any]:
        findings = []
        for finding in self.findings:
            data = to_dict(finding)
            data["severity"] = finding.severity.label
            findings.append(data)
        return {
            "envcheck_version": self.envcheck_version,
            "matrix_version": self.matrix_version,
            "snapshot": self.snapshot.to_dict(),
            "findings": findings,
            "summary": self.summary(),
            "hidden_by_filters": self.hidden,
        }
