"""Known-bad combinations from the matrix: every `when` condition must hold for the entry to apply."""

from __future__ import annotations

from typing import Iterator

from envcheck.checks import check
from envcheck.checks.facts import build_toolkit, gpu_capabilities
from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.matrix.model import KnownBad
from envcheck.snapshot import Snapshot

def _driver_absent(snapshot: Snapshot) -> bool:
    """The probe established that there is no NVIDIA driver (as opposed to failing to ask it)."""
    return snapshot.nvidia is None and any(item.probe == "nvidia" for item in snapshot.skipped)


def _visible_gpus(snapshot: Snapshot) -> int:
    """GPUs a run can use: all of them, or as many as CUDA_VISIBLE_DEVICES lists."""
    count = len(snapshot.nvidia.gpus) if snapshot.nvidia else 0
    visible = snapshot.env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([item for item in visible.split(",") if item.strip() and item.strip() != "-1"]))
    return count


def fact_values(snapshot: Snapshot, matrix: Matrix, key: str) -> list[str] | None:
    """Every observed value of a condition key (several for GPUs); None when it was not probed; [] when absent."""
    python, torch, nvidia, host = snapshot.python, snapshot.torch, snapshot.nvidia, snapshot.host
    if key == "python":
        return [python.version] if python else None
    if key == "torch_cuda":
        if torch is None:
            return None if python is None else []
        return [torch.cuda] if torch.cuda else []
    if key in ("driver", "cuda_driver", "compute_capability", "gpu_name", "gpu_count") and _driver_absent(snapshot):
        return []
    if key == "gpu_count":
        return None if nvidia is None else [str(_visible_gpus(snapshot))]
    if key == "driver":
        return [nvidia.driver_version] if nvidia and nvidia.driver_version else None
    if key == "cuda_driver":
        return [nvidia.cuda_driver_version] if nvidia and nvidia.cuda_driver_version else None
    if key == "nvcc":
        kit = build_toolkit(snapshot)
        return [kit.nvcc_version] if kit and kit.nvcc_version else []
    if key in ("compute_capability", "gpu_name"):
        if nvidia is None:
            return None
        if key == "gpu_name":
            return [gpu.name.lower() for gpu in nvidia.gpus]
        return [g.cc for g in gpu_capabilities(snapshot, matrix) if g.cc]
    if key == "glibc":
        return [host.glibc] if host and host.glibc else None
    if key == "nccl_loaded":
        runtime = (snapshot.runtime or {}).get("torch")
        loaded = runtime.facts.get("nccl_version") if runtime and runtime.ok else None
        if isinstance(loaded, str) and loaded and not loaded.startswith("error"):
            return [loaded]
        return None
    if python is None:
        return None
    return [python.packages[key]] if key in python.packages else []


def _release(text: str) -> str:
    """2.6.0a0+ecf3bae40a.nv25.01 (an NGC container's torch) -> 2.6.0: vendor pre-releases carry that release's
    behaviour, but PEP 440 orders them before it, so '>=2.6' would never match them."""
    found = query.version(text)
    return found.base_version if found is not None else text


def matches(entry: KnownBad, snapshot: Snapshot, matrix: Matrix) -> tuple[bool, list[Evidence], list[str]]:
    """(applies, evidence, keys that could not be judged); an entry applies only if every condition holds."""
    evidence, missing = [], []
    for key, spec in sorted(entry.when.items()):
        values = fact_values(snapshot, matrix, key)
        if values is None:
            missing.append(key)
            continue
        if key == "gpu_name":
            hit = [v for v in values if spec.lower() in v]
        else:
            hit = [v for v in values if query.satisfies(_release(v), spec)]
        if not hit:
            return False, [], []
        evidence.append(Evidence(key, ", ".join(hit), spec))
    return not missing, evidence, missing


def known_bad_floors(snapshot: Snapshot, matrix: Matrix) -> set[tuple[str, str, str]]:
    """(package, key, floor) for each applying known-bad entry whose condition on `key` is `<floor`: it reports
    that `package` needs `key >= floor`, so a check saying the same (EC507's torch floors of transformers, which
    KB020-KB024 raise with their symptom) stays silent instead of saying it twice."""
    floors = set()
    for entry in matrix.known_bad:
        if entry.covered_by:
            continue  # reported by the covering check itself, not by EC510
        applies, _evidence, _missing = matches(entry, snapshot, matrix)
        if not applies:
            continue
        for key, spec in entry.when.items():
            if spec.startswith("<") and not spec.startswith("<=") and "," not in spec:
                floors.update((package, key, spec[1:].strip()) for package in entry.when if package != key)
    return floors


@check("EC510", needs_matrix=True)
def known_bad_combinations(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    for entry in matrix.known_bad:
        if entry.covered_by:
            continue  # a dedicated check reports it, with the evidence it needs
        applies, evidence, missing = matches(entry, snapshot, matrix)
        if missing:
            yield Unevaluated(f"known-bad {entry.id}", f"not probed: {', '.join(missing)}")
            continue
        if not applies:
            continue
        severity = Severity.parse(entry.severity) if entry.confirmed else Severity.INFO
        yield Finding(
            "EC510", severity, entry.category, f"{entry.id}: {entry.title}",
            f"{entry.symptom} {entry.note or ''}".strip(),
            (*evidence, Evidence("matrix known_bad", entry.id, None, entry.source)),
            (Fix(entry.fix, entry.commands),),
            tuple(part.strip() for part in entry.source.split(" ; ") if part.strip().startswith("http")),
        )
