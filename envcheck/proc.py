"""Run a child process with a hard timeout and describe how it ended, without ever raising.

A hanging `nvidia-smi` or an `import torch` that segfaults must cost the doctor a bounded time and become data.
The child gets its own process group so that a timeout kills everything it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when it never started or timed out
    stdout: str
    stderr: str
    timed_out: bool = False
    start_error: str | None = None  # why it could not start (not found, permission)
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def signal_name(self) -> str | None:
        """SIGSEGV for a child killed by signal 11, else None."""
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def describe_failure(self) -> str:
        """One line saying why it did not succeed (empty when it did)."""
        name = os.path.basename(self.argv[0]) if self.argv else "command"
        if self.start_error:
            return f"{name}: {self.start_error}"
        if self.timed_out:
            return f"{name} did not finish within {self.duration_s:.1f} s (killed)"
        if self.signal_name:
            return f"{name} died by {self.signal_name}"
        if self.returncode:
            last = _last_line(self.stderr) or _last_line(self.stdout)
            return f"{name} exited with {self.returncode}" + (f": {last}" if last else "")
        return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


@dataclass
class Running:
    """A started child; `finish` waits for it (at most `timeout` seconds from now) and describes how it ended."""

    argv: tuple[str, ...]
    child: subprocess.Popen[bytes]
    started: float
    stdin_text: str | None = None

    def finish(self, timeout: float) -> ProcResult:
        stdin = self.stdin_text.encode() if self.stdin_text is not None else None
        try:
            out, err = self.child.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self.child)
            out, err = _drain(self.child)
            return ProcResult(self.argv, None, _text(out), _text(err), timed_out=True,
                              duration_s=time.monotonic() - self.started)
        return ProcResult(self.argv, self.child.returncode, _text(out), _text(err),
                          duration_s=time.monotonic() - self.started)


def start(
    argv: list[str] | tuple[str, ...], env: dict[str, str] | None = None, stdin_text: str | None = None
) -> Running | ProcResult:
    """Start argv in its own process group; a ProcResult (with start_error) when it cannot start."""
    argv = tuple(argv)
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except FileNotFoundError:
        return ProcResult(argv, None, "", "", start_error="not found")
    except PermissionError:
        return ProcResult(argv, None, "", "", start_error="permission denied")
    except OSError as error:
        return ProcResult(argv, None, "", "", start_error=error.strerror or str(error))
    return Running(argv, child, time.monotonic(), stdin_text)


def run(
    argv: list[str] | tuple[str, ...],
    timeout: float,
    env: dict[str, str] | None = None,
    stdin_text: str | None = None,
) -> ProcResult:
    """Run argv, wait at most `timeout` seconds, return how it ended."""
    started = start(argv, env, stdin_text)
    return started if isinstance(started, ProcResult) else started.finish(timeout)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        child.kill()


def _drain(child: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    try:
        return child.communicate(timeout=2)
    except subprocess.TimeoutExpired:  # a grandchild in another group holds the pipes open
        return b"", b""


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
