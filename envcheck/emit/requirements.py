"""requirements.lock.txt: every transitive dependency pinned with --hash, resolved by uv for the target platform.

uv resolves metadata only (no wheel is installed), for the target's Python and manylinux platform, wheels only
except the packages that publish nothing but an sdist (DeepSpeed, flash-attn): those are locked by their sdist's
hash and built at install time. A non-default torch variant is reached with uv's --torch-backend, never a URL.
`--exclude-newer` (default: the matrix's data date) makes the same inputs give the same lock tomorrow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from envcheck.emit.environment_yml import pip_requirements
from envcheck.emit.header import header
from envcheck.errors import EnvcheckError
from envcheck.resolve.solver import Resolution

SDIST_ONLY = ("deepspeed", "flash-attn")
INPUT_NAME = "requirements.in"
# uv settings that would change what the command line pins; the user's index and cache settings are kept.
UV_OWNED = ("UV_TORCH_BACKEND", "UV_EXCLUDE_NEWER", "UV_CONSTRAINT", "UV_OVERRIDE", "UV_PRERELEASE", "UV_RESOLUTION",
            "UV_PYTHON", "UV_NO_BINARY", "UV_ONLY_BINARY", "UV_BUILD_CONSTRAINT")


# Connect bounds for uv when the user set none: an unreachable index fails in seconds, not minutes.
UV_NETWORK_DEFAULTS = {"UV_HTTP_CONNECT_TIMEOUT": "5", "UV_HTTP_RETRIES": "1"}
_NETWORK_MARKERS = ("error sending request", "dns error", "client error (connect)", "timed out", "connection refused",
                    "request failed after", "failed to fetch", "network is unreachable")


class LockError(EnvcheckError):
    """uv is missing or could not resolve the stack: the message says which and why."""

    def __init__(self, message: str, unreachable: bool = False, where: str | None = None) -> None:
        super().__init__(message)
        self.unreachable = unreachable  # the index could not be reached (not a resolution conflict)
        self.where = where  # the URL uv failed to fetch, as uv printed it (the user's configured index)


@dataclass(frozen=True)
class LockOptions:
    exclude_newer: str  # "2026-11-29T00:00:00Z"
    uv: str  # path of the uv executable
    # Distributions the lock must hold (envcheck.pyz's runtime needs); added to the input only when the stack
    # does not already pull them in, so a lock that has them is the same with or without this.
    also: tuple[str, ...] = ()


def find_uv() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "uv")
    return beside if os.access(beside, os.X_OK) else shutil.which("uv")


def uv_version(uv: str) -> str:
    out = subprocess.run([uv, "--version"], capture_output=True, text=True, check=False).stdout.split()
    return out[1] if len(out) > 1 else "unknown"


def platform(result: Resolution) -> str:
    return f"x86_64-manylinux_{result.platform_glibc.replace('.', '_')}"


def uv_arguments(result: Resolution, options: LockOptions) -> list[str]:
    args = ["pip", "compile", INPUT_NAME, "--generate-hashes", "--no-header", "--quiet",
            "--python-platform", platform(result), "--python-version", result.python,
            "--exclude-newer", options.exclude_newer, "--only-binary", ":all:"]
    for name in SDIST_ONLY:
        args += ["--no-binary", name]
    if not result.default_index:
        args += ["--torch-backend", result.torch_index]
    return args


def _compile(options: LockOptions, args: list[str], lines: list[str]) -> str:
    """uv's output for these input lines, run in a scratch directory (so no path of this machine leaks)."""
    env = {k: v for k, v in os.environ.items() if k not in UV_OWNED}  # index and cache settings stay the user's
    env.update({k: v for k, v in UV_NETWORK_DEFAULTS.items() if k not in env})
    with tempfile.TemporaryDirectory(prefix="envcheck-lock-") as scratch:
        with open(os.path.join(scratch, INPUT_NAME), "w", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))
        try:
            done = subprocess.run([options.uv, *args], cwd=scratch, capture_output=True, text=True, env=env,
                                  timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise LockError(f"uv could not run: {error}") from None
    if done.returncode != 0:
        where = failed_url(done.stderr)
        unreachable = any(m in done.stderr.lower() for m in _NETWORK_MARKERS)
        head = f"uv could not reach {where}" if unreachable and where else "uv could not lock the stack"
        raise LockError(f"{head} (exit {done.returncode}): {_uv_reason(done.stderr)}", unreachable, where)
    return re.sub(r"^#.*\n", "", done.stdout, count=0) if done.stdout.startswith("#") else done.stdout


def compile_body(result: Resolution, options: LockOptions) -> str:
    """uv's hashed lock of the stack (again with `options.also` added when the first lock lacks any)."""
    args = uv_arguments(result, options)
    body = _compile(options, args, pip_requirements(result))
    missing = _missing(body, options)
    if missing:
        body = _compile(options, args, sorted(pip_requirements(result) + missing))
    return body


def _missing(body: str, options: LockOptions) -> list[str]:
    return sorted(n for n in options.also if n.lower() not in blocks(body))


def resolver_command(result: Resolution, options: LockOptions) -> str:
    return f"uv {uv_version(options.uv)} " + " ".join(_quote(a) for a in uv_arguments(result, options))


def render(result: Resolution, options: LockOptions, command: str, body: str | None = None) -> str:
    """The lock file: the header and uv's output (`body`, when compile_body already ran; else it runs here)."""
    body = compile_body(result, options) if body is None else body
    lines = sorted(pip_requirements(result) + [n for n in options.also if _was_added(body, n)])
    return _header(result, options, command, lines, uv_version(options.uv)) + body


def _was_added(body: str, name: str) -> bool:
    """Whether `name` is in the lock because it was added to the input (uv's `# via -r requirements.in`)."""
    block = blocks(body).get(name.lower(), "")
    return f"-r {INPUT_NAME}" in block


def _header(result: Resolution, options: LockOptions, command: str, lines: list[str], version: str) -> str:
    resolver = f"uv {version} " + " ".join(_quote(a) for a in uv_arguments(result, options))
    return header(result, "hashed requirements lock (install: pip install --require-hashes --no-deps -r FILE)",
                  command) + f"# Resolver: {resolver}\n# Input ({INPUT_NAME}): {', '.join(lines)}\n"


def rehead(existing: str, result: Resolution, options: LockOptions, command: str, version: str) -> str:
    """An existing lock under the header this envcheck and matrix write (offline: uv is not run, the pins stay).

    Whether the pins are still what uv resolves today is the maintainer check's question, not this one's."""
    head = re.match(r"(?:#.*\n)*", existing).group(0)  # type: ignore[union-attr]
    body = existing[len(head):]
    old_input = next((line.split(": ", 1)[1].split(", ") for line in head.splitlines()
                      if line.startswith(f"# Input ({INPUT_NAME}): ")), [])
    lines = sorted(pip_requirements(result) + [n for n in options.also if n in old_input])
    return _header(result, options, command, lines, version) + body


def _uv_reason(stderr: str) -> str:
    """uv's own error and its causes, on one line (the full output is what `uv pip compile` prints by hand)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith(("Caused by:", "cause:"))]
    picked = [line for line in lines if line.startswith(("error:", "×", "╰─▶"))] + causes[-1:] or lines[-1:]
    return "; ".join(picked)[:900] or "no message"


def failed_url(stderr: str) -> str | None:
    """The URL uv says it failed to fetch (the user's configured index or the torch backend's), if any."""
    match = re.search(r"(?:Failed to fetch|for url)[:\s(`]*(\w+://[^\s`)'\"]+)", stderr)
    return match.group(1) if match else None


def _quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in " *:<>=!,") else arg


def blocks(lock: str) -> dict[str, str]:
    """name -> its requirement block ('name==v \\\\n --hash=...'), to split sdist-only packages off for checks."""
    found = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock):
        match = re.match(r"([A-Za-z0-9._-]+)==", block)
        if match:
            found[match.group(1).lower()] = block.rstrip("\n") + "\n"
    return found


def pip_platforms(glibc: str) -> list[str]:
    """Every manylinux tag a glibc-X machine accepts, newest first (pip's --platform does not expand them)."""
    major, minor = (int(x) for x in glibc.split("."))
    tags = [f"manylinux_{major}_{m}_x86_64" for m in range(minor, 16, -1)]
    return tags + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
