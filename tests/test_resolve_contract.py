"""resolve/env as scripts see them when the target is impossible: the reason names the real blocker, and --json
still prints one document with the Resolve JSON keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck import cli

CONTRACT_KEYS = {"target", "matrix_version", "pins", "ranges", "locked", "torch_index", "base_image", "reasons",
                 "warnings"}


def test_reason_names_the_users_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["resolve", "--driver", "580.95.05", "--gpu", "H100", "--with", "deepspeed>=99"]) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert "deepspeed" in first and ">=99" in first and "no kernels" not in first


def test_impossible_resolve_json_keeps_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["resolve", "--driver", "535.104.05", "--gpu", "T4", "--with", "flash-attn", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert CONTRACT_KEYS <= set(report) and report["possible"] is False and report["pins"] == {}


def test_impossible_env_json_prints_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["env", "--driver", "535.104.05", "--gpu", "T4", "--with", "flash-attn", "--format",
                     "environment.yml", "-o", str(tmp_path / "out"), "--json"])
    assert code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == [] and CONTRACT_KEYS <= set(report["resolution"])
    assert not (tmp_path / "out").exists()


def test_env_output_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    args = ["env", "--driver", "580.95.05", "--gpu", "H100", "--format", "environment.yml"]
    assert cli.main([*args, "-o", str(afile)]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert cli.main([*args, "-o", str(tmp_path / "missing" / "deeper")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_unjudgeable_driver_is_a_rejection_reason() -> None:
    """A target the driver check cannot judge (no driver given) rejects each build naming the missing fact; the
    solver must not crash on it (the CLI refuses such targets earlier, so this calls the solver directly)."""
    from envcheck.matrix import load_matrix
    from envcheck.resolve.solver import _candidates
    from envcheck.resolve.target import GpuTarget, Target

    target = Target(driver=None, cuda_driver=None, gpus=(GpuTarget("H100", "9.0"),), python="3.11", glibc=None,
                    arch="x86_64", torch="2.5", cuda="12.4")
    notes: list[str] = []
    assert _candidates(load_matrix(), target, "3.11", notes) == []
    assert notes and all("the driver version was not probed" in note for note in notes)
