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


def causes(capsys: pytest.CaptureFixture[str], path: Path) -> list[dict]:
    """The causes `envcheck diagnose --offline --json` gives a log, in rank order."""
    main(["diagnose", "--offline", "--json", str(path)])
    return json.loads(capsys.readouterr().out)["causes"]


def causes_of(capsys: pytest.CaptureFixture[str], folder: Path, text: str, name: str = "run.log") -> list[dict]:
    """The causes of a log that holds TEXT (written to FOLDER/NAME)."""
    log = folder / name
    log.write_text(text, encoding="utf-8")
    return causes(capsys, log)


def primary(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    found = causes(capsys, path)
    return found[0] if found else {"cause": None, "library": None}


def primary_of(capsys: pytest.CaptureFixture[str], folder: Path, text: str, name: str = "run.log") -> dict:
    """The primary cause of a log that holds TEXT (written to FOLDER/NAME)."""
    found = causes_of(capsys, folder, text, name)
    return found[0] if found else {"cause": None, "library": None}


def primary_cause(path: Path) -> str:
    """The name of the primary cause the engine gives a log (offline, the log alone), "unknown" when none."""
    result = diagnose(Request(logs=(str(path),), system=False))
    return result.causes[0].cause if result.causes else "unknown"
