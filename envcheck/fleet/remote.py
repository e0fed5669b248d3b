"""What runs on each node: a POSIX sh script that starts `envcheck probe --json` and then prints one marker line
with the node's name, the probe's exit status and how envcheck ran there.

envcheck is found on the node at the same interpreter path as here (a shared filesystem: `EXE -m envcheck`), or,
when it is not there, shipped over the engine: envcheck.pyz (envcheck, its matrix and `packaging` in one file)
travels base64-encoded on the engine's stdin (ssh's stdin, srun --input=all), is run with that interpreter or the
node's python3, and is removed again. No agent is installed anywhere.
"""

from __future__ import annotations

import base64
import io
import os
import re
import shlex
import zipfile
from dataclasses import dataclass

MARKER = "@@envcheck-fleet"
NO_ENVCHECK = 97  # the script's status when envcheck is not on the node and nothing was shipped
_MARKER_LINE = re.compile(rf"^{MARKER} node=(?P<node>\S*) rc=(?P<rc>-?\d+) how=(?P<how>\w+)\s*$", re.M)

_MAIN = '''\
"""envcheck for fleet: unpack envcheck and packaging into a private directory, run envcheck.cli:main, remove it."""
import atexit, os, shutil, sys, tempfile, zipfile
archive = os.path.dirname(os.path.abspath(__file__))
target = tempfile.mkdtemp(prefix="envcheck-pyz-")
atexit.register(shutil.rmtree, target, True)
with zipfile.ZipFile(archive) as bundle:
    bundle.extractall(target, [n for n in bundle.namelist() if n != "__main__.py"])
sys.path[:] = [target] + [p for p in sys.path if os.path.abspath(p or ".") != archive]
from envcheck.cli import main
raise SystemExit(main())
'''


def _quote_expanding(text: str) -> str:
    """Double-quote for sh, leaving $VAR to expand on the node ($SLURMD_NODENAME in a per-node venv path)."""
    return '"' + re.sub(r'(["\\`])', r"\\\1", text) + '"'


@dataclass(frozen=True)
class RemotePlan:
    """How the probe runs on the nodes."""

    exe: str  # this interpreter's path, tried on each node
    python: str | None = None  # --python, passed to the probe ($VAR expanded on the node)
    ship: str = "auto"  # "auto" | "always" | "never"
    command: str | None = None  # --envcheck-command: run this instead of finding envcheck


def script(plan: RemotePlan, shipping: bool) -> str:
    """The node's sh script; `shipping` means envcheck.pyz arrives base64-encoded on stdin."""
    probe_args = "probe --json" + (f" --python {_quote_expanding(plan.python)}" if plan.python else "")
    exe = shlex.quote(plan.exe)
    lines = [f"exe={exe}"]
    if plan.command:
        lines.append(f"{plan.command} {probe_args}; rc=$?; how=command")
    else:
        installed = '[ -x "$exe" ] && "$exe" -c "import envcheck" >/dev/null 2>&1'
        ship = (f'f=$(mktemp "${{TMPDIR:-/tmp}}/envcheck-XXXXXX") && base64 -d > "$f" && '
                f'{{ py="$exe"; [ -x "$py" ] || py=$(command -v python3); "$py" "$f" {probe_args}; rc=$?; '
                f'rm -f "$f"; }}; how=shipped; [ -n "$rc" ] || rc=98')
        if plan.ship == "always" and shipping:
            lines.append(ship)
        elif plan.ship != "always":
            branch = f'if {installed}; then "$exe" -m envcheck {probe_args}; rc=$?; how=installed'
            tail = f"; else {ship}; fi" if shipping and plan.ship == "auto" else f"; else rc={NO_ENVCHECK}; how=missing; fi"
            lines.append(branch + tail)
        else:
            lines.append(f"rc={NO_ENVCHECK}; how=missing")
    lines.append(f"printf '\\n{MARKER} node=%s rc=%s how=%s\\n' \"${{SLURMD_NODENAME:-$(hostname)}}\" \"$rc\" \"$how\"")
    return "\n".join(lines) + "\n"


def needs_first_round_ship(plan: RemotePlan) -> bool:
    return plan.command is None and plan.ship == "always"


@dataclass(frozen=True)
class Parsed:
    body: str  # the probe's stdout (the snapshot JSON)
    node: str | None
    exit_code: int | None
    how: str | None


def parse(stdout: str) -> Parsed:
    """Split a node's stdout into the snapshot text and the marker's facts (None when no marker came back)."""
    found = list(_MARKER_LINE.finditer(stdout))
    if not found:
        return Parsed(stdout, None, None, None)
    last = found[-1]
    return Parsed(stdout[:last.start()], last.group("node"), int(last.group("rc")), last.group("how"))


def payload() -> bytes:
    """envcheck.pyz for the nodes, base64-encoded: envcheck (as envcheck/emit/zipapp.py lays it out) plus the
    pure-Python packages it needs, so any python3 >= 3.10 on a node can run it."""
    from envcheck.emit.zipapp import _entry, sources

    files = dict(sources())
    for module in _vendored():
        root = os.path.dirname(module.__file__)
        name = module.__name__
        for directory, subdirs, names in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for file_name in names:
                if file_name.endswith((".py", ".typed")):
                    path = os.path.join(directory, file_name)
                    files[f"{name}/{os.path.relpath(path, root)}"] = path
    buffer = io.BytesIO()
    buffer.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(_entry("__main__.py"), _MAIN.encode())
        for name, path in sorted(files.items()):
            with open(path, "rb") as handle:
                archive.writestr(_entry(name), handle.read())
    return base64.encodebytes(buffer.getvalue())


def _vendored() -> list:  # type: ignore[type-arg]
    import packaging

    found = [packaging]
    try:
        import tomli  # a node below Python 3.11 needs it; ship it when this machine has it

        found.append(tomli)
    except ImportError:
        pass
    return found
