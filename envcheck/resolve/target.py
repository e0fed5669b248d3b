"""The target a stack is resolved for: the machine's facts (from flags, a snapshot or a probe) and what is asked.

Flags beat the snapshot; the snapshot beats a probe of this machine. Every fact remembers where it came from, so the
resolver can say "driver 535.104.05 (from --driver)".
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envcheck.checks.versions import major_minor
from envcheck.errors import UsageError
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.matrix.gpu_names import GpuNameError, resolve_gpu_name
from envcheck.snapshot import Gpu, Host, Nvidia, PythonEnv, Snapshot

# Packages whose names users type in other spellings.
ALIASES = {"flash-attention": "flash-attn", "flash_attn": "flash-attn", "llama-factory": "llamafactory",
           "llamafactory-cli": "llamafactory"}


@dataclass(frozen=True)
class GpuTarget:
    name: str
    cc: str


@dataclass(frozen=True)
class Request:
    """A requested distribution and its version range ('' = any)."""

    name: str
    spec: str = ""


@dataclass(frozen=True)
class Target:
    driver: str | None
    cuda_driver: str | None  # newest CUDA the driver reports supporting, when probed
    gpus: tuple[GpuTarget, ...]
    python: str | None
    glibc: str | None
    arch: str
    torch: str | None  # a specifier as typed ("2.4", ">=2.4")
    cuda: str | None  # a pinned CUDA variant ("12.1")
    requests: tuple[Request, ...] = ()
    llamafactory: str | None = None  # None: not asked; "": newest; else a specifier
    origin: dict[str, str] = field(default_factory=dict)  # fact -> "--driver", "snapshot node.json", "this machine"

    def as_snapshot(self) -> Snapshot:
        """The target as a snapshot, so the doctor's own judges (judge_driver, ...) apply unchanged."""
        nvidia = None
        if self.driver:
            nvidia = Nvidia(driver_version=self.driver, cuda_driver_version=self.cuda_driver,
                            gpus=tuple(Gpu(i, g.name, g.cc) for i, g in enumerate(self.gpus)))
        python = PythonEnv(self.python, "", "", "venv") if self.python else None
        return Snapshot(1, "", "", host=Host(glibc=self.glibc, arch=self.arch), nvidia=nvidia, python=python)

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver": self.driver, "cuda_driver": self.cuda_driver,
            "gpus": [{"name": g.name, "compute_capability": g.cc} for g in self.gpus],
            "python": self.python, "glibc": self.glibc, "arch": self.arch, "torch": self.torch, "cuda": self.cuda,
            "with": [f"{r.name}{r.spec}" for r in self.requests],
            "for": None if self.llamafactory is None else f"llamafactory{self.llamafactory}",
            "origin": dict(sorted(self.origin.items())),
        }


def parse_request(text: str, flag: str = "--with") -> Request:
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        raise UsageError(f"{flag} {text}: not a package name with an optional version range, e.g. "
                         "'deepspeed' or 'transformers>=4.50'") from None
    name = canonicalize_name(requirement.name)
    return Request(ALIASES.get(name, name), str(requirement.specifier))


def parse_for(text: str) -> str:
    request = parse_request(text, "--for")
    if request.name != "llamafactory":
        raise UsageError(f"--for {text}: only 'llamafactory' or 'llamafactory==X' is a known training stack")
    return request.spec


def _gpu(matrix: Matrix, name: str) -> GpuTarget:
    try:
        model = resolve_gpu_name(matrix, name).model
    except GpuNameError as error:
        raise UsageError(f"--gpu: {error}; or give --compute-capability X.Y instead") from None
    return GpuTarget(model.name, model.compute_capability)


def _python_version(text: str) -> str:
    value = major_minor(text)
    if value is None:
        raise UsageError(f"--python {text}: expected a Python version such as 3.11")
    return value


def _check_version(flag: str, text: str | None) -> None:
    if text is not None and query.version(text) is None:
        raise UsageError(f"{flag} {text}: not a version")


MACHINE_FLAGS = ("driver", "gpu", "compute_capability")


def build_target(args: argparse.Namespace, matrix: Matrix, probe: Callable[[], Snapshot]) -> Target:
    """Flags, then --snapshot, then (only when no machine flag is given) a probe of this machine."""
    from envcheck.snapshot import load_snapshot

    _check_version("--driver", args.driver)
    _check_version("--cuda", args.cuda)
    origin: dict[str, str] = {}
    snapshot: Snapshot | None = None
    if args.snapshot:
        snapshot, where = load_snapshot(args.snapshot), f"snapshot {args.snapshot}"
    elif not any(getattr(args, flag) for flag in MACHINE_FLAGS):
        snapshot, where = probe(), "this machine"
    nvidia = snapshot.nvidia if snapshot else None
    host = snapshot.host if snapshot else None

    driver, cuda_driver, gpus = None, None, []
    if nvidia is not None and nvidia.driver_version:
        driver, cuda_driver = nvidia.driver_version, nvidia.cuda_driver_version
        origin["driver"] = where
        for gpu in nvidia.gpus:
            cc = gpu.compute_capability or (m.compute_capability if (m := query.gpu_model(matrix, gpu.name)) else None)
            if cc:
                gpus.append(GpuTarget(gpu.name, cc))
        if gpus:
            origin["gpus"] = where
    if args.driver:
        driver, cuda_driver, origin["driver"] = args.driver, None, "--driver"
    if args.gpu or args.compute_capability:
        gpus = [_gpu(matrix, name) for name in args.gpu or ()]
        for cc in args.compute_capability or ():
            if major_minor(cc) != cc.strip():
                raise UsageError(f"--compute-capability {cc}: expected X.Y, e.g. 8.0")
            if cc.strip() not in {row.cc for row in matrix.compute_capabilities}:
                known = ", ".join(sorted((row.cc for row in matrix.compute_capabilities), key=lambda c: tuple(map(int, c.split(".")))))
                raise UsageError(f"--compute-capability {cc}: not a compute capability the matrix knows ({known})")
            gpus.append(GpuTarget(f"sm_{cc.strip().replace('.', '')}", cc.strip()))
        origin["gpus"] = "--gpu/--compute-capability"
    python = None
    if args.python:
        python, origin["python"] = _python_version(args.python), "--python"
    elif snapshot is not None and snapshot.python is not None:
        python, origin["python"] = major_minor(snapshot.python.version), where
    glibc = host.glibc if host and host.glibc else None
    if glibc:
        origin["glibc"] = where
    arch = host.arch if host and host.arch else "x86_64"
    requests = tuple(sorted({r.name: r for r in map(parse_request, args.with_ or ())}.values(), key=lambda r: r.name))
    llamafactory = parse_for(args.for_) if args.for_ else None
    if any(r.name == "llamafactory" for r in requests):
        spec = next(r.spec for r in requests if r.name == "llamafactory")
        requests = tuple(r for r in requests if r.name != "llamafactory")
        llamafactory = spec if llamafactory is None else llamafactory
    return Target(driver, cuda_driver, tuple(gpus), python, glibc, arch, args.torch, args.cuda, requests,
                  llamafactory, origin)
