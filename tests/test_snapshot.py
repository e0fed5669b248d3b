"""Snapshot round-trip, schema validation, and clear errors for malformed snapshot files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SCHEMA_PATH, assert_valid_snapshot

from envcheck.errors import SnapshotError
from envcheck.capture import capture
from envcheck.snapshot import Snapshot, load_snapshot


@pytest.fixture(scope="module")
def live() -> Snapshot:
    return capture(deep=False)


def test_round_trip_is_lossless(live: Snapshot) -> None:
    data = live.to_dict()
    assert Snapshot.from_dict(json.loads(json.dumps(data))) == live
    assert Snapshot.from_dict(data).to_dict() == data


def test_live_snapshot_matches_the_json_schema(live: Snapshot) -> None:
    assert_valid_snapshot(live.to_dict())


def test_schema_documents_every_record_field() -> None:
    """The JSON Schema is hand-written with descriptions; this keeps it from drifting from the records."""
    import dataclasses

    from envcheck import snapshot as records

    schema = json.loads(SCHEMA_PATH.read_text())
    props = schema["properties"]
    sections = {"host": records.Host, "nvidia": records.Nvidia, "python": records.PythonEnv, "torch": records.Torch,
                "deepspeed": records.DeepSpeed}
    assert set(props) == {f.name for f in dataclasses.fields(records.Snapshot)}
    for key, record in sections.items():
        assert set(props[key]["properties"]) == {f.name for f in dataclasses.fields(record)}, key
    items = {"cuda_toolkits": records.CudaToolkit, "libraries": records.Library}
    for key, record in items.items():
        assert set(props[key]["items"]["properties"]) == {f.name for f in dataclasses.fields(record)}, key
    assert set(props["nvidia"]["properties"]["gpus"]["items"]["properties"]) == {
        f.name for f in dataclasses.fields(records.Gpu)}
    assert set(props["runtime"]["additionalProperties"]["properties"]) == {
        f.name for f in dataclasses.fields(records.RuntimeResult)}


@pytest.mark.parametrize("content, message", [
    (b"", "not valid JSON"),
    (b"{not json", "not valid JSON (line 1, column 2"),
    (b"\xff\xfe\x00binary", "not UTF-8"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"envcheck_version": "0.1.0"}', "schema_version: missing"),
    (b'{"schema_version": 99, "envcheck_version": "9", "captured_at": "x"}', "schema_version 99 is not supported"),
    (b'{"schema_version": 1, "envcheck_version": "0.1.0"}', "captured_at: required key is missing"),
    (b'{"schema_version": 1, "envcheck_version": "0.1.0", "captured_at": "x", "nvidia": {"gpus": [{"index": 0, '
     b'"name": "H100"}, {"index": "one", "name": "H100"}]}}', "nvidia.gpus[1].index: expected an integer, got str"),
    (b'{"schema_version": 1, "envcheck_version": "0.1.0", "captured_at": "x", "host": {"shm_bytes": true}}',
     "host.shm_bytes: expected an integer, got bool"),
])
def test_malformed_snapshot_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(content)
    with pytest.raises(SnapshotError) as error:
        load_snapshot(str(path))
    assert message in str(error.value)
    assert str(error.value).startswith(str(path))


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="cannot read: No such file"):
        load_snapshot(str(tmp_path / "absent.json"))
    with pytest.raises(SnapshotError, match="is a directory"):
        load_snapshot(str(tmp_path))


def test_runtime_skip_reason_says_why() -> None:
    no_gpu_here = capture(deep=None)
    if no_gpu_here.nvidia and no_gpu_here.nvidia.gpus:
        pytest.skip("a GPU is present: the default imports in children")
    assert no_gpu_here.runtime is None
    assert "no GPU found" in (no_gpu_here.skipped_reason("runtime") or "")
    assert capture(deep=False).skipped_reason("runtime") == "disabled with --no-deep"


def test_null_sections_mean_not_probed(tmp_path: Path) -> None:
    """CONTRACT.md: sections that were not probed are absent or null."""
    data = {"schema_version": 1, "envcheck_version": "0.1.0", "captured_at": "x", "host": None, "nvidia": None,
            "cuda_toolkits": None, "libraries": None, "env": None, "runtime": None, "skipped": None}
    assert_valid_snapshot(data)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    snap = load_snapshot(str(path))
    assert snap.cuda_toolkits == () and snap.env == {} and snap.skipped == ()
