"""Shared fixtures: throwaway Python environments with chosen distributions, snapshot helpers, and the network gate.

The default run is hermetic: a test that needs the package index is marked `network` and skips, with the reason,
when one probe per session (uv, else pip, with a short timeout) cannot reach the index its configuration names.
Tests that ask whether a committed file is still what the index gives today are marked `maintainer` and are
deselected by default (pyproject addopts); a run that collects no test at all fails instead of exiting 5."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ASSETS = Path(__file__).parent / "assets"
REPO = Path(__file__).parent.parent
SCHEMA_PATH = REPO / "envcheck" / "schema" / "snapshot.schema.json"
PROBE_TIMEOUT_S = 20
_reachability: list[str | None] = []  # filled once per session: None = reachable, else why not


def pip_env() -> dict[str, str]:
    """pip without this machine's own config (constraints, extra local indexes): the index alone decides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in ("PIP_INDEX_URL", "PIP_CERT")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _probe_index() -> str | None:
    """None when the package index answers a metadata query for one small distribution, else the reason."""
    from envcheck.emit.requirements import find_uv

    uv = find_uv()
    with tempfile.TemporaryDirectory() as scratch:
        if uv is not None:
            tool, stdin = "uv", "six\n"
            command = [uv, "pip", "compile", "-", "--quiet", "--no-header", "--no-cache"]
            env = {**os.environ, "UV_HTTP_TIMEOUT": str(PROBE_TIMEOUT_S // 2)}
        else:
            tool, stdin, env = "pip", None, pip_env()
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--retries", "0",
                       "--timeout", str(PROBE_TIMEOUT_S // 2), "-d", scratch, "six"]
        try:
            done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, cwd=scratch,
                                  timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{tool} could not query it: {error}"
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return f"{tool} exit {done.returncode}: {(lines[-1] if lines else 'no message')[:200]}"


def index_unreachable() -> str | None:
    """Why the package index cannot be reached (probed once per session), or None when it can."""
    if not _reachability:
        _reachability.append(_probe_index())
    return _reachability[0]


def require_index() -> None:
    """Skip the calling test when the package index is unreachable."""
    reason = index_unreachable()
    if reason is not None:
        pytest.skip(f"needs the package index, which is unreachable ({reason})")


def pytest_configure(config: pytest.Config) -> None:
    """The matrix cache (envcheck/matrix/cache.py) of this run lives in a folder of its own, not the user's."""
    os.environ["ENVCHECK_CACHE_DIR"] = tempfile.mkdtemp(prefix="envcheck-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.get("ENVCHECK_CACHE_DIR", ""), ignore_errors=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("network") is not None:
        require_index()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.config.get_terminal_writer().line("no tests were collected or selected: failing, not exiting 5",
                                                  red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_gpu = shutil.which("nvidia-smi") is not None and os.path.exists("/proc/driver/nvidia/version")
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU with a working driver")
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(skip_gpu)


@dataclass
class FakeEnv:
    """A real venv (real interpreter, real site-packages) whose installed distributions the test chooses."""

    root: Path
    python: Path
    site: Path

    def add_dist(self, name: str, version: str, requires: tuple[str, ...] = (), files: dict[str, str] | None = None,
                 site: Path | None = None, metadata: str | None = None) -> Path:
        target = site or self.site
        dist_info = target / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir(parents=True)
        if metadata is None:
            lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
            lines += [f"Requires-Dist: {r}" for r in requires]
            metadata = "\n".join(lines) + "\n\nA long description that the probe must not need to parse.\n"
        (dist_info / "METADATA").write_text(metadata)
        record = []
        for relative, content in (files or {}).items():
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            record.append(f"{relative},,")
        (dist_info / "RECORD").write_text("\n".join(record) + "\n")
        return dist_info


def make_venv(root: Path) -> FakeEnv:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    return FakeEnv(root, python, site)


@pytest.fixture
def fake_env(tmp_path: Path) -> FakeEnv:
    return make_venv(tmp_path / "venv")


def torch_version_file(version: str, cuda: str | None) -> str:
    """torch/version.py in the shape torch's build writes it."""
    return textwrap.dedent(f"""\
        from typing import Optional

        __all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
        __version__ = '{version}'
        debug = False
        cuda: Optional[str] = {cuda!r}
        git_version = '0123456789abcdef0123456789abcdef01234567'
        hip: Optional[str] = None
        xpu: Optional[str] = None
        """)


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def assert_valid_snapshot(data: dict) -> None:
    import jsonschema

    jsonschema.validate(data, schema())


def load_asset_snapshot(name: str):  # type: ignore[no-untyped-def]
    from envcheck.snapshot import load_snapshot

    return load_snapshot(str(ASSETS / "snapshots" / name))


RECORDED_LOCK = ASSETS / "resolve" / "h100-580-deepspeed.uv.txt"  # see tests/assets/resolve/PROVENANCE.md


def stand_in_uv(directory: Path, stdout: Path | None = None, stderr: str = "", code: int = 0) -> str:
    """An executable `uv` that answers --version like uv 0.13.9 and any other call with a recorded output."""
    script = directory / "uv"
    body = [f"cat '{stdout}'"] if stdout else []
    if stderr:
        (directory / "uv.stderr").write_text(stderr)
        body.append(f"cat '{directory / 'uv.stderr'}' >&2")
    script.write_text("#!/bin/sh\n" 'if [ "$1" = "--version" ]; then echo "uv 0.13.9"; exit 0; fi\n'
                      + "\n".join(body) + f"\nexit {code}\n")
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def recorded_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """uv replaced by the recorded `uv pip compile` output of the 580.95.05/H100/deepspeed target (offline)."""
    from envcheck.emit import requirements

    (tmp_path / "bin").mkdir()
    uv = stand_in_uv(tmp_path / "bin", RECORDED_LOCK)
    monkeypatch.setattr(requirements, "find_uv", lambda: uv)
    return uv


def memory_cgroup(name: str, limit_bytes: int = 200 << 20) -> Path | None:
    """A cgroup v1 memory group with a small limit, for a child the OOM killer really kills; None without root or
    the controller (the caller skips with its reason). Callers remove it after use."""
    root = Path("/sys/fs/cgroup/memory")
    if os.geteuid() != 0 or not (root / "memory.limit_in_bytes").exists():
        return None
    group = root / f"{name}-{os.getpid()}"
    try:
        group.mkdir(exist_ok=True)
        (group / "memory.limit_in_bytes").write_text(str(limit_bytes))
    except OSError:
        return None
    return group


@pytest.fixture(params=["hyperscan", "re"])
def match_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """diagnose's prefilter: both engines give the same answers: Hyperscan (the `fast` extra) and the `re` fallback."""
    if request.param == "re":
        monkeypatch.setenv("ENVCHECK_NO_HYPERSCAN", "1")
    else:
        pytest.importorskip("hyperscan", reason="no hyperscan wheel (a dependency on Linux x86-64/aarch64 only)")
        monkeypatch.delenv("ENVCHECK_NO_HYPERSCAN", raising=False)
    return request.param
