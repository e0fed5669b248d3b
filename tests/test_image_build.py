"""The images build, for real: every committed stack Dockerfile (lockfiles/<stack>/Dockerfile, as envcheck's emitter
writes it) and the top-level Dockerfile, built with podman (root, overlay storage, chroot isolation) on a base image
this session makes from Debian packages with mmdebstrap, with a local uv image; both are build arguments, so
nothing comes from an image registry. The host's CA bundle goes in as the Dockerfiles' `ca` secret.

Each build gets a LEAN lock in place of the stack's own: the Dockerfile is the committed one, byte for byte, but
the torch stack's ~7 GB of wheels would take minutes per image, so its context holds a lock that the real uv
resolves and hashes here for a few small distributions (packaging, which envcheck.pyz needs, and six). The full
hopper-ampere-580 lock is built as a recorded benchmark instead (benchmarks/bench_image_build.py).

Checked: the image's distributions (`uv pip freeze` inside it) are exactly the lock's pins; `envcheck doctor` ran
as the last build step (its report in the build log, the image's newest layer made by it); two builds of the same
files without the layer cache give the same package set; the top-level Dockerfile refuses a base whose CUDA is
not the stack's. Skips, with the reason, without root, podman, buildah or mmdebstrap; with
ENVCHECK_IMAGE_BUILD=required (set by .ci/run) a missing engine fails instead."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
from image_engine import Engine, EngineError, lock_pins, missing

from envcheck.emit import lockfiles, zipapp
from envcheck.emit.lockfiles import EXCLUDE_NEWER
from envcheck.emit.requirements import find_uv

pytestmark = [pytest.mark.network, pytest.mark.slow]

STACKS = [s.name for s in lockfiles.STACKS]
LEAN = ("packaging", "six")
BASE_PYTHON = "3.11"  # what the base image's Debian release ships; the stacks pin it too
BASE_CUDA = "13.0.2"  # CUDA_VERSION the base image claims, as nvidia/cuda images set it
DOCTOR = "RUN envcheck doctor --no-deep --fail-on error"


def _engine_or_skip() -> str:
    why = missing()
    if why is not None:
        if os.environ.get("ENVCHECK_IMAGE_BUILD") == "required":
            pytest.fail(f"ENVCHECK_IMAGE_BUILD=required, but {why}")
        pytest.skip(why)
    uv = find_uv()
    if uv is None:
        pytest.skip("uv is not installed (pip install -e '.[test]')")
    return uv


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, dict[str, str]]]:
    """Private storage with a Debian base image and a uv image; everything is removed afterwards."""
    uv = _engine_or_skip()
    scratch = tmp_path_factory.mktemp("images")
    built = Engine(scratch)
    try:
        base = built.make_base(scratch / "rootfs.tar", "localhost/envcheck-test-base:latest",
                               {"CUDA_VERSION": BASE_CUDA})
        uv_image = built.make_uv(uv, "localhost/envcheck-test-uv:latest", scratch / "uv")
    except EngineError as error:
        built.close()
        if os.environ.get("ENVCHECK_IMAGE_BUILD") == "required":
            raise
        pytest.skip(f"no base image here (Debian's packages unreachable?): {str(error)[:500]}")
    yield built, {"BASE_IMAGE": base, "UV_IMAGE": uv_image}
    built.close()


@pytest.fixture(scope="module")
def lean_lock(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A hashed lock of LEAN, resolved by the real uv for the stacks' platform, with the header line the top-level
    Dockerfile reads the Python version from."""
    uv = find_uv()
    if uv is None:
        pytest.skip("uv is not installed")
    flags = ["--generate-hashes", "--no-header", "--quiet", "--python-platform", "x86_64-manylinux_2_28",
             "--python-version", BASE_PYTHON, "--exclude-newer", EXCLUDE_NEWER, "--only-binary", ":all:"]
    done = subprocess.run([uv, "pip", "compile", "-", *flags], input="\n".join(LEAN) + "\n", capture_output=True,
                          text=True, timeout=300, cwd=tmp_path_factory.mktemp("lean"))
    assert done.returncode == 0, done.stderr[-2000:]
    return f"# lean test lock\n# Resolver: uv pip compile {' '.join(flags)}\n{done.stdout}"


def _stack_context(tmp_path: Path, name: str, lock: str) -> Path:
    context = tmp_path / name
    context.mkdir()
    shutil.copy(Path(lockfiles.ROOT) / name / "Dockerfile", context / "Dockerfile")
    (context / "requirements.lock.txt").write_text(lock)
    (context / zipapp.NAME).write_bytes(zipapp.build())
    return context


def _assert_doctor_ran_last(built: Engine, image: str, log: str, dockerfile: str) -> None:
    assert dockerfile.rstrip().splitlines()[-1] == DOCTOR
    assert "doctor, matrix" in log and "Findings:" in log  # the report, printed by the last RUN
    assert log.index("doctor, matrix") > log.rindex("STEP ")  # ... after the last step began
    newest = built.history(image)[0]
    assert newest.endswith(DOCTOR.removeprefix("RUN ")), newest


def _python_of(dockerfile: str) -> str:
    return dockerfile.split("uv venv --python ")[1].split()[0]


@pytest.mark.parametrize("name", STACKS)
def test_stack_dockerfile_builds_and_holds_exactly_the_lock(name: str, engine: tuple[Engine, dict[str, str]],
                                                             lean_lock: str, tmp_path: Path) -> None:
    built, images = engine
    context = _stack_context(tmp_path, name, lean_lock)
    dockerfile = (context / "Dockerfile").read_text()
    if _python_of(dockerfile) != BASE_PYTHON:
        pytest.skip(f"{name} needs Python {_python_of(dockerfile)}; the Debian base image has {BASE_PYTHON}")
    image = f"localhost/envcheck-test-{name}:1"
    try:
        build = built.build(context, image, images)
        assert built.freeze(image) == lock_pins(lean_lock) and len(lock_pins(lean_lock)) == len(LEAN)
        _assert_doctor_ran_last(built, image, build.log, dockerfile)
        assert built.inside(image, "id", "-u").strip() == "1000"
    finally:
        built.remove(image)


def test_two_builds_from_the_same_files_give_the_same_packages(engine: tuple[Engine, dict[str, str]],
                                                                lean_lock: str, tmp_path: Path) -> None:
    built, images = engine
    context = _stack_context(tmp_path, "hopper-ampere-580", lean_lock)
    sets = []
    for run in (1, 2):
        image = f"localhost/envcheck-test-repeat:{run}"
        try:
            built.build(context, image, images, no_cache=True)
            sets.append(built.freeze(image))
        finally:
            built.remove(image)
    assert sets[0] == sets[1] == lock_pins(lean_lock)


def _top_level_context(tmp_path: Path, lock: str, cuda: str) -> Path:
    """The repository's files the top-level Dockerfile COPYs, with one lean stack, `lean`, in lockfiles/."""
    context = tmp_path / "repo"
    context.mkdir()
    for name in ("Dockerfile", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, context / name)
    for name in ("envcheck", "compat_matrix"):
        shutil.copytree(REPO / name, context / name, ignore=shutil.ignore_patterns("__pycache__"))
    stack = context / "lockfiles" / "lean"
    stack.mkdir(parents=True)
    (stack / "requirements.lock.txt").write_text(lock)
    (stack / "cuda.txt").write_text(f"{cuda}\n")
    return context


def test_top_level_dockerfile_builds_a_lean_stack_with_envcheck_from_source(
        engine: tuple[Engine, dict[str, str]], lean_lock: str, tmp_path: Path) -> None:
    built, images = engine
    context = _top_level_context(tmp_path, lean_lock, BASE_CUDA.rsplit(".", 1)[0])
    image = "localhost/envcheck-test-top-level:1"
    try:
        build = built.build(context, image, {**images, "STACK": "lean"})
        installed = built.freeze(image)
        ours = {(n, v) for n, v in installed if n == "envcheck-llm"}
        assert installed - ours == lock_pins(lean_lock)
        assert built.inside(image, "envcheck", "--version").split() == ["envcheck", "0.1.0"]
        _assert_doctor_ran_last(built, image, build.log, (context / "Dockerfile").read_text())
    finally:
        built.remove(image)


def test_top_level_dockerfile_refuses_a_base_with_another_cuda(engine: tuple[Engine, dict[str, str]],
                                                               lean_lock: str, tmp_path: Path) -> None:
    built, images = engine
    context = _top_level_context(tmp_path, lean_lock, "12.8")
    image = "localhost/envcheck-test-wrong-cuda:1"
    try:
        build = built.build(context, image, {**images, "STACK": "lean"}, check=False)
        assert f"BASE_IMAGE has CUDA {BASE_CUDA.rsplit('.', 1)[0]}, stack lean needs 12.8" in build.log
        assert built.run("podman", "image", "exists", image, check=False).returncode != 0
    finally:
        built.remove(image)
