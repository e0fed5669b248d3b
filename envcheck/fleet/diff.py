"""The cross-node diff: a pure function of snapshots (node -> Snapshot) to Differences and EC7xx findings.

Each fact is read the same way on every node; a node where a fact was not probed (None) takes no part in that
fact's comparison (optional fields refine, never decide). A fact with more than one value makes a Difference that
groups the nodes by value, largest group first, and names the outliers: the nodes outside the value more than half
of the nodes share (every node outside the largest group when no value has a majority).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Mapping

from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.fleet.hosts import compress
from envcheck.fleet.model import Difference, Group
from envcheck.snapshot import Snapshot

NOT_INSTALLED = "(not installed)"
UNSET = "(unset)"
MEMORY_TOLERANCE = 0.05  # total memory within 5 % of the fleet's median counts as the same machine
_NCCL_WHEELS = ("nvidia-nccl-cu12", "nvidia-nccl-cu11", "nvidia-nccl-cu13", "nvidia-nccl")
_CUDNN_WHEELS = ("nvidia-cudnn-cu12", "nvidia-cudnn-cu11", "nvidia-cudnn-cu13")
_ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_")


def _gib(value: int) -> str:
    return f"{value / 2**30:.1f} GiB" if value >= 2**30 else f"{value / 2**20:.0f} MiB"


def _gpus(s: Snapshot) -> str | None:
    if s.nvidia is None:
        return None
    if not s.nvidia.gpus:
        return "no GPU"
    counts: dict[str, int] = {}
    for gpu in s.nvidia.gpus:
        counts[gpu.name] = counts.get(gpu.name, 0) + 1
    return ", ".join(f"{n} x {name}" for name, n in sorted(counts.items()))


def _runtime_fact(s: Snapshot, name: str) -> str | None:
    result = (s.runtime or {}).get("torch")
    if result is None or not result.ok or result.facts.get(name) is None:
        return None
    value = result.facts[name]
    return ".".join(str(part) for part in value) if isinstance(value, (list, tuple)) else str(value)


def _library(s: Snapshot, name: str) -> str | None:
    versions = sorted({lib.version for lib in s.libraries if lib.name == name and lib.version})
    return ", ".join(versions) if versions else None


def _wheel(s: Snapshot, names: tuple[str, ...]) -> str | None:
    if s.python is None:
        return None
    found = [f"{name} {s.python.packages[name]}" for name in names if name in s.python.packages]
    return ", ".join(found) if found else NOT_INSTALLED


def _nccl_loaded(s: Snapshot) -> str | None:
    return _runtime_fact(s, "nccl_version") or _library(s, "libnccl")


def _cudnn(s: Snapshot) -> str | None:
    return _runtime_fact(s, "cudnn_version") or _library(s, "libcudnn") or (
        None if _wheel(s, _CUDNN_WHEELS) in (None, NOT_INSTALLED) else _wheel(s, _CUDNN_WHEELS))


def _attr(section: str, name: str) -> Callable[[Snapshot], str | None]:
    def read(s: Snapshot) -> str | None:
        record = getattr(s, section)
        value = None if record is None else getattr(record, name)
        return None if value is None else str(value)
    return read


def _torch(name: str) -> Callable[[Snapshot], str | None]:
    def read(s: Snapshot) -> str | None:
        if s.torch is None:
            return NOT_INSTALLED if s.python is not None and "torch" not in s.python.packages else None
        value = getattr(s.torch, name)
        return "none (CPU build)" if value is None and name == "cuda" and s.torch.version else (
            None if value is None else str(value))
    return read


def _shm(s: Snapshot) -> str | None:
    return None if s.host is None or s.host.shm_bytes is None else _gib(s.host.shm_bytes)


def _ib(s: Snapshot) -> str | None:
    if s.host is None or s.host.infiniband_devices is None:
        return None
    return ", ".join(s.host.infiniband_devices) or "none"


@dataclass(frozen=True)
class Fact:
    key: str
    label: str
    read: Callable[[Snapshot], str | None]


FACTS: tuple[Fact, ...] = (
    Fact("nvidia.driver_version", "NVIDIA driver", _attr("nvidia", "driver_version")),
    Fact("nvidia.cuda_driver_version", "CUDA supported by the driver", _attr("nvidia", "cuda_driver_version")),
    Fact("nvidia.gpus", "GPUs", _gpus),
    Fact("torch.version", "torch", _torch("version")),
    Fact("torch.cuda", "torch's CUDA", _torch("cuda")),
    Fact("nccl.wheel", "NCCL wheel", lambda s: _wheel(s, _NCCL_WHEELS)),
    Fact("nccl.loaded", "NCCL loaded", _nccl_loaded),
    Fact("cudnn", "cuDNN", _cudnn),
    Fact("python.version", "Python", _attr("python", "version")),
    Fact("python.executable", "interpreter", _attr("python", "executable")),
    Fact("python.prefix", "environment prefix", _attr("python", "prefix")),
    Fact("env.CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
         lambda s: s.env.get("CUDA_VISIBLE_DEVICES", UNSET)),
    Fact("host.infiniband_devices", "InfiniBand devices", _ib),
    Fact("host.shm_bytes", "/dev/shm", _shm),
)


def node_facts(snapshot: Snapshot) -> dict[str, str]:
    """Every comparable fact of one node; facts that were not probed are left out."""
    facts = {fact.key: value for fact in FACTS if (value := fact.read(snapshot)) is not None}
    for name, value in snapshot.env.items():
        if name.startswith(_ENV_PREFIXES):
            facts[f"env.{name}"] = value
    if snapshot.python is not None:
        for name, version in snapshot.python.packages.items():
            facts[f"python.packages.{name}"] = version
    return facts


def _group(values: Mapping[str, str]) -> Difference | None:
    by_value: dict[str, list[str]] = {}
    for node, value in values.items():
        by_value.setdefault(value, []).append(node)
    if len(by_value) < 2:
        return None
    groups = tuple(Group(value, tuple(sorted(nodes))) for value, nodes in
                   sorted(by_value.items(), key=lambda item: (-len(item[1]), sorted(item[1])[0])))
    majority = groups[0].value if len(groups[0].nodes) * 2 > len(values) else None
    outliers = tuple(sorted(n for g in (groups[1:] if majority is not None else groups) for n in g.nodes))
    return Difference("", groups, outliers, majority)


def _memory(snapshots: Mapping[str, Snapshot]) -> Difference | None:
    totals = {node: s.host.mem_total_bytes for node, s in snapshots.items()
              if s.host is not None and s.host.mem_total_bytes}
    if len(totals) < 2:
        return None
    median = statistics.median(totals.values())
    values = {node: f"~{_gib(int(median))}" if abs(v - median) <= MEMORY_TOLERANCE * median else _gib(v)
              for node, v in totals.items()}
    found = _group(values)
    return None if found is None else Difference("host.mem_total_bytes", found.groups, found.outliers, found.majority)


def differences(snapshots: Mapping[str, Snapshot]) -> tuple[Difference, ...]:
    """Every fact that is not the same on all nodes that have it, in FACTS order, then env, then packages."""
    per_node = {node: node_facts(s) for node, s in snapshots.items()}
    keys = [fact.key for fact in FACTS]
    extra = sorted({k for facts in per_node.values() for k in facts if k not in keys})
    found: list[Difference] = []
    for key in keys + extra:
        if key.startswith("python.packages."):
            values = {node: facts.get(key, NOT_INSTALLED) for node, facts in per_node.items()
                      if snapshots[node].python is not None}
        elif key.startswith("env."):
            values = {node: facts.get(key, UNSET) for node, facts in per_node.items()}
        else:
            values = {node: facts[key] for node, facts in per_node.items() if key in facts}
        diff = _group(values)
        if diff is not None:
            found.append(Difference(key, diff.groups, diff.outliers, diff.majority))
    memory = _memory(snapshots)
    if memory is not None:
        found.append(memory)
    return tuple(found)


# --- NCCL_SOCKET_IFNAME against each node's interfaces (NCCL's rules: a comma list of prefixes; `^` excludes the
# --- listed prefixes; `=` makes the names exact) ---

def ifname_matches(spec: str, interfaces: tuple[str, ...]) -> tuple[str, ...]:
    """The interfaces NCCL would consider for NCCL_SOCKET_IFNAME=spec."""
    text = spec.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    names = [part.strip() for part in text.split(",") if part.strip()]

    def hit(interface: str) -> bool:
        return any(interface == name if exact else interface.startswith(name) for name in names)

    return tuple(i for i in interfaces if (not hit(i)) == exclude and not (exclude and i == "lo"))


def socket_ifname(snapshots: Mapping[str, Snapshot]) -> tuple[list[str], list[str], dict[str, str]]:
    """(nodes where NCCL_SOCKET_IFNAME matches no interface, nodes where it could not be checked, spec per node)."""
    missing, unknown, specs = [], [], {}
    for node, s in sorted(snapshots.items()):
        spec = s.env.get("NCCL_SOCKET_IFNAME")
        if not spec:
            continue
        specs[node] = spec
        interfaces = None if s.host is None else s.host.net_interfaces
        if interfaces is None:
            unknown.append(node)
        elif not ifname_matches(spec, interfaces):
            missing.append(node)
    return missing, unknown, specs


# --- Differences -> findings ---

@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    category: str
    title: str


def _rule(key: str) -> Rule:
    if key in ("nvidia.driver_version", "nvidia.cuda_driver_version"):
        return Rule("EC710", Severity.WARNING, "driver_too_old", "the NVIDIA driver differs across nodes")
    if key == "nvidia.gpus":
        return Rule("EC711", Severity.ERROR, "other", "GPU models or counts differ across nodes")
    if key in ("torch.version", "torch.cuda"):
        return Rule("EC712", Severity.ERROR, "version_conflict", "torch or its CUDA differs across nodes")
    if key in ("nccl.wheel", "nccl.loaded"):
        return Rule("EC713", Severity.ERROR, "nccl_error", "NCCL differs across nodes")
    if key == "cudnn":
        return Rule("EC714", Severity.WARNING, "version_conflict", "cuDNN differs across nodes")
    if key.startswith("python.packages."):
        return Rule("EC715", Severity.WARNING, "version_conflict", "Python packages differ across nodes")
    if key == "python.version":
        return Rule("EC716", Severity.ERROR, "version_conflict", "the Python version differs across nodes")
    if key in ("python.executable", "python.prefix"):
        return Rule("EC717", Severity.WARNING, "version_conflict",
                    "the interpreter or environment differs across nodes")
    if key == "env.CUDA_VISIBLE_DEVICES":
        return Rule("EC719", Severity.WARNING, "other", "CUDA_VISIBLE_DEVICES differs across nodes")
    if key.startswith("env."):
        return Rule("EC718", Severity.WARNING, "nccl_timeout", "NCCL settings differ across nodes")
    if key == "host.infiniband_devices":
        return Rule("EC721", Severity.WARNING, "nccl_error", "InfiniBand devices differ across nodes")
    if key == "host.shm_bytes":
        return Rule("EC722", Severity.WARNING, "shm_too_small", "/dev/shm differs across nodes")
    return Rule("EC723", Severity.WARNING, "host_oom", "host memory differs across nodes")


def _label(key: str) -> str:
    for fact in FACTS:
        if fact.key == key:
            return fact.label
    if key.startswith("python.packages."):
        return key[len("python.packages."):]
    if key.startswith("env."):
        return key[4:]
    return "total memory" if key == "host.mem_total_bytes" else key


def describe(diff: Difference) -> str:
    """`torch: 2.3.1 on node[1-63]; 2.4.0 on node64`."""
    return f"{_label(diff.fact)}: " + "; ".join(f"{g.value} on {compress(g.nodes)}" for g in diff.groups)


def _fixes(rule: Rule, diffs: list[Difference]) -> tuple[Fix, ...]:
    if rule.id != "EC715":
        return ()
    by_outliers: dict[tuple[str, ...], list[str]] = {}
    for diff in diffs:
        if diff.majority is not None and diff.majority != NOT_INSTALLED:
            by_outliers.setdefault(diff.outliers, []).append(f"'{_label(diff.fact)}=={diff.majority}'")
    return tuple(Fix(f"on {compress(nodes)}, install what the other nodes have",
                     (f"python -m pip install {' '.join(pins)}",)) for nodes, pins in sorted(by_outliers.items()))


def findings(diffs: tuple[Difference, ...], snapshots: Mapping[str, Snapshot]) -> tuple[Finding, ...]:
    """One finding per rule, naming the outlier nodes and every differing fact as evidence."""
    by_rule: dict[str, tuple[Rule, list[Difference]]] = {}
    for diff in diffs:
        rule = _rule(diff.fact)
        by_rule.setdefault(rule.id, (rule, []))[1].append(diff)
    out: list[Finding] = []
    for rule, items in by_rule.values():
        outliers = sorted({n for d in items for n in d.outliers})
        against = "the majority" if all(d.majority is not None for d in items) else "each other (no majority)"
        lines = [describe(d) for d in items]
        shown = lines[:12] + ([f"... and {len(lines) - 12} more"] if len(lines) > 12 else [])
        out.append(Finding(
            rule.id, rule.severity, rule.category, f"{rule.title}: {compress(outliers)} against {against}",
            "\n".join(shown),
            tuple(Evidence(d.fact, f"{g.value} on {compress(g.nodes)}", d.majority, "envcheck probe on each node")
                  for d in items for g in d.groups),
            _fixes(rule, items)))
    missing, unknown, specs = socket_ifname(snapshots)
    if missing:
        out.append(Finding(
            "EC720", Severity.ERROR, "nccl_timeout",
            f"NCCL_SOCKET_IFNAME names no interface on {compress(missing)}",
            "\n".join(f"{node}: NCCL_SOCKET_IFNAME={specs[node]} but the interfaces are "
                      f"{', '.join(snapshots[node].host.net_interfaces or ()) or 'none'}"  # type: ignore[union-attr]
                      for node in missing[:8]) + ("\n..." if len(missing) > 8 else ""),
            tuple(Evidence("host.net_interfaces", ", ".join(snapshots[n].host.net_interfaces or ()),  # type: ignore[union-attr]
                           specs[n], n) for n in missing),
            (Fix("set NCCL_SOCKET_IFNAME to a prefix every node has (or per node), e.g. the interface that routes "
                 "to MASTER_ADDR", ("ip -br link",)),)))
    if unknown:
        out.append(Finding(
            "EC724", Severity.INFO, "other", f"NCCL_SOCKET_IFNAME could not be checked on {compress(unknown)}",
            "the snapshot has no host.net_interfaces (an older envcheck or /sys/class/net unreadable)"))
    return tuple(sorted(out, key=lambda f: f.sort_key()))
