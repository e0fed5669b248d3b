"""Apply a finding's version-changing fix to a snapshot, as the user's shell would change the environment.

Only exact pins count as a version change: `pip install "NAME==X.Y.Z"` (or `==X.Y.*`, taken as X.Y.0), with
`--torch-backend=cuXYZ` naming torch's CUDA build. A DeepSpeed reinstall with DS_BUILD_OPS=1 compiles its ops
against the installed torch; without it the ops are built just in time. Commands with placeholders (`<...>`) or
no pin change nothing here.
"""

from __future__ import annotations

import dataclasses
import re

from envcheck.checks.model import Fix
from envcheck.snapshot import DeepSpeed, Snapshot, Torch

_PIN = re.compile(r'"?([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+*]*)"?')
_BACKEND = re.compile(r"--torch-backend[= ](cu\d+|cpu)")


def pins(fix: Fix) -> list[tuple[str, str, str | None, str]]:
    """(package, version, torch backend or None, the command) for each exact pin the fix installs."""
    found = []
    for command in fix.commands:
        if "pip install" not in command or "<" in command.split("#")[0]:
            continue
        backend = _BACKEND.search(command)
        for name, version in _PIN.findall(command.split("#")[0]):
            found.append((name.lower(), version.replace(".*", ".0"), backend.group(1) if backend else None, command))
    return found


def _cuda_of(backend: str | None) -> str | None:
    if backend is None or backend == "cpu":
        return None
    digits = backend[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def _changes(snapshot: Snapshot, fix: Fix) -> list[tuple[str, str, str | None, str]]:
    """The pins that change something a snapshot records: another version, another torch build, or DeepSpeed's
    ops rebuilt against the installed torch. A same-version rebuild from source (flash-attn) leaves no trace in
    a snapshot, so it is no version change here."""
    installed = snapshot.python.packages if snapshot.python else {}
    changed = []
    for name, version, backend, command in pins(fix):
        same = installed.get(name, "").split("+")[0] == version
        if not same or name == "deepspeed" or (name == "torch" and backend is not None):
            changed.append((name, version, backend, command))
    return changed


def changes_versions(snapshot: Snapshot, fix: Fix) -> bool:
    return bool(_changes(snapshot, fix))


def apply(snapshot: Snapshot, fix: Fix) -> Snapshot | None:
    """The snapshot after the fix, or None when the fix changes no version."""
    changes = _changes(snapshot, fix)
    if not changes:
        return None
    python = snapshot.python
    packages = dict(python.packages) if python else {}
    torch, deepspeed, runtime = snapshot.torch, snapshot.deepspeed, dict(snapshot.runtime or {})
    for name, version, backend, command in changes:
        packages[name] = version
        if name == "torch":
            cuda = _cuda_of(backend) if backend else (torch.cuda if torch else None)
            local = backend or (torch.version.partition("+")[2] if torch and torch.version else "")
            torch = Torch(f"{version}+{local}" if local else version, cuda)
            packages[name] = torch.version
            runtime.pop("torch", None)  # the measured arch list belonged to the old build
        if name == "deepspeed":
            built = "DS_BUILD_OPS=1" in command
            base = deepspeed or DeepSpeed(version)
            deepspeed = dataclasses.replace(
                base, version=version, compiled_torch=".".join((torch.version or "").split("+")[0].split(".")[:2]) if torch else None,
                compiled_cuda=torch.cuda if torch else None, installed_ops=base.installed_ops if built else ())
    return dataclasses.replace(
        snapshot, torch=torch, deepspeed=deepspeed, runtime=runtime if snapshot.runtime is not None else None,
        python=dataclasses.replace(python, packages=packages) if python else None)
