"""Findings about envcheck's own inputs rather than the machine."""

from __future__ import annotations

from envcheck.checks.model import Evidence, Finding, Fix, Severity


def matrix_unusable(problem: str) -> Finding:
    return Finding(
        id="EC901",
        severity=Severity.WARNING,
        category="other",
        title="the compatibility matrix could not be loaded; only matrix-free checks ran",
        detail=problem,
        evidence=(Evidence("matrix", problem),),
        fixes=(Fix("Reinstall envcheck, or point it at a valid matrix",
                   ("pip install --force-reinstall <the envcheck-llm wheel or source directory>", "envcheck doctor --matrix DIR")),),
    )
