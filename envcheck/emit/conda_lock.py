"""conda-lock inputs: a virtual-package spec of the real target (not conda-lock's default __cuda 11.4) and the
exact command in conda-lock.sh; when conda-lock is installed and its channels answer, run it to write conda-lock.yml.

Whether the channels answer is asked first, with a TCP connect of a few seconds to the host conda-lock's own
(vendored conda) configuration gives the channel: an unreachable channel costs seconds, not conda-lock's minute of
retries. envcheck names no channel host itself.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from urllib.parse import urlsplit

from envcheck.emit.header import header
from envcheck.resolve.solver import Resolution

VIRTUAL_NAME = "virtual-packages.yml"
COMMAND_NAME = "conda-lock.sh"
CHANNEL = "conda-forge"
REACH_TIMEOUT_S = 4.0
# x86_64 microarchitecture level conda-forge builds for; the target's exact CPU is not probed.
ARCHSPEC = "1 x86_64"


def virtual_packages(result: Resolution, command: str) -> str:
    target = result.target
    cuda = target.cuda_driver or result.cuda
    glibc = target.glibc or result.platform_glibc
    lines = [header(result, "conda-lock virtual packages of the target machine", command).rstrip("\n"),
             f"# __cuda: {'the driver reports' if target.cuda_driver else 'torch variant (driver CUDA not probed)'} "
             f"{cuda}; __glibc: {'the target' if target.glibc else 'the wheels floor'} {glibc}",
             "subdirs:", "  linux-64:", "    packages:",
             f'      __archspec: "{ARCHSPEC}"', f'      __cuda: "{cuda}"', f'      __glibc: "{glibc}"',
             '      __linux: "5.10"', '      __unix: "0"']
    return "\n".join(lines) + "\n"


def command_line(environment: str = "environment.yml") -> list[str]:
    return ["conda-lock", "lock", "--file", environment, "--platform", "linux-64",
            "--virtual-package-spec", VIRTUAL_NAME, "--lockfile", "conda-lock.yml"]


def command_script(result: Resolution, command: str) -> str:
    """conda-lock.sh: the exact conda-lock command, run in the directory that holds the inputs."""
    lines = ["#!/bin/sh", header(result, "the conda-lock command for environment.yml (writes conda-lock.yml)",
                                 command).rstrip("\n"),
             'cd "$(dirname "$0")" || exit 1', "exec " + " ".join(command_line()) + ' "$@"']
    return "\n".join(lines) + "\n"


def channel_url(channel: str = CHANNEL) -> str | None:
    """The channel's base URL as conda-lock's vendored conda configures it (None when conda-lock is not importable)."""
    try:
        from conda_lock._vendor.conda.models.channel import Channel  # type: ignore[import-not-found]

        return str(Channel(channel).base_url)
    except Exception:  # noqa: BLE001 - any failure means: not known, and conda-lock then runs unchecked
        return None


def reachable(url: str, timeout: float = REACH_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the URL's host opens within `timeout` (name lookup included), else why not."""
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    if not host:
        return None
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except OSError as error:
            outcome.append(f"{host}:{port}: {error.strerror or error}")

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    return outcome[0] if outcome else f"{host}:{port}: no answer in {timeout:.0f} s"


def find_conda_lock() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "conda-lock")
    return beside if os.access(beside, os.X_OK) else shutil.which("conda-lock")


def run_conda_lock(directory: str, timeout: float = 600) -> tuple[bool, str]:
    """(ok, message). Runs in `directory`, where environment.yml, the spec and conda-lock.sh were written."""
    script = os.path.join(directory, COMMAND_NAME)
    tool = find_conda_lock()
    if tool is None:
        return False, f"conda-lock is not installed; the command is in {script}"
    url = channel_url()
    why = reachable(url) if url else None
    if why is not None:
        return False, f"conda-lock not run: channel {CHANNEL} is unreachable ({why}); run {script} where it is"
    try:
        done = subprocess.run([tool, *command_line()[1:]], cwd=directory, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"conda-lock did not finish in {timeout:.0f} s; run {script} where the channels answer"
    if done.returncode != 0:
        return False, f"conda-lock failed (exit {done.returncode}): {_reason(done.stderr)}; the command is in {script}"
    return True, "conda-lock.yml written"


def _reason(stderr: str) -> str:
    """The last meaningful line; a raw Python exception line is shortened to its message."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith((" ", "Traceback"))]
    last = lines[-1] if lines else "no output"
    return last.split(": ", 1)[1] if last.split(":", 1)[0].endswith(("Error", "Exception")) else last
