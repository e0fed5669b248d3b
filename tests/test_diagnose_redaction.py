"""diagnose quotes log lines: secrets, user names and home paths in them must not reach its output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck import cli

TOKEN = "hf_abcdefghijklmnopqrstuvwxyz123456"


@pytest.mark.parametrize("as_json", [False, True])
def test_log_lines_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                as_json: bool) -> None:
    home = tmp_path / "home" / "alice"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WANDB_API_KEY", "secretsecretsecret123")
    log = tmp_path / "train.log"
    log.write_text(f"torch.OutOfMemoryError: CUDA out of memory. token {TOKEN} key secretsecretsecret123 "
                   f"url https://alice:pw123@host/x home {home}/run\n")
    cli.main(["diagnose", "--offline", str(log), *(["--json"] if as_json else [])])
    out = capsys.readouterr().out
    assert "CUDA out of memory" in out
    for secret in (TOKEN, "secretsecretsecret123", "pw123", str(home)):
        assert secret not in out
    if as_json:
        json.loads(out)
