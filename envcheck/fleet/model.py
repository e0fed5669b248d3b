"""The records that cross fleet's stage boundaries: what an engine returned per node, what a node turned out to
be, and the report that the renderers show."""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.checks.model import Finding, Severity
from envcheck.snapshot import Snapshot


@dataclass(frozen=True)
class NodeOutput:
    """What the engine returned for one node: its stdout, its stderr lines, and how it ended."""

    node: str
    stdout: str
    stderr: str = ""
    exit_code: int | None = None  # None: the engine did not say (still running when it was stopped, or lost)
    timed_out: bool = False
    duration_s: float | None = None


@dataclass(frozen=True)
class NodeResult:
    """One node: its snapshot when the probe answered, else why not (`status` unreachable, timeout, bad_output,
    no_envcheck). `how` says how envcheck ran there: installed (the same path as here), shipped (envcheck.pyz sent
    over the engine) or command (--envcheck-command)."""

    node: str
    status: str  # "ok" | "unreachable" | "timeout" | "bad_output" | "no_envcheck"
    snapshot: Snapshot | None = None
    how: str | None = None
    detail: str | None = None
    duration_s: float | None = None


@dataclass(frozen=True)
class Group:
    """Nodes that share one value of a fact."""

    value: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Difference:
    """A fact whose value is not the same on every node. `groups` are largest first; `outliers` are the nodes
    outside the majority (every node when no value has a strict majority)."""

    fact: str
    groups: tuple[Group, ...]
    outliers: tuple[str, ...]
    majority: str | None  # the value most nodes share, when more than half do


@dataclass(frozen=True)
class NodeReport:
    node: str
    result: NodeResult
    findings: tuple[Finding, ...]  # the doctor's, unchanged


@dataclass(frozen=True)
class FleetReport:
    engine: str
    nodes: tuple[NodeReport, ...]
    fleet_findings: tuple[Finding, ...]  # reachability and cross-node findings (EC7xx)
    differences: tuple[Difference, ...]
    matrix_version: str | None
    duration_s: float

    def worst(self) -> Severity | None:
        every = [*self.fleet_findings, *(f for node in self.nodes for f in node.findings)]
        return max((f.severity for f in every), default=None)

    def fails(self, threshold: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst >= threshold
