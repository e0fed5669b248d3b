"""envcheck's own distribution: installed under its own name (envcheck-llm) from a local build, and envcheck.pyz,
the zipapp emitted Dockerfiles COPY instead of installing envcheck from an index by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, assert_valid_snapshot, make_venv

import envcheck
from envcheck.cli import main
from envcheck.emit import zipapp

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FLAGS = ["--driver", "580.95.05", "--gpu", "H100", "--with", "deepspeed"]


def test_the_distribution_name_is_ours() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == envcheck.DISTRIBUTION == "envcheck-llm"
    assert project["scripts"] == {"envcheck": "envcheck.cli:main"}


def _offline_backend_or_skip() -> None:
    """The build backend pyproject names must be installed here: without build isolation nothing is downloaded."""
    from packaging.version import Version

    setuptools = pytest.importorskip("setuptools", reason="setuptools is not installed: no offline wheel build")
    have = Version(setuptools.__version__)
    if have < Version("68"):
        pytest.skip(f"setuptools {have} is older than pyproject's setuptools>=68: no offline wheel build")
    if have < Version("70.1"):
        pytest.importorskip("wheel", reason=f"setuptools {have} needs the wheel package to build wheels")


def test_wheel_builds_offline_and_installs_under_its_name(tmp_path: Path) -> None:
    _offline_backend_or_skip()
    source = tmp_path / "src"  # a copy, so the build leaves no build/ or *.egg-info in the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("envcheck", "compat_matrix"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "-w", str(wheels), "--no-deps",
                           "--no-build-isolation", "--no-index", "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = wheels.glob("*.whl")
    assert wheel.name.startswith("envcheck_llm-0.1.0-")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--find-links",
                           str(wheels), "--no-deps", "-q", envcheck.DISTRIBUTION], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    probe = ("import importlib.metadata as m, envcheck.compat_matrix as c, os; d = m.distribution('envcheck-llm'); "
             "print(d.metadata['Name'], d.version, sorted(e.name for e in d.entry_points), "
             "os.path.exists(os.path.join(os.path.dirname(c.__file__), 'torch.toml')))")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.split() == ["envcheck-llm", envcheck.__version__, "['envcheck']", "True"], done.stderr
    done = subprocess.run([str(venv / "bin" / "envcheck"), "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.strip() == f"envcheck {envcheck.__version__}", done.stderr


def test_zipapp_is_deterministic_and_holds_the_package_data() -> None:
    first, second = zipapp.build(), zipapp.build()
    assert first == second and first.startswith(zipapp.SHEBANG)
    archive = zipfile.ZipFile(__import__("io").BytesIO(first))
    names = archive.namelist()
    assert names[0] == "__main__.py" and names[1:] == sorted(names[1:])
    assert {"envcheck/cli.py", "envcheck/schema/snapshot.schema.json", "envcheck/compat_matrix/torch.toml",
            "envcheck/compat_matrix/__init__.py", "envcheck/probes/pyenv_script.py"} <= set(names)
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert (REPO / "compat_matrix" / "torch.toml").read_bytes() == archive.read("envcheck/compat_matrix/torch.toml")


@pytest.fixture
def bare_python(tmp_path: Path) -> Path:
    """A real venv with only `packaging` (what a locked stack provides): no nvidia-ml-py, no envcheck."""
    import packaging

    env = make_venv(tmp_path / "bare")
    shutil.copytree(Path(packaging.__file__).parent, env.site / "packaging", ignore=shutil.ignore_patterns("__pycache__"))
    return env.python


def test_zipapp_runs_doctor_without_envcheck_or_nvml_installed(tmp_path: Path, bare_python: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    pyz = target / zipapp.NAME
    pyz.write_bytes(zipapp.build())
    check = subprocess.run([str(bare_python), "-c", "import pynvml"], capture_output=True)
    assert check.returncode != 0  # the probe must fall back to nvidia-smi and /proc without the NVML binding
    # as the emitted Dockerfiles run it: with the image's venv active (VIRTUAL_ENV and PATH)
    venv = bare_python.parent.parent
    active = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(bare_python), str(pyz), "doctor", "--json"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, env=active)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert_valid_snapshot(report["snapshot"])
    assert report["snapshot"]["python"]["executable"].startswith(str(tmp_path / "bare"))
    assert "EC901" not in {f["id"] for f in report["findings"]}  # the bundled matrix loaded from the archive
    assert report["matrix_version"] is not None
    done = subprocess.run([str(bare_python), str(pyz), "doctor", "--no-such-flag"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bare", "out"]  # it unpacked nowhere it was run


@pytest.mark.network
def test_env_dockerfile_ships_the_zipapp_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "image"
    assert main(["env", *FLAGS, "--format", "dockerfile", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["Dockerfile", "envcheck.pyz", "requirements.lock.txt"]
    assert (out / zipapp.NAME).read_bytes() == zipapp.build()
    dockerfile = (out / "Dockerfile").read_text()
    copied = [line.split()[-2] for line in dockerfile.splitlines() if line.startswith("COPY") and "--from" not in line]
    assert copied == ["requirements.lock.txt", zipapp.NAME]  # everything it COPYs, it ships
    assert not [p for p in out.iterdir() if b"envcheck==" in p.read_bytes()]
    assert "packaging" in __import__("envcheck.emit.requirements", fromlist=["blocks"]).blocks(
        (out / "requirements.lock.txt").read_text())
    capsys.readouterr()
    (out / zipapp.NAME).write_bytes(b"mine")
    assert main(["env", *FLAGS, "--format", "dockerfile", "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and (out / zipapp.NAME).read_bytes() == b"mine"
