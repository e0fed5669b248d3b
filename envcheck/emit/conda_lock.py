"""conda-lock inputs: a virtual-package spec of the real target (not conda-lock's default __cuda 11.4) and the
exact command; when conda-lock is installed and its channels answer, run it to write conda-lock.yml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from envcheck.emit.header import header
from envcheck.resolve.solver import Resolution

VIRTUAL_NAME = "virtual-packages.yml"
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


def find_conda_lock() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "conda-lock")
    return beside if os.access(beside, os.X_OK) else shutil.which("conda-lock")


def run_conda_lock(directory: str, timeout: float = 600) -> tuple[bool, str]:
    """(ok, message). Runs in `directory`, where environment.yml and the spec were written."""
    tool = find_conda_lock()
    if tool is None:
        return False, "conda-lock is not installed; run: " + " ".join(command_line())
    try:
        done = subprocess.run([tool, *command_line()[1:]], cwd=directory, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"conda-lock did not finish in {timeout:.0f} s (channels unreachable?)"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"conda-lock failed (exit {done.returncode}): {last}"
    return True, "conda-lock.yml written"
