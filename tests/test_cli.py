"""The command line as users and scripts meet it: exit codes, formats, bad input, secrets, crash reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ASSETS, REPO, FakeEnv, assert_valid_snapshot, torch_version_file

from envcheck import cli

SECRET_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
SECRET_PASSWORD = "correct-horse-battery-staple"


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point, in a child process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "envcheck", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd or REPO, timeout=120)


def write_snapshot(path: Path, **sections) -> Path:  # type: ignore[no-untyped-def]
    data = {"schema_version": 1, "envcheck_version": "0.1.0", "captured_at": "2026-11-29T00:00:00+00:00", **sections}
    path.write_text(json.dumps(data))
    return path


def test_doctor_here_prints_a_report_and_exits_zero() -> None:
    result = run_cli("doctor", "--no-deep")
    assert result.returncode == 0, result.stderr
    assert "envcheck 0.1.0 doctor" in result.stdout and "python" in result.stdout
    assert "\033[" not in result.stdout  # not a TTY: no colour


def test_doctor_json_is_one_document_with_the_contract_keys(tmp_path: Path) -> None:
    result = run_cli("doctor", "--json", "--no-deep")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert set(data) == {"envcheck_version", "matrix_version", "snapshot", "findings", "summary", "hidden_by_filters"}
    assert set(data["summary"]) == {"fatal", "error", "warning", "info"}
    assert_valid_snapshot(data["snapshot"])
    for finding in data["findings"]:
        assert set(finding) == {"id", "severity", "category", "title", "detail", "evidence", "fixes", "refs"}


def test_doctor_on_another_venv_describes_that_venv(fake_env: FakeEnv) -> None:
    fake_env.add_dist("torch", "2.5.1+cu124", files={"torch/version.py": torch_version_file("2.5.1+cu124", "12.4")})
    fake_env.add_dist("deepspeed", "0.16.3", files={
        "deepspeed/git_version_info_installed.py": (ASSETS / "nvidia" / "ds-git_version_info_installed-1.py.txt").read_text()})
    result = run_cli("doctor", "--python", str(fake_env.python), "--json", "--no-deep")
    data = json.loads(result.stdout)
    snap = data["snapshot"]
    assert snap["python"]["prefix"] == str(fake_env.root)
    assert set(snap["python"]["packages"]) == {"torch", "deepspeed"}
    assert snap["deepspeed"]["compiled_torch"] == "2.3" and snap["deepspeed"]["compiled_cuda"] == "12.4"
    assert [f["id"] for f in data["findings"] if f["id"].startswith("EC3")] == ["EC301"]


def test_fail_on_threshold(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "s.json", host={"shm_bytes": 64 * 1024**2, "core_ulimit": "0"})
    assert run_cli("doctor", "--snapshot", str(snap)).returncode == 1  # EC101 is an error
    assert run_cli("doctor", "--snapshot", str(snap), "--fail-on", "fatal").returncode == 0
    assert run_cli("doctor", "--snapshot", str(snap), "--ignore", "EC101").returncode == 0
    assert run_cli("doctor", "--snapshot", str(snap), "--ignore", "EC101", "--fail-on", "info").returncode == 1


def test_markdown_format(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "s.json", host={"shm_bytes": 64 * 1024**2})
    out = run_cli("doctor", "--snapshot", str(snap), "--format", "markdown").stdout
    assert out.startswith("### envcheck") and "#### ERROR EC101" in out and "```sh" in out


@pytest.mark.parametrize("args, message", [
    (("doctor", "--bogus"), "unrecognized arguments: --bogus"),
    (("doctor", "--fail-on", "sometimes"), "invalid choice: 'sometimes'"),
    (("doctor", "--select", "XY1"), "is not a finding id prefix"),
    (("doctor", "--snapshot", "/nonexistent/snap.json"), "/nonexistent/snap.json: cannot read"),
    (("doctor", "--python", "/nonexistent/python"), "--python /nonexistent/python: no such file"),
    (("doctor", "--python", "/tmp"), "is a directory"),
    (("doctor", "--matrix", "/nonexistent"), "not a matrix directory"),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
])
def test_usage_errors_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_malformed_snapshot_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 2}')
    result = run_cli("doctor", "--snapshot", str(bad), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert "schema_version 2 is not supported" in result.stderr and "Traceback" not in result.stderr


def test_probe_never_overwrites_without_force(tmp_path: Path) -> None:
    target = tmp_path / "snap.json"
    target.write_text("precious")
    result = run_cli("probe", "-o", str(target))
    assert result.returncode == 2 and "exists; use --force" in result.stderr
    assert target.read_text() == "precious"
    assert run_cli("probe", "-o", str(target), "--force").returncode == 0
    assert_valid_snapshot(json.loads(target.read_text()))
    assert run_cli("doctor", "--snapshot", str(target)).returncode in (0, 1)


def test_internal_error_exit_3_with_crash_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    def explode(_args):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("a bug")

    monkeypatch.setitem(cli.COMMANDS, "doctor", explode)
    monkeypatch.setenv("ENVCHECK_CRASH_DIR", str(tmp_path))
    assert cli.main(["doctor"]) == 3
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: a bug" in err and "Traceback" not in err
    (report,) = tmp_path.glob("envcheck-crash-*.txt")
    assert "Traceback" in report.read_text() and "explode" in report.read_text()


def test_secrets_never_appear_in_any_output(tmp_path: Path) -> None:
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    secrets_env = {
        "HF_TOKEN": SECRET_TOKEN,
        "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
        "NCCL_SOCKET_PASSWORD": SECRET_PASSWORD,
        "CUDA_HOME": str(home / "cuda-12.4"),
        "LD_LIBRARY_PATH": f"{home}/lib:/usr/lib",
        "HF_ENDPOINT": f"https://bob:{SECRET_PASSWORD}@mirror.example/hf",
        "HOME": str(home),
        "PATH": f"{home}/bin:" + os.environ["PATH"],
    }
    outputs = [run_cli("doctor", "--no-deep", *fmt, env=secrets_env).stdout
               for fmt in ((), ("--json",), ("--format", "markdown"))]
    outputs.append(run_cli("probe", "--no-deep", env=secrets_env).stdout)
    snapshot_file = tmp_path / "s.json"
    run_cli("probe", "--no-deep", "-o", str(snapshot_file), env=secrets_env)
    outputs.append(snapshot_file.read_text())
    for text in outputs:
        assert text.strip()
        for secret in (SECRET_TOKEN, SECRET_PASSWORD, "0123456789abcdef0123456789abcdef01234567", str(home), "alice"):
            assert secret not in text
    data = json.loads(outputs[1])["snapshot"]["env"]
    assert data["HF_TOKEN"] == "<redacted>" and data["WANDB_API_KEY"] == "<redacted>"
    assert data["LD_LIBRARY_PATH"] == "~/lib:/usr/lib"
    assert data["HF_ENDPOINT"] == "https://<redacted>@mirror.example/hf"


def test_static_doctor_imports_nothing_risky() -> None:
    """The static doctor must not import torch, NVML or any probed package into its own process."""
    code = ("import sys; from envcheck.cli import main; main(['doctor', '--no-deep', '--json']); "
            "bad = [m for m in ('torch', 'pynvml', 'deepspeed', 'numpy') if m in sys.modules]; "
            "sys.stderr.write('IMPORTED:%s' % bad)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "IMPORTED:[]" in result.stderr


@pytest.mark.parametrize("script", ["print(1)\n", "#!/bin/sh\nexit 0\n"])
def test_python_that_is_not_python_exits_2(tmp_path: Path, script: str) -> None:
    fake = tmp_path / "python"
    fake.write_text(script)
    fake.chmod(0o755)
    result = run_cli("doctor", "--python", str(fake))
    assert result.returncode == 2 and "not a usable Python interpreter" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_import_timeout_must_be_positive(value: str) -> None:
    result = run_cli("doctor", "--import-timeout", value)
    assert result.returncode == 2 and "--import-timeout" in result.stderr


def test_no_command_is_one_line() -> None:
    result = run_cli()
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "a command is required" in result.stderr


def test_full_disk_on_stdout_is_exit_2(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "envcheck", "doctor", "--no-deep"], stdout=full,
                                stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2 and "No space left on device" in result.stderr and "Traceback" not in result.stderr


def test_multiline_evidence_keeps_the_text_layout(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "s.json", runtime={"torch": {
        "ok": False, "exit_code": -11, "signal": "SIGSEGV",
        "error": "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
                 '  File "/opt/venv/lib/python3.11/site-packages/torch/__init__.py", line 290 in _load_global_deps'}})
    out = run_cli("doctor", "--snapshot", str(snap)).stdout
    block = out[out.index("EC310"):]
    assert "\nCurrent thread" not in block and "\n                  Current thread" in block


def test_the_one_command_parser_knows_every_command_by_its_module() -> None:
    """main() builds only the named command's parser; the table it uses must match each module's NAME."""
    import importlib

    from envcheck.cli import PLUGIN_COMMANDS, PLUGIN_NAMES

    assert sorted(PLUGIN_NAMES.values()) == sorted(PLUGIN_COMMANDS)
    for name, module in PLUGIN_NAMES.items():
        assert importlib.import_module(module).NAME == name
