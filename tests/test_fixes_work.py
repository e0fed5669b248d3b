"""A fix that changes versions must, applied to the snapshot, clear its finding and raise no new error or fatal.

Checked over every broken and healthy snapshot the tests hold (tests/test_broken_machines.py's scenarios, the
CONTRACT-shaped snapshots, the healthy-stack corpus).
"""

from __future__ import annotations

import json

import pytest
from conftest import ASSETS
from fixapply import apply, changes_versions, pins
from test_broken_machines import SCENARIOS, healthy_h100

from envcheck.checks import run_checks
from envcheck.checks.model import Finding, Fix, Severity
from envcheck.matrix import load_matrix
from envcheck.snapshot import Snapshot

MATRIX = load_matrix()


def _snapshots() -> dict[str, Snapshot]:
    found = {name: build() for name, (build, *_rest) in SCENARIOS.items()}
    found["healthy_h100"] = healthy_h100()
    for folder in ("contract", "healthy"):
        for path in sorted((ASSETS / folder).glob("*.json")):
            found[f"{folder}/{path.stem}"] = Snapshot.from_dict(json.loads(path.read_text()))
    return found


SNAPSHOTS = _snapshots()


def _same(finding: Finding, other: Finding) -> bool:
    """The same finding about the same subject (its first evidence names the fact it is about)."""
    return finding.id == other.id and (finding.evidence[:1] and other.evidence[:1]
                                       and finding.evidence[0].fact == other.evidence[0].fact)


def _cases() -> list[tuple[str, int, int]]:
    cases = []
    for name, snapshot in sorted(SNAPSHOTS.items()):
        for i, finding in enumerate(run_checks(snapshot, MATRIX)):
            for j, fix in enumerate(finding.fixes):
                if changes_versions(snapshot, fix):
                    cases.append((name, i, j))
    return cases


CASES = _cases()


def test_there_are_version_changing_fixes_to_check() -> None:
    assert len(CASES) >= 8
    assert {run_checks(SNAPSHOTS[n], MATRIX)[i].id for n, i, _ in CASES} >= {"EC301", "EC501", "EC503", "EC504"}


@pytest.mark.parametrize(("name", "index", "fix_index"), CASES)
def test_fix_clears_its_finding_and_raises_nothing_new(name: str, index: int, fix_index: int) -> None:
    snapshot = SNAPSHOTS[name]
    before = run_checks(snapshot, MATRIX)
    finding = before[index]
    fix: Fix = finding.fixes[fix_index]
    after_snapshot = apply(snapshot, fix)
    assert after_snapshot is not None
    after = run_checks(after_snapshot, MATRIX)
    assert not [f for f in after if _same(f, finding)], f"{fix.commands} did not clear {finding.id}: {finding.title}"
    old = {(f.id, f.title) for f in before}
    new = [(f.id, f.severity.label, f.title) for f in after if f.severity >= Severity.ERROR and (f.id, f.title) not in old]
    assert new == [], f"{finding.id} fix {fix.commands} raises {new}"


def test_rtx5090_on_driver_570_is_offered_a_build_that_driver_runs() -> None:
    """Issue 9: the fix once named torch 2.15 cu132, which a 570 driver (CUDA 12.8) cannot run."""
    snapshot = SCENARIOS["rtx5090_old_torch"][0]()
    (ec503,) = [f for f in run_checks(snapshot, MATRIX) if f.id == "EC503"]
    ((_name, _version, backend, _command),) = pins(ec503.fixes[0])
    assert backend is not None and int(backend[2:]) <= 128
    assert "which this driver supports" in ec503.fixes[0].summary
