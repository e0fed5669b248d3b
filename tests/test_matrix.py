"""The matrix loader: the bundled data is valid and sourced; bad data fails with the file and the key path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envcheck import cli
from envcheck.matrix import MatrixError, bundled_matrix_dir, load_matrix
from envcheck.matrix.validate import problems

BUNDLED = Path(bundled_matrix_dir())


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "matrix"
    shutil.copytree(BUNDLED, target)
    return target


def test_bundled_matrix_is_valid_and_every_row_has_a_source() -> None:
    matrix = load_matrix()
    assert problems(matrix) == []
    counts = matrix.counts()
    assert all(counts[name] > 0 for name in counts), counts
    for name in counts:
        for row in getattr(matrix, name):
            assert row.source.strip(), (name, row)


def test_matrix_validate_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "validate"]) == 0
    assert "valid" in capsys.readouterr().out


def test_facts_every_check_relies_on_are_present() -> None:
    """Spot facts that checks need; each is sourced in the data (see the rows' source keys)."""
    from envcheck.matrix import query

    matrix = load_matrix()
    assert query.gpu_model(matrix, "NVIDIA H100 80GB HBM3").compute_capability == "9.0"
    assert query.gpu_model(matrix, "Tesla V100-SXM2-32GB").compute_capability == "7.0"
    assert query.gpu_model(matrix, "NVIDIA A100-SXM4-80GB").compute_capability == "8.0"
    assert query.gpu_model(matrix, "NVIDIA A10G").compute_capability == "8.6"
    assert query.gpu_model(matrix, "NVIDIA L40S").compute_capability == "8.9"
    assert query.gpu_model(matrix, "NVIDIA GeForce RTX 5090").compute_capability == "12.0"
    assert query.cuda_release(matrix, "12.4").min_driver_linux.startswith("550.")
    assert query.minor_version_compat(matrix, 12).min_driver_linux.startswith("525.")
    assert "9.0" in query.torch_build(matrix, "2.5.1+cu124", "12.4").arch_list


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_incomplete_matrix_is_refused(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (copy / "signatures.toml").unlink()
    with pytest.raises(MatrixError, match="incomplete matrix, missing signatures.toml"):
        load_matrix(str(copy))
    assert cli.main(["matrix", "validate", "--matrix", str(copy), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False and "signatures.toml" in report["problems"][0]


@pytest.mark.parametrize("file, old, new, message", [
    ("cuda.toml", "schema_version = 1", "schema_version = 2", "cuda.toml: schema_version 2 is not supported"),
    ("cuda.toml", 'data_version = "2026.11.29"', 'data_version = "yesterday"', "cuda.toml: data_version"),
    ("gpus.toml", 'compute_capability = "9.0"', "compute_capability = 9.0", "gpus.toml: gpu["),
    ("torch.toml", "[[torch_build]]", "[[torch_build]]\nsha = 1", ".sha: unknown key"),
    ("cuda.toml", "[[cuda_release]]", "[[cuda_release]]\nversion = ", "not valid TOML"),
])
def test_bad_file_names_file_and_key(copy: Path, file: str, old: str, new: str, message: str) -> None:
    _replace(copy / file, old, new)
    with pytest.raises(MatrixError) as error:
        load_matrix(str(copy))
    assert message in str(error.value)
    assert file in str(error.value)


def test_cross_file_problems_are_all_listed(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _replace(copy / "known_bad.toml", 'id = "KB002"', 'id = "KB001"')
    _replace(copy / "signatures.toml", "pattern = '", "pattern = '(unclosed")
    _replace(copy / "known_bad.toml", 'category = "version_conflict"', 'category = "gremlins"')
    _replace(copy / "torch.toml", 'torch = "2.5"', 'torch = "9.9"')
    assert cli.main(["matrix", "validate", "--matrix", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "duplicate id 'KB001'" in out
    assert "pattern: does not compile" in out
    assert "unknown category 'gremlins'" in out
    assert "torch_build[" in out and "'9.9' has no [[torch_release]] row" in out


def test_min_envcheck_gate(copy: Path) -> None:
    _replace(copy / "meta.toml", 'min_envcheck = "0.1.0"', 'min_envcheck = "99.0"')
    with pytest.raises(MatrixError, match="needs envcheck >= 99.0"):
        load_matrix(str(copy))


def test_unknown_file_is_refused(copy: Path) -> None:
    (copy / "extra.toml").write_text('schema_version = 1\ndata_version = "2026.11.29"\n')
    with pytest.raises(MatrixError, match="extra.toml: unknown matrix file"):
        load_matrix(str(copy))


def test_doctor_with_a_broken_user_matrix_exits_2(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _replace(copy / "cuda.toml", "schema_version = 1", "schema_version = 7")
    assert cli.main(["doctor", "--matrix", str(copy), "--no-deep"]) == 2
    assert "schema_version 7" in capsys.readouterr().err


def test_show_prints_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "show"]) == 0
    out = capsys.readouterr().out
    assert "CUDA -> minimum Linux driver" in out and "known-bad combinations" in out
