"""The check framework: a registry of pure functions (Snapshot, Matrix) -> Findings, with stable ids.

Ids follow flake8: a letter prefix and a number, selected or ignored by prefix (`--select EC3`, `--ignore EC104`).
A check that raises is a bug, but one bug must not cost the user the whole report: it becomes an EC900 finding.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
if TYPE_CHECKING:  # the snapshot model is large; `diagnose` needs this package's Finding without it
    from envcheck.snapshot import Snapshot

CheckFunction = Callable[["Snapshot", object], Iterable["Finding | Unevaluated"]]
ID_PATTERN = re.compile(r"^EC\d{3}$")


@dataclass(frozen=True)
class Check:
    name: str
    ids: tuple[str, ...]  # every finding id this check can emit
    function: CheckFunction
    needs_matrix: bool = False


REGISTRY: list[Check] = []


def check(*ids: str, needs_matrix: bool = False) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check that may emit the given finding ids; `needs_matrix` ones are skipped without a matrix."""
    for finding_id in ids:
        if not ID_PATTERN.match(finding_id):
            raise ValueError(f"finding id {finding_id!r} does not match EC + 3 digits")
        if any(finding_id in existing.ids for existing in REGISTRY):
            raise ValueError(f"finding id {finding_id} is registered twice")

    def register(function: CheckFunction) -> CheckFunction:
        REGISTRY.append(Check(f"{function.__module__}.{function.__name__}", ids, function, needs_matrix))
        return function

    return register


def _load_check_modules() -> None:
    # Importing registers; kept here so that importing the framework alone has no side effects on order.
    from envcheck.checks import (  # noqa: F401
        driver, extensions, gpu_arch, host, known_bad, libraries, matrix_age, packages, python_env, runtime, toolkit,
    )


def known_ids() -> set[str]:
    """Every finding id a check can emit, plus the framework's own (EC599 not evaluated, EC900/EC901 errors)."""
    _load_check_modules()
    return {finding_id for registered in REGISTRY for finding_id in registered.ids} | {"EC599", "EC900", "EC901"}


def selected(finding_id: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """flake8's rule: the longer matching prefix wins (a tie goes to --select); no --select selects all."""
    select_match = max((len(p) for p in select if finding_id.startswith(p)), default=None) if select else 0
    if select_match is None:
        return False
    ignore_match = max((len(p) for p in ignore if finding_id.startswith(p)), default=None)
    return ignore_match is None or select_match >= ignore_match


def run_checks(
    snapshot: Snapshot, matrix: object, select: tuple[str, ...] = (), ignore: tuple[str, ...] = ()
) -> list[Finding]:
    _load_check_modules()
    findings: list[Finding] = []
    unevaluated: list[Unevaluated] = []
    for registered in REGISTRY:
        if registered.needs_matrix and matrix is None:
            unevaluated.append(Unevaluated("matrix checks", "the compatibility matrix is not loaded"))
            continue
        if not any(selected(finding_id, select, ignore) for finding_id in registered.ids):
            continue
        try:
            produced = list(registered.function(snapshot, matrix))
        except Exception as error:  # a bug in one check: report it and go on
            produced = [_crashed(registered, error)]
        unevaluated.extend(item for item in produced if isinstance(item, Unevaluated))
        findings.extend(f for f in produced if isinstance(f, Finding) and (f.id == "EC900" or selected(f.id, select, ignore)))
    if unevaluated and selected("EC599", select, ignore):
        findings.append(_not_evaluated(unevaluated))
    return sorted(findings, key=Finding.sort_key)


def _not_evaluated(items: list[Unevaluated]) -> Finding:
    unique = sorted(set(items), key=lambda u: (u.rule, u.missing))
    return Finding(
        id="EC599",
        severity=Severity.INFO,
        category="other",
        title=f"{len(unique)} rule(s) could not be evaluated for lack of facts",
        detail="These were not checked, so their silence is not a clean bill of health (each is listed below).",
        evidence=tuple(Evidence(u.rule, u.missing) for u in unique),
    )


def _crashed(registered: Check, error: Exception) -> Finding:
    where = traceback.extract_tb(error.__traceback__)[-1]
    return Finding(
        id="EC900",
        severity=Severity.WARNING,
        category="other",
        title=f"internal error in check {registered.name}; its findings are missing",
        detail=f"{type(error).__name__}: {error} (at {where.filename}:{where.lineno}). Please report this.",
        evidence=(Evidence("check", registered.name),),
    )


__all__ = ["Check", "Evidence", "Finding", "Fix", "REGISTRY", "Severity", "Unevaluated", "check", "known_ids",
           "run_checks", "selected"]
