"""The torch-free readers on their own: the restricted unpickler runs nothing a pickle names, torch.save zips are
checked record by record, and the ckpt command never imports torch, prints progress only on a terminal, and
answers bad input with one line and exit 2."""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from envcheck import cli
from envcheck.ckpt import integrity, unpickle

ASSETS = Path(__file__).parent / "assets" / "ckpt"
REPO = Path(__file__).parent.parent


class _Boom:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def test_restricted_unpickler_executes_nothing(tmp_path):
    marker = tmp_path / "ran"
    data = pickle.dumps({"dp_world_size": 2, "payload": _Boom(str(marker)), "exec": _Exec()}, protocol=2)
    result = unpickle.loads(data)
    assert not marker.exists()
    assert result.root["dp_world_size"] == 2
    assert isinstance(result.root["payload"], unpickle.Inert)
    assert isinstance(result.root["exec"], unpickle.Inert)
    assert {name.rsplit(".", 1)[1] for name in result.globals_named} == {"system", "exec"}


class _Exec:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (exec, ("raise SystemExit(99)",))


def test_unpickler_reads_real_training_args_and_deepspeed_shards():
    args, _, _ = unpickle.read_archive_pickle(str(ASSETS / "hf_run" / "checkpoint-2" / "training_args.bin"))
    fields = unpickle.plain(args.root)
    assert fields["save_only_model"] is False and fields["max_steps"] == 4 and fields["save_steps"] == 2
    shard, top, names = unpickle.read_archive_pickle(
        str(ASSETS / "ds_zero2" / "global_step2" / "zero_pp_rank_1_mp_rank_00_optim_states.pt"))
    state = unpickle.plain(shard.root["optimizer_state_dict"])
    assert state["partition_count"] == [2] and unpickle.scalar(shard.root["optimizer_state_dict"]["zero_stage"]) == 2
    assert all(f"{top}/data/{ref.key}" in names for ref in shard.storages)


def _rezip(source: Path, dest: Path, drop: str | None = None, zero_crc: bool = False) -> None:
    """Rewrite a torch.save zip record by record (STORED, as torch writes), optionally without one record."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(dest, "w", zipfile.ZIP_STORED) as new:
        for info in old.infolist():
            if drop and info.filename.endswith(drop):
                continue
            new.writestr(info.filename, old.read(info))
    if zero_crc:  # what compute_crc32=False leaves: patch every CRC field to 0 in local and central headers
        raw = bytearray(dest.read_bytes())
        with zipfile.ZipFile(io.BytesIO(bytes(raw))) as archive:
            infos = archive.infolist()
            central = raw.rfind(b"PK\x05\x06")
            cd_offset = int.from_bytes(raw[central + 16:central + 20], "little")
        for info in infos:
            raw[info.header_offset + 14:info.header_offset + 18] = b"\0\0\0\0"
        pos = cd_offset
        while raw[pos:pos + 4] == b"PK\x01\x02":
            raw[pos + 16:pos + 20] = b"\0\0\0\0"
            name_len, extra_len, comment_len = (int.from_bytes(raw[pos + o:pos + o + 2], "little") for o in (28, 30, 32))
            pos += 46 + name_len + extra_len + comment_len
        dest.write_bytes(bytes(raw))


def test_a_storage_record_missing_from_the_zip_is_corrupt(tmp_path):
    source = ASSETS / "hf_run" / "checkpoint-2" / "optimizer.pt"
    _rezip(source, tmp_path / "optimizer.pt", drop="/data/3")
    result = integrity.check_file(str(tmp_path), "optimizer.pt", "zip", False, None)
    assert [(p.kind, "storage" in p.detail and "3" in p.detail) for p in result.problems] == [("corrupt", True)]


def test_zip_without_recorded_crcs_is_noted_not_failed(tmp_path):
    _rezip(ASSETS / "hf_run" / "checkpoint-2" / "scheduler.pt", tmp_path / "a.pt")  # sanity: a rewrite is clean
    assert integrity.check_file(str(tmp_path), "a.pt", "zip", False, None).problems == ()
    _rezip(ASSETS / "hf_run" / "checkpoint-2" / "rng_state.pth", tmp_path / "b.pth", zero_crc=True)
    result = integrity.check_file(str(tmp_path), "b.pth", "zip", False, None)
    assert result.problems == () and any("no CRC-32s recorded" in n for n in result.notes)


def test_legacy_torch_pickle_is_unverifiable_not_corrupt(tmp_path):
    (tmp_path / "old.bin").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    result = integrity.check_file(str(tmp_path), "old.bin", "zip", False, None)
    assert result.problems == () and "legacy" in result.notes[0]


def test_safetensors_offsets_and_trailing_bytes(tmp_path):
    good = (ASSETS / "peft_run" / "checkpoint-2" / "adapter_model.safetensors").read_bytes()
    (tmp_path / "long.safetensors").write_bytes(good + b"\0" * 8)
    problems = integrity.safetensors_problems("x", str(tmp_path / "long.safetensors"), len(good) + 8)
    assert problems[0].kind == "corrupt" and "after the last tensor" in problems[0].detail
    length = int.from_bytes(good[:8], "little")
    header = json.loads(good[8:8 + length])
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"][1] += 4  # a span that no longer matches dtype x shape
    raw = json.dumps(header).encode()
    (tmp_path / "bad.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw + good[8 + length:])
    problems = integrity.safetensors_problems("x", str(tmp_path / "bad.safetensors"),
                                              (tmp_path / "bad.safetensors").stat().st_size)
    assert problems[0].kind == "corrupt" and name in problems[0].detail


def test_stream_uses_one_fixed_buffer_and_counts_progress(tmp_path):
    big = tmp_path / "blob.bin"
    big.write_bytes(os.urandom(integrity.CHUNK * 2 + 123))
    seen: list[int] = []
    buffer = bytearray(integrity.CHUNK)
    result = integrity.check_file(str(tmp_path), "blob.bin", "any", True, None, seen.append, buffer)
    import hashlib

    assert result.sha256 == hashlib.sha256(big.read_bytes()).hexdigest()
    assert seen == [integrity.CHUNK, integrity.CHUNK, 123] and len(buffer) == integrity.CHUNK


def test_ckpt_never_imports_torch():
    code = ("import sys; sys.modules['torch'] = None\n"  # an import of torch would raise
            "from envcheck.cli import main\n"
            f"raise SystemExit(main(['ckpt', 'verify', {str(ASSETS / 'hf_ds_zero2')!r}, '--deep', '--json']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_progress_bar_only_on_a_terminal_and_never_with_json(capsys, monkeypatch, tmp_path):
    run = Path(shutil.copytree(ASSETS / "ds_zero2", tmp_path / "ds"))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert cli.main(["ckpt", "verify", str(run)]) == 0
    _, err = capsys.readouterr()
    assert "GB/s" in err and err.endswith("\r")
    assert cli.main(["ckpt", "verify", str(run), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["ok"]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert cli.main(["ckpt", "verify", str(run)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, says", [
    (["ckpt", "verify", "/no/such/dir"], "no such file or directory"),
    (["ckpt", "verify", str(ASSETS / "versions.json")], "not a directory"),
    (["ckpt", "latest", str(ASSETS / "hf_run" / "checkpoint-2" / "optimizer.pt")], "not a directory"),
    (["ckpt", "manifest", str(REPO / "benchmarks")], "no checkpoint here"),
    (["ckpt", "verify"], "required"),
    (["ckpt"], "needs an action"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, says):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and says in err and len(err.strip().splitlines()) == 1


def test_deep_json_lists_every_file_hash(capsys):
    assert cli.main(["ckpt", "verify", str(ASSETS / "peft_run" / "checkpoint-2"), "--deep", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    files = doc["checkpoints"][0]["files"]
    assert len(files) == 8 and all(len(f["sha256"]) == 64 for f in files)
    assert doc["checkpoints"][0]["bytes_read"] == sum(f["size"] for f in files)


@pytest.mark.parametrize("want_hash", [False, True])
def test_big_archives_split_between_threads_still_catch_a_flip(tmp_path, monkeypatch, want_hash):
    """Above PARALLEL_BYTES the records' CRCs run on several threads (or beside the hash): same verdicts."""
    monkeypatch.setattr(integrity, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(integrity, "PARALLEL", 3)
    target = tmp_path / "optimizer.pt"
    shutil.copy(ASSETS / "hf_run" / "checkpoint-2" / "optimizer.pt", target)
    seen: list[int] = []
    clean = integrity.check_file(str(tmp_path), "optimizer.pt", "zip", want_hash, None, seen.append)
    assert clean.problems == () and 0 < sum(seen) <= target.stat().st_size
    with open(target, "r+b") as handle:
        handle.seek(target.stat().st_size * 2 // 3)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x80]))
    broken = integrity.check_file(str(tmp_path), "optimizer.pt", "zip", want_hash, None)
    assert [p.kind for p in broken.problems] == ["corrupt"] and "CRC-32" in broken.problems[0].detail
