"""Resolve JSON (CONTRACT.md) and the human explanation of a Resolution or an Impossible."""

from __future__ import annotations

from typing import Any

from envcheck.resolve.exact import UNRANGED, Exact
from envcheck.resolve.solver import Impossible, Resolution


def to_dict(result: Resolution, exact: Exact) -> dict[str, Any]:
    return {
        "target": result.target.to_dict(),
        "matrix_version": result.matrix_version,
        "pins": dict(exact.pins),
        "ranges": dict(sorted(result.ranges.items())),
        "locked": exact.locked,
        "lock": {"how": exact.how, "note": exact.note, "unpinned": list(exact.unpinned), "outside": list(exact.outside)},
        "torch_index": result.torch_index,
        "default_index": result.default_index,
        "base_image": result.base_image_ref,
        "platform": f"x86_64-manylinux_{result.platform_glibc.replace('.', '_')}",
        "reasons": [{"package": r.package, "choice": r.choice, "why": r.why,
                     **({"passed_over": list(r.passed_over)} if r.passed_over else {})} for r in result.reasons],
        "warnings": list(result.warnings),
    }


def impossible_dict(result: Impossible, target: dict[str, Any], matrix_version: str) -> dict[str, Any]:
    # The contract's keys stay present (empty) so that scripts reading a failed resolve find the same shape.
    return {"target": target, "matrix_version": matrix_version, "pins": {}, "ranges": {}, "locked": False,
            "torch_index": None, "base_image": None,
            "reasons": [], "warnings": [], "possible": False, "reason": result.reason,
            "rejected": list(result.details)}


def render_text(result: Resolution, exact: Exact) -> str:
    lines = [f"stack for {_target_line(result)} (matrix {result.matrix_version})", _lock_line(exact), ""]
    width = max(len(r.package) for r in result.reasons)
    for reason in result.reasons:
        pin = exact.pins.get(reason.package) if reason.package not in UNRANGED else None
        shown = f"{pin}  (range {reason.choice})" if pin else reason.choice
        if reason.package in exact.unpinned:
            shown += "  (no exact pin: not locked)"
        lines.append(f"  {reason.package:<{width}}  {shown}")
        lines.append(f"  {'':<{width}}    {reason.why}")
        lines.extend(f"  {'':<{width}}      - {item}" for item in reason.passed_over)
    warnings = [*result.warnings, *(f"the resolver's pin {o}" for o in exact.outside)]
    if warnings:
        lines.append("")
        lines.extend(f"warning: {w}" for w in warnings)
    return "\n".join(lines) + "\n"


def _lock_line(exact: Exact) -> str:
    if exact.locked:
        transitive = len(exact.pins) - len(UNRANGED)
        return f"locked: {transitive} packages at exact versions by {exact.how.split(' pip compile')[0]} (--json lists all)"
    return (f"NOT LOCKED ({exact.note}): the versions shown are the newest the matrix names inside each range, "
            "not a resolver's answer")


def _target_line(result: Resolution) -> str:
    target = result.target
    gpus = ", ".join(f"{g.name} ({g.cc})" for g in target.gpus) or "no GPU"
    return f"driver {target.driver}, {gpus}, Python {result.python}"
