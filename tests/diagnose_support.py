"""Helpers the diagnose tests share: the primary cause of a log, through the command line as a user runs it or
through the engine (faster, for the corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.diagnose.engine import Request, diagnose

CORPUS = Path(__file__).parent / "assets" / "diagnose" / "corpus"
DEV = CORPUS / "dev"


def primary(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    main(["diagnose", "--offline", "--json", str(path)])
    causes = json.loads(capsys.readouterr().out)["causes"]
    return causes[0] if causes else {"cause": None, "library": None}


def primary_of(capsys: pytest.CaptureFixture[str], folder: Path, text: str, name: str = "run.log") -> dict:
    """The primary cause of a log that holds TEXT (written to FOLDER/NAME)."""
    log = folder / name
    log.write_text(text, encoding="utf-8")
    return primary(capsys, log)


def primary_cause(path: Path) -> str:
    """The name of the primary cause the engine gives a log (offline, the log alone), "unknown" when none."""
    result = diagnose(Request(logs=(str(path),), system=False))
    return result.causes[0].cause if result.causes else "unknown"
