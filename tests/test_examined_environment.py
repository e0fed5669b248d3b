"""With no --python, the doctor examines the environment the user is in, and its first line says which and why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, FakeEnv, torch_version_file

from envcheck.probes.target import examined_environment


def doctor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    return subprocess.run([sys.executable, "-m", "envcheck", "doctor", "--no-deep", *args], capture_output=True,
                          text=True, env={**base, **env}, cwd=REPO, timeout=120)


def activated(fake_env: FakeEnv, variable: str = "VIRTUAL_ENV") -> dict[str, str]:
    """What `source bin/activate` (or `conda activate`) changes: the variable and PATH."""
    return {variable: str(fake_env.root), "PATH": f"{fake_env.root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_an_activated_venv_is_examined_by_default(fake_env: FakeEnv) -> None:
    fake_env.add_dist("torch", "2.5.1+cu124", files={"torch/version.py": torch_version_file("2.5.1+cu124", "12.4")})
    result = doctor("--json", env=activated(fake_env))
    assert result.returncode in (0, 1), result.stderr
    python = json.loads(result.stdout)["snapshot"]["python"]
    assert python["prefix"] == str(fake_env.root)
    assert python["packages"]["torch"] == "2.5.1+cu124"
    assert python["examined_because"] == "the active virtual environment (VIRTUAL_ENV)"
    text = doctor(env=activated(fake_env)).stdout
    assert text.splitlines()[0] == (f"Examined: {fake_env.root} (venv, Python {python['version']}), "
                                    "the active virtual environment (VIRTUAL_ENV)")
    assert "torch is not installed" not in text


def test_an_environment_without_torch_gets_a_notice(fake_env: FakeEnv) -> None:
    text = doctor(env=activated(fake_env)).stdout
    assert text.startswith(f"Examined: {fake_env.root} ")
    assert f"Note: torch is not installed in {fake_env.root}" in text and "--python" in text


def test_python_wins_over_the_active_environment(fake_env: FakeEnv, tmp_path: Path) -> None:
    result = doctor("--json", "--python", sys.executable, env=activated(fake_env))
    python = json.loads(result.stdout)["snapshot"]["python"]
    assert python["prefix"] == sys.prefix and python["examined_because"] == "given with --python"


def test_the_order_is_venv_conda_path_then_envchecks_own(fake_env: FakeEnv, tmp_path: Path) -> None:
    conda = tmp_path / "conda"
    (conda / "bin").mkdir(parents=True)
    (conda / "bin" / "python").symlink_to(sys.executable)
    python = str(fake_env.root / "bin" / "python")
    both = {"VIRTUAL_ENV": str(fake_env.root), "CONDA_PREFIX": str(conda), "PATH": "/nonexistent"}
    assert examined_environment(None, both).python == python
    assert examined_environment(None, {**both, "VIRTUAL_ENV": ""}).python == str(conda / "bin" / "python")
    assert "CONDA_PREFIX" in examined_environment(None, {**both, "VIRTUAL_ENV": ""}).reason
    on_path = examined_environment(None, {"PATH": str(fake_env.root / "bin")})
    assert on_path.reason.startswith("the python3 first on PATH")
    own = examined_environment(None, {"PATH": "/nonexistent"})
    assert own.python is None and own.reason.startswith("envcheck's own interpreter")
    # a VIRTUAL_ENV whose interpreter is gone falls through to the next rule
    assert examined_environment(None, {"VIRTUAL_ENV": str(tmp_path / "gone"), "PATH": "/nonexistent"}).python is None


def test_select_that_matches_nothing_warns_and_hidden_findings_are_counted(tmp_path: Path) -> None:
    snapshot = tmp_path / "s.json"
    snapshot.write_text(json.dumps({"schema_version": 1, "envcheck_version": "0.1.0",
                                    "captured_at": "2026-12-01T00:00:00+00:00",
                                    "host": {"shm_bytes": 64 * 1024**2, "core_ulimit": "0"}}))
    unknown = doctor("--snapshot", str(snapshot), "--select", "EC9999", env={})
    assert "warning: --select EC9999 matches no finding id envcheck knows" in unknown.stderr
    assert "No problems found among the selected findings." in unknown.stdout
    assert "finding(s) hidden by --select/--ignore" in unknown.stdout
    shown = json.loads(doctor("--snapshot", str(snapshot), "--select", "EC101", "--json", env={}).stdout)
    assert [f["id"] for f in shown["findings"]] == ["EC101"] and shown["hidden_by_filters"] >= 1
