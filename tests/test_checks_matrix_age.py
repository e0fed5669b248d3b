"""EC517: installed releases newer than any release the matrix knows (compat_matrix/newest.toml)."""

from __future__ import annotations

import dataclasses

from test_broken_machines import healthy_h100

from envcheck.checks import run_checks
from envcheck.checks.model import Severity
from envcheck.matrix import load_matrix

MATRIX = load_matrix()


def with_packages(**changes: str):  # type: ignore[no-untyped-def]
    snap = healthy_h100()
    packages = {**snap.python.packages, **{k.replace("_", "-"): v for k, v in changes.items()}}
    return dataclasses.replace(snap, python=dataclasses.replace(snap.python, packages=packages))


def ec517(snap):  # type: ignore[no-untyped-def]
    return [f for f in run_checks(snap, MATRIX) if f.id == "EC517"]


def newest(package: str) -> str:
    return next(r.version for r in MATRIX.newest_releases if r.package == package)


def test_deepspeed_newer_than_any_known_release_is_named_with_the_data_date() -> None:
    assert newest("deepspeed") == "0.19.8"
    (finding,) = ec517(with_packages(deepspeed="0.20.1"))
    assert finding.severity == Severity.INFO and finding.category == "other"
    assert "deepspeed 0.20.1" in finding.title and MATRIX.data_version in finding.title
    (evidence,) = finding.evidence
    assert evidence.fact == "python.packages.deepspeed" and evidence.observed == "0.20.1"
    assert evidence.expected == "newest known release 0.19.8"
    assert "sdist metadata of deepspeed==0.19.8" in evidence.source and MATRIX.data_version in evidence.source
    assert "judged them from that newest known release" in finding.detail


def test_several_newer_packages_are_listed_and_local_labels_are_ignored() -> None:
    (finding,) = ec517(with_packages(deepspeed="0.20.0", torch="2.16.0+cu130", trl="1.16.0"))
    assert [e.fact for e in finding.evidence] == ["python.packages.deepspeed", "python.packages.torch"]


def test_no_finding_when_installed_is_not_newer_than_known() -> None:
    assert ec517(healthy_h100()) == []
    assert ec517(with_packages(deepspeed="0.19.8", trl="1.16.0", nvidia_nccl_cu12="2.32.3")) == []
    assert ec517(with_packages(deepspeed="0.19.8+local")) == []


def test_package_checks_judge_a_newer_release_from_the_newest_known_one() -> None:
    """EC507 finds no matrix row for deepspeed 0.20.0, so it judges from 0.19.8's row and says so."""
    judged = [f for f in run_checks(with_packages(deepspeed="0.20.0", torch="1.13.1"), MATRIX)
              if f.id == "EC507" and f.title.startswith("deepspeed 0.20.0 needs torch >=2.0.0")]
    assert judged
    for finding in judged:
        assert "the newest release the matrix knows" in finding.detail
        assert finding.evidence[-1].fact == "matrix.newest_release" and finding.evidence[-1].observed == "0.19.8"
