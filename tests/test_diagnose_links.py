"""diagnose --snapshot: a cause seen in the log is linked to the doctor finding that predicted it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ASSETS
from test_broken_machines import SCENARIOS

from envcheck import cli

UNDEFINED_SYMBOL_LOG = ASSETS / "diagnose" / "recorded" / "import-undefined-symbol.log"


def test_undefined_symbol_links_to_the_doctor_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build = SCENARIOS["flash_attn_other_torch"][0]  # the runtime import of flash_attn_2_cuda missed a c10 symbol
    snapshot = tmp_path / "node.json"
    snapshot.write_text(json.dumps(build().to_dict()))
    code = cli.main(["diagnose", "--offline", "--json", "--snapshot", str(snapshot), str(UNDEFINED_SYMBOL_LOG)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    primary = report["causes"][0]
    assert primary["cause"] == "segfault_abi_mismatch"
    assert "EC311" in [f["id"] for f in primary["findings"]]


def test_without_a_snapshot_nothing_is_linked(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["diagnose", "--offline", "--json", str(UNDEFINED_SYMBOL_LOG)])
    report = json.loads(capsys.readouterr().out)
    assert report["causes"][0]["cause"] == "segfault_abi_mismatch"
    assert report["causes"][0]["findings"] == []
