"""`envcheck ckpt manifest` and what `verify` does with it: a flipped bit inside safetensors tensor data (which the
format cannot see) is caught; a manifest is written atomically and never over an existing one without --force."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from envcheck import cli
from envcheck.ckpt.manifest import NAME

ASSETS = Path(__file__).parent / "assets" / "ckpt"


def ckpt(capsys, *args: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(["ckpt", *args])
    out, err = capsys.readouterr()
    return code, out, err


def by_name(doc: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in doc["checkpoints"] if c["name"] == name)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ASSETS / "hf_run", tmp_path / "hf_run"))


def test_manifest_lists_every_file_with_its_sha256(capsys, run):
    code, out, err = ckpt(capsys, "manifest", str(run / "checkpoint-4"))
    assert code == 0, err
    data = json.loads((run / "checkpoint-4" / NAME).read_text())
    assert data["format"] == "envcheck-ckpt-manifest" and data["version"] == 1 and data["algorithm"] == "sha256"
    paths = [f["path"] for f in data["files"]]
    assert paths == sorted(p for p in os.listdir(run / "checkpoint-4") if p != NAME)
    import hashlib

    model = next(f for f in data["files"] if f["path"] == "model.safetensors")
    assert model["sha256"] == hashlib.sha256((run / "checkpoint-4" / "model.safetensors").read_bytes()).hexdigest()
    assert [n for n in os.listdir(run / "checkpoint-4") if n.endswith(".tmp")] == []
    assert out == f"wrote {run / 'checkpoint-4' / NAME}\n"


def test_verify_with_a_manifest_catches_a_flipped_bit_in_tensor_data(capsys, run):
    assert ckpt(capsys, "manifest", str(run))[0] == 0
    target = run / "checkpoint-4" / "model.safetensors"
    with open(target, "r+b") as handle:  # a byte in the tensor buffer: the header and sizes stay valid
        handle.seek(target.stat().st_size - 100)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x10]))
    code, out, _ = ckpt(capsys, "verify", str(run), "--json")
    doc = json.loads(out)
    bad = by_name(doc, "checkpoint-4")
    assert code == 1 and bad["status"] == "corrupt" and bad["manifest"] == "failed"
    assert [(p["file"], p["kind"]) for p in bad["problems"]] == [("model.safetensors", "corrupt")]
    assert "sha256" in bad["problems"][0]["detail"]
    assert by_name(doc, "checkpoint-2")["manifest"] == "verified"
    assert doc["resume_from"] == str(run / "checkpoint-2")


def test_without_a_manifest_the_same_flip_is_invisible_to_safetensors(capsys, run):
    target = run / "checkpoint-4" / "model.safetensors"
    with open(target, "r+b") as handle:
        handle.seek(target.stat().st_size - 100)
        handle.write(b"\x7f")
    code, out, _ = ckpt(capsys, "verify", str(run), "--json")
    assert code == 0 and by_name(json.loads(out), "checkpoint-4")["manifest"] == "absent"


def test_manifest_catches_a_file_gone_and_notes_one_added(capsys, run):
    assert ckpt(capsys, "manifest", str(run / "checkpoint-2"))[0] == 0
    (run / "checkpoint-2" / "generation_config.json").unlink()
    (run / "checkpoint-2" / "notes.txt").write_text("added later\n")
    code, out, _ = ckpt(capsys, "verify", str(run / "checkpoint-2"), "--json")
    verdict = json.loads(out)["checkpoints"][0]
    assert code == 1
    assert [(p["file"], p["kind"]) for p in verdict["problems"]] == [("generation_config.json", "missing")]
    assert any("notes.txt" in n for n in verdict["notes"])


def test_an_existing_manifest_is_never_replaced_without_force(capsys, run):
    single = run / "checkpoint-2"
    assert ckpt(capsys, "manifest", str(single))[0] == 0
    (single / NAME).write_text((single / NAME).read_text().replace('"version": 1', '"version": 1 '))
    before = (single / NAME).read_bytes()
    code, _, err = ckpt(capsys, "manifest", str(single))
    assert code == 2 and "exists; use --force" in err and len(err.strip().splitlines()) == 1
    assert (single / NAME).read_bytes() == before
    code, _, _ = ckpt(capsys, "manifest", str(single), "--force")
    assert code == 0 and (single / NAME).read_bytes() != before


def test_manifest_of_a_run_keeps_sealed_ones_and_refuses_broken_ones(capsys, run):
    assert ckpt(capsys, "manifest", str(run / "checkpoint-2"))[0] == 0
    sealed = (run / "checkpoint-2" / NAME).read_bytes()
    (run / "checkpoint-4" / "scheduler.pt").unlink()
    code, out, _ = ckpt(capsys, "manifest", str(run), "--json")
    doc = json.loads(out)
    assert code == 1
    assert doc["manifests_written"] == [str(run / NAME)]  # the final model beside the checkpoints
    assert doc["manifests_kept"] == [str(run / "checkpoint-2" / NAME)]
    assert not (run / "checkpoint-4" / NAME).exists()
    assert (run / "checkpoint-2" / NAME).read_bytes() == sealed
    assert by_name(doc, "checkpoint-4")["problems"][0]["file"] == "scheduler.pt"


def test_a_damaged_manifest_is_reported(capsys, run):
    assert ckpt(capsys, "manifest", str(run / "checkpoint-2"))[0] == 0
    (run / "checkpoint-2" / NAME).write_text("{not json")
    code, out, _ = ckpt(capsys, "verify", str(run / "checkpoint-2"), "--json")
    verdict = json.loads(out)["checkpoints"][0]
    assert code == 1 and verdict["problems"][0]["file"] == NAME and verdict["manifest"] == "failed"
