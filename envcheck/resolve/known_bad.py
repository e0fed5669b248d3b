"""Known-bad entries of the matrix judged against a candidate stack (ranges, not installed versions).

An entry whose every condition surely holds for the stack blocks the candidate when it is a confirmed error or
fatal; one that may hold (a package range overlaps the bad range) becomes a warning that names what to avoid.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

from envcheck.matrix import Matrix, query
from envcheck.matrix.model import KnownBad
from envcheck.resolve.packages import Context
from envcheck.resolve.specs import line_all, line_matches, overlaps
from envcheck.resolve.target import Target

HOLDS, MAYBE, FAILS = "holds", "maybe", "fails"


def _plain(values: list[str], spec: str) -> str:
    if not values:
        return FAILS
    return HOLDS if any(query.satisfies(v, spec) for v in values) else FAILS


def _state(key: str, spec: str, target: Target, ctx: Context, pins: dict[str, str]) -> str:
    if key == "python":
        return _plain([ctx.python], spec)
    if key in ("torch_cuda", "nvcc"):  # the emitted toolkit is at torch's CUDA
        return _plain([ctx.cuda], spec)
    if key == "driver":
        return _plain([target.driver] if target.driver else [], spec)
    if key == "cuda_driver":
        return _plain([target.cuda_driver] if target.cuda_driver else [], spec)
    if key == "compute_capability":
        return _plain([g.cc for g in target.gpus], spec)
    if key == "gpu_name":
        return HOLDS if any(spec.lower() in g.name.lower() for g in target.gpus) else FAILS
    if key == "gpu_count":
        return _plain([str(len(target.gpus))] if target.gpus else [], spec)
    if key == "glibc":
        return _plain([target.glibc] if target.glibc else [], spec)
    if key == "torch":
        return HOLDS if line_all(ctx.torch, spec) else MAYBE if line_matches(ctx.torch, spec) else FAILS
    if key in pins:
        return MAYBE if overlaps(SpecifierSet(pins[key]), SpecifierSet(spec)) else FAILS
    return FAILS  # a package not in the stack, or a loaded-library fact a resolver cannot know


def _judge(entry: KnownBad, target: Target, ctx: Context, pins: dict[str, str]) -> str:
    states = [_state(k, s, target, ctx, pins) for k, s in sorted(entry.when.items())]
    if FAILS in states:
        return FAILS
    return MAYBE if MAYBE in states else HOLDS


def blocking(matrix: Matrix, target: Target, ctx: Context, pins: dict[str, str]) -> str | None:
    for entry in matrix.known_bad:
        if entry.confirmed and entry.severity in ("error", "fatal") and _judge(entry, target, ctx, pins) == HOLDS:
            return f"{entry.id}: {entry.title}"
    return None


def warnings(matrix: Matrix, target: Target, ctx: Context, pins: dict[str, str]) -> list[str]:
    found = []
    for entry in matrix.known_bad:
        state = _judge(entry, target, ctx, pins)
        if state == HOLDS or (state == MAYBE and entry.severity in ("error", "fatal")):
            found.append(f"{entry.id} ({entry.severity}): {entry.title}: {entry.fix}")
    return found
