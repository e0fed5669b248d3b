"""Resolve JSON (CONTRACT.md) and the human explanation of a Resolution or an Impossible."""

from __future__ import annotations

from typing import Any

from envcheck.resolve.solver import Impossible, Resolution


def to_dict(result: Resolution) -> dict[str, Any]:
    return {
        "target": result.target.to_dict(),
        "matrix_version": result.matrix_version,
        "pins": dict(sorted(result.pins.items())),
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
    return {"target": target, "matrix_version": matrix_version, "pins": {}, "torch_index": None, "base_image": None,
            "reasons": [], "warnings": [], "possible": False, "reason": result.reason,
            "rejected": list(result.details)}


def render_text(result: Resolution) -> str:
    lines = [f"stack for {_target_line(result)} (matrix {result.matrix_version})", ""]
    width = max(len(r.package) for r in result.reasons)
    for reason in result.reasons:
        lines.append(f"  {reason.package:<{width}}  {reason.choice}")
        lines.append(f"  {'':<{width}}    {reason.why}")
        lines.extend(f"  {'':<{width}}      - {item}" for item in reason.passed_over)
    if result.warnings:
        lines.append("")
        lines.extend(f"warning: {w}" for w in result.warnings)
    return "\n".join(lines) + "\n"


def _target_line(result: Resolution) -> str:
    target = result.target
    gpus = ", ".join(f"{g.name} ({g.cc})" for g in target.gpus) or "no GPU"
    return f"driver {target.driver}, {gpus}, Python {result.python}"
