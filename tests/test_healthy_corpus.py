"""A corpus of real, known-good stacks (tests/assets/healthy): doctor must not raise an error or fatal finding on any.

Each snapshot is one published stack (LLaMA-Factory's recommended versions, AWS Deep Learning Containers, axolotl's
base images, vLLM's pinned torch, an NGC PyTorch release), filled in with what the resolver picks for that stack;
SOURCES.md names the source of every file. A finding of severity error or fatal here is a false alarm to fix in
the check, never a reason to edit the snapshot.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from envcheck.checks import run_checks
from envcheck.checks.model import Severity
from envcheck.matrix import load_matrix
from envcheck.snapshot import Snapshot

HEALTHY = Path(__file__).parent / "assets" / "healthy"
SCHEMA = json.loads((Path(__file__).parent.parent / "envcheck" / "schema" / "snapshot.schema.json").read_text())
FILES = sorted(HEALTHY.glob("*.json"))
BAD = {Severity.ERROR, Severity.FATAL}


def _sources() -> dict[str, str]:
    """SOURCES.md: one '## <file>.json' section per snapshot; returns file name -> that section's text."""
    sections: dict[str, str] = {}
    current = None
    for line in (HEALTHY / "SOURCES.md").read_text().splitlines():
        heading = re.match(r"^## `?([\w.+-]+\.json)`?\s*$", line)
        if heading:
            current = heading.group(1)
            sections[current] = ""
        elif current:
            sections[current] += line + "\n"
    return sections


@pytest.fixture(scope="module")
def matrix():  # type: ignore[no-untyped-def]
    return load_matrix(None)


def test_corpus_is_large_enough() -> None:
    assert len(FILES) >= 25, [f.name for f in FILES]


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_schema_valid(path: Path) -> None:
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_has_a_cited_source(path: Path) -> None:
    sources = _sources()
    assert path.name in sources, f"{path.name} has no section in SOURCES.md"
    assert re.search(r"https://\S+", sources[path.name]), f"{path.name}: its SOURCES.md section cites no URL"


def test_sources_name_only_existing_files() -> None:
    assert sorted(_sources()) == [f.name for f in FILES]


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_no_error_or_fatal_finding(path: Path, matrix) -> None:  # type: ignore[no-untyped-def]
    snapshot = Snapshot.from_dict(json.loads(path.read_text()), str(path))
    findings = run_checks(snapshot, matrix)
    bad = [f for f in findings if f.severity in BAD]
    assert not bad, f"{path.name}: " + "; ".join(f"{f.id} [{f.severity.label}] {f.title}" for f in bad)
