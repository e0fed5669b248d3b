"""Helpers the diagnose tests share: the primary cause of a log, through the command line as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.cli import main

DEV = Path(__file__).parent / "assets" / "diagnose" / "corpus" / "dev"


def primary(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    main(["diagnose", "--offline", "--json", str(path)])
    causes = json.loads(capsys.readouterr().out)["causes"]
    return causes[0] if causes else {"cause": None, "library": None}


def primary_of(capsys: pytest.CaptureFixture[str], folder: Path, text: str, name: str = "run.log") -> dict:
    """The primary cause of a log that holds TEXT (written to FOLDER/NAME)."""
    log = folder / name
    log.write_text(text, encoding="utf-8")
    return primary(capsys, log)
