"""The Python environment of any interpreter: distributions, requirements, duplicates, torch and DeepSpeed builds.

`pyenv_script.py` runs in the target interpreter (so `--python other/bin/python` describes that environment,
not envcheck's); torch's `version.py` and DeepSpeed's `git_version_info_installed.py` are then read here as
literal assignments with `ast`, never imported.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from dataclasses import dataclass, field

from envcheck import proc
from envcheck.probes.pyenv_start import start_python_probe
from envcheck.snapshot import DeepSpeed, Duplicate, PythonEnv, Skipped, Torch

SCRIPT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class PythonProbe:
    """Everything the interpreter probe learned; `sites` and `wheel_libs` feed the library probe."""

    env: PythonEnv | None
    torch: Torch | None
    deepspeed: DeepSpeed | None
    sites: tuple[str, ...] = ()
    wheel_libs: dict[str, str] = field(default_factory=dict)  # library path -> version of the wheel that owns it
    skipped: tuple[Skipped, ...] = ()


def literal_assignments(path: str) -> dict[str, object]:
    """Top-level `name = <literal>` assignments of a Python file, without executing it."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        tree = ast.parse(handle.read(), filename=path)
    values: dict[str, object] = {}
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    values[target.id] = ast.literal_eval(value)
                except ValueError:
                    continue
    return values


def _text_or_none(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def read_torch_version(path: str) -> Torch:
    values = literal_assignments(path)
    return Torch(
        version=_text_or_none(values.get("__version__")),
        cuda=_text_or_none(values.get("cuda")),
        hip=_text_or_none(values.get("hip")),
        git_version=_text_or_none(values.get("git_version")),
        path=os.path.dirname(path),
    )


def _recorded(value: object) -> str | None:
    """DeepSpeed writes "0.0" for a CUDA/HIP it was not built with."""
    text = _text_or_none(value)
    return None if text in (None, "0.0", "0") else text


def read_deepspeed_info(path: str) -> DeepSpeed:
    values = literal_assignments(path)
    torch_info = values.get("torch_info") if isinstance(values.get("torch_info"), dict) else {}
    ops = values.get("installed_ops") if isinstance(values.get("installed_ops"), dict) else {}
    return DeepSpeed(
        version=_text_or_none(values.get("version")),
        compiled_torch=_recorded(torch_info.get("version")),  # type: ignore[union-attr]
        compiled_cuda=_recorded(torch_info.get("cuda_version")),  # type: ignore[union-attr]
        compiled_hip=_recorded(torch_info.get("hip_version")),  # type: ignore[union-attr]
        compiled_nccl=_recorded(torch_info.get("nccl_version")),  # type: ignore[union-attr]
        installed_ops=tuple(sorted(str(name) for name, built in ops.items() if built)),  # type: ignore[union-attr]
        accelerator=_text_or_none(values.get("accelerator_name")),
        path=os.path.dirname(path),
    )


def _read_build_file(reader, path: str | None, probe: str, skipped: list[Skipped]):  # type: ignore[no-untyped-def]
    if not path:
        return None
    try:
        return reader(path)
    except (OSError, SyntaxError, ValueError) as error:
        skipped.append(Skipped(probe, f"{path} could not be read: {error}"))
        return None


def _build_env(data: dict) -> tuple[PythonEnv, dict[str, str]]:  # type: ignore[type-arg]
    first: dict[str, dict] = {}  # type: ignore[type-arg]
    seen: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    wheel_libs: dict[str, str] = {}
    for dist in data.get("dists", []):
        seen.setdefault(dist["name"], []).append(dist)
        first.setdefault(dist["name"], dist)  # sys.path order: the first one is what `import` finds
        for lib in dist.get("libs", []):
            wheel_libs.setdefault(lib, dist["version"])
    duplicates = tuple(
        Duplicate(name, tuple(d["version"] for d in dists), tuple(d["location"] for d in dists))
        for name, dists in sorted(seen.items())
        if len(dists) > 1
    )
    env = PythonEnv(
        version=data["version"],
        executable=data["executable"],
        prefix=data["prefix"],
        kind=data["kind"],
        packages={name: dist["version"] for name, dist in sorted(first.items())},
        requires={name: tuple(dist["requires"]) for name, dist in sorted(first.items()) if dist["requires"]},
        duplicates=duplicates,
        broken=tuple(data.get("broken", [])),
        marker_env=dict(data.get("marker_env", {})),
    )
    return env, wheel_libs


def finish_python_probe(
    started: proc.Running | proc.ProcResult, python: str | None = None, timeout: float = SCRIPT_TIMEOUT_S
) -> PythonProbe:
    interpreter = python or sys.executable
    result = started if isinstance(started, proc.ProcResult) else started.finish(timeout)
    if not result.ok:
        reason = result.describe_failure() or "no output"
        return PythonProbe(None, None, None, skipped=(Skipped("python", f"cannot run {interpreter}: {reason}"),))
    lines = result.stdout.strip().splitlines()
    if not lines:
        return PythonProbe(None, None, None, skipped=(Skipped("python", f"{interpreter} printed nothing for the "
                                                                       "probe script (not a Python interpreter?)"),))
    try:
        data = json.loads(lines[-1])
        env, wheel_libs = _build_env(data)
    except (ValueError, KeyError, TypeError) as error:
        return PythonProbe(None, None, None, skipped=(Skipped("python", f"{interpreter} printed no usable data: {error}"),))
    skipped: list[Skipped] = []
    torch = _read_build_file(read_torch_version, data.get("torch_version_file"), "torch", skipped)
    deepspeed = _read_build_file(read_deepspeed_info, data.get("deepspeed_info_file"), "deepspeed", skipped)
    if deepspeed is None and "deepspeed" in env.packages and not skipped:
        skipped.append(Skipped("deepspeed", "deepspeed is installed but has no git_version_info_installed.py"))
    return PythonProbe(env, torch, deepspeed, tuple(data.get("sites", [])), wheel_libs, tuple(skipped))


def probe_python(python: str | None = None, timeout: float = SCRIPT_TIMEOUT_S) -> PythonProbe:
    return finish_python_probe(start_python_probe(python), python, timeout)
