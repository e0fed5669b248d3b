"""Run the probe on every node through an engine, turn each node's output into a NodeResult, judge each snapshot
with the doctor's checks, and assemble the FleetReport. Nothing here prints."""

from __future__ import annotations

import json
import time
from typing import Mapping

from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.errors import SnapshotError
from envcheck.fleet import diff
from envcheck.fleet.engines import Engine
from envcheck.fleet.hosts import compress
from envcheck.fleet.model import FleetReport, NodeOutput, NodeReport, NodeResult
from envcheck.fleet.remote import NO_ENVCHECK, RemotePlan, needs_first_round_ship, parse, payload, script
from envcheck.snapshot import Snapshot


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])[-400:]


def to_result(output: NodeOutput) -> NodeResult:
    parsed = parse(output.stdout)
    if parsed.exit_code is None:
        if output.timed_out:
            return NodeResult(output.node, "timeout", detail="no answer within the time limit",
                              duration_s=output.duration_s)
        return NodeResult(output.node, "unreachable", detail=_tail(output.stderr) or (
            f"the engine gave exit status {output.exit_code} and no output" if output.exit_code is not None
            else "the engine gave no output for this node"), duration_s=output.duration_s)
    if parsed.exit_code == NO_ENVCHECK and parsed.how == "missing":
        return NodeResult(output.node, "no_envcheck", how="missing", duration_s=output.duration_s,
                          detail="envcheck is not installed at this interpreter's path on the node")
    try:
        snapshot = Snapshot.from_dict(json.loads(parsed.body), output.node)
    except (ValueError, SnapshotError) as error:
        reason = _tail(output.stderr) or str(error)[:300]
        return NodeResult(output.node, "bad_output", how=parsed.how, duration_s=output.duration_s,
                          detail=f"the probe exited with {parsed.exit_code}: {reason}")
    return NodeResult(output.node, "ok", snapshot, parsed.how, duration_s=output.duration_s)


def probe_nodes(nodes: tuple[str, ...], engine: Engine, plan: RemotePlan, timeout: float) -> tuple[NodeResult, ...]:
    """First try envcheck where it is (or ship at once with --ship always); nodes that lack it get envcheck.pyz
    over the engine in a second round, where the engine can carry stdin (ssh, srun)."""
    ship_now = needs_first_round_ship(plan)
    if ship_now and not getattr(engine, "carries_stdin", True):
        ship_now = False
    outputs = engine.run(nodes, script(plan, ship_now), payload() if ship_now else None, timeout)
    results = {node: to_result(outputs[node]) for node in nodes}
    lacking = tuple(n for n in nodes if results[n].status == "no_envcheck")
    if lacking and plan.ship == "auto" and getattr(engine, "carries_stdin", True):
        again = engine.run(lacking, script(plan, True), payload(), timeout)
        results.update({node: to_result(again[node]) for node in lacking})
    elif lacking:
        results.update({node: NodeResult(node, "no_envcheck", how="missing", detail=(
            f"envcheck is not at {plan.exe} on the node and {engine.name} cannot carry it: install envcheck there "
            "(a shared filesystem), use --envcheck-command, or --via ssh") if plan.ship == "auto" else
            results[node].detail) for node in lacking})
    return tuple(results[node] for node in nodes)


_STATUS_RULES = {
    "unreachable": ("EC701", "node(s) could not be reached"),
    "timeout": ("EC702", "node(s) did not answer within the time limit"),
    "bad_output": ("EC703", "node(s) answered without a usable snapshot"),
    "no_envcheck": ("EC703", "node(s) answered without a usable snapshot"),
}


def reachability(results: tuple[NodeResult, ...]) -> tuple[Finding, ...]:
    by_id: dict[str, list[NodeResult]] = {}
    for result in results:
        if result.status != "ok":
            by_id.setdefault(_STATUS_RULES[result.status][0], []).append(result)
    out = []
    for finding_id, items in sorted(by_id.items()):
        title = _STATUS_RULES[items[0].status][1]
        nodes = [r.node for r in items]
        out.append(Finding(
            finding_id, Severity.ERROR, "nccl_timeout" if finding_id != "EC703" else "other",
            f"{len(nodes)} {title}: {compress(nodes)}",
            "\n".join(f"{r.node}: {r.detail}" for r in items[:6]) + ("\n..." if len(items) > 6 else ""),
            tuple(Evidence("fleet.node", r.status, "ok", r.node) for r in items),
            (Fix("a training job started now would wait on these nodes until its NCCL timeout; check them or leave "
                 "them out of the hostfile/allocation"),)))
    return tuple(out)


def judge(results: tuple[NodeResult, ...], engine: str, matrix: object, matrix_version: str | None,
          began: float, select: tuple[str, ...] = (), ignore: tuple[str, ...] = ()) -> FleetReport:
    from envcheck.checks import run_checks, selected

    reports = []
    for result in results:
        found: tuple[Finding, ...] = ()
        if result.snapshot is not None:
            found = tuple(f for f in run_checks(result.snapshot, matrix) if selected(f.id, select, ignore))
        reports.append(NodeReport(result.node, result, found))
    snapshots: Mapping[str, Snapshot] = {r.node: r.snapshot for r in results if r.snapshot is not None}
    diffs = diff.differences(snapshots)
    fleet = tuple(f for f in (*reachability(results), *diff.findings(diffs, snapshots))
                  if selected(f.id, select, ignore))
    return FleetReport(engine, tuple(reports), tuple(sorted(fleet, key=lambda f: f.sort_key())), diffs,
                       matrix_version, time.monotonic() - began)
