"""The per-user matrix cache: the same rows as a load from the files, and never an entry for other bytes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envcheck.matrix import MatrixError, bundled_matrix_dir, load_matrix


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(folder))
    monkeypatch.delenv("ENVCHECK_NO_CACHE", raising=False)
    return folder


@pytest.fixture
def matrix_copy(tmp_path: Path) -> Path:
    target = tmp_path / "matrix"
    shutil.copytree(bundled_matrix_dir(), target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_a_cached_load_has_the_rows_of_a_load_from_the_files(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_matrix()
    assert len(list(cache.glob("matrix-*.pickle"))) == 1
    again = load_matrix()
    monkeypatch.setenv("ENVCHECK_NO_CACHE", "1")
    assert again == first == load_matrix()
    assert again.package_releases and again.signatures


def test_an_edit_of_the_same_size_and_time_is_not_served_from_the_cache(cache: Path, matrix_copy: Path) -> None:
    path = matrix_copy / "signatures.toml"
    before = load_matrix(str(matrix_copy), only=frozenset({"signatures.toml"}))
    stat = path.stat()
    text = path.read_text(encoding="utf-8")
    changed = text.replace("confidence = 0.9", "confidence = 0.8", 1)
    assert changed != text and len(changed) == len(text)
    path.write_text(changed, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = load_matrix(str(matrix_copy), only=frozenset({"signatures.toml"}))
    assert after != before
    assert sum(s.confidence for s in after.signatures) == pytest.approx(sum(s.confidence for s in before.signatures) - 0.1)


def test_a_broken_matrix_still_fails_after_a_good_load_was_cached(cache: Path, matrix_copy: Path) -> None:
    load_matrix(str(matrix_copy))
    (matrix_copy / "gpus.toml").unlink()
    with pytest.raises(MatrixError, match="incomplete matrix, missing gpus.toml"):
        load_matrix(str(matrix_copy))


def test_a_corrupt_entry_or_an_unwritable_folder_means_loading_from_the_files(cache: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    expected = load_matrix(only=frozenset({"signatures.toml"}))
    (entry,) = cache.glob("matrix-*.pickle")
    entry.write_bytes(b"not a pickle")
    assert load_matrix(only=frozenset({"signatures.toml"})) == expected
    blocked = cache.parent / "blocked"
    blocked.write_text("a file, not a folder")
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(blocked / "envcheck"))
    assert load_matrix(only=frozenset({"signatures.toml"})) == expected


def test_no_cache_writes_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVCHECK_NO_CACHE", "1")
    load_matrix()
    assert not cache.exists()


def test_memo_builds_once_per_material(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envcheck.matrix.cache import memo

    calls: list[int] = []

    def build() -> tuple[int, ...]:
        calls.append(1)
        return (1, 2, 3)

    assert memo("test", b"abc", build) == (1, 2, 3) and memo("test", b"abc", build) == (1, 2, 3)
    assert len(calls) == 1
    assert memo("test", b"abd", build) == (1, 2, 3) and len(calls) == 2  # other material, other entry
    monkeypatch.setenv("ENVCHECK_NO_CACHE", "1")
    memo("test", b"abc", build)
    assert len(calls) == 3


def test_memo_rebuilds_when_the_code_it_names_changes(cache: Path, tmp_path: Path) -> None:
    """The anchors' entry is keyed by literals.py too: an extractor edited within one version must not be served
    the anchors its old code found."""
    from envcheck.matrix.cache import memo

    source = tmp_path / "extractor.py"
    source.write_text("def anchors(): return 1\n")
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return len(calls)

    assert memo("test-code", b"abc", build, code=(str(source),)) == 1
    assert memo("test-code", b"abc", build, code=(str(source),)) == 1  # unchanged code: the cached entry
    source.write_text("def anchors(): return 2\n")
    assert memo("test-code", b"abc", build, code=(str(source),)) == 2


def test_a_cached_hyperscan_database_finds_what_a_fresh_one_does(cache: Path) -> None:
    pytest.importorskip("hyperscan", reason="no hyperscan wheel (a dependency on Linux x86-64/aarch64 only)")
    from envcheck.diagnose.multimatch import hyperscan_finder

    keys = (b"CUDA out of memory", b"NCCL WARN ", b"Killed")
    data = b"step 1\nNCCL WARN x\ntorch.OutOfMemoryError: CUDA out of memory. Tried\nKilled\n"
    fresh = list(hyperscan_finder(keys)(data))  # type: ignore[misc]
    assert list(cache.glob("hyperscan-*.pickle"))
    again = list(hyperscan_finder(keys)(data))  # type: ignore[misc]
    assert fresh == again and [k for _s, _e, k in fresh] == [b"NCCL WARN ", b"CUDA out of memory", b"Killed"]
