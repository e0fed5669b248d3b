"""Alert rules: loaded from TOML (bundled rules.toml, or --rules FILE) and evaluated on each Sample.

The evaluator keeps only the scalar series it needs (bounded by the longest window), never whole samples."""

from __future__ import annotations

import re
import sys
from collections import deque
from importlib import resources
from typing import Any

from envcheck.errors import UsageError
from envcheck.guard.model import Alert, Rule, Sample

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KINDS = ("threshold", "rate", "time_to_limit", "increase")
METRICS = ("gpu_memory_ratio", "host_memory_bytes", "host_headroom_bytes", "shm_ratio", "disk_ratio", "xid_total",
           "ranks_gone_total", "oom_kills_total")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def duration(value: Any, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    found = _DURATION.match(str(value).strip())
    if not found:
        raise UsageError(f"{where}: {value!r} is not a duration such as 30s, 5m or 1h")
    return float(found.group(1)) * _UNITS[found.group(2)]


def load(path: str | None = None) -> tuple[Rule, ...]:
    """The rules of PATH, or the bundled ones; a bad file is a UsageError naming the key."""
    if path is None:
        text = resources.files("envcheck.guard").joinpath("rules.toml").read_text(encoding="utf-8")
        where = "rules.toml (bundled)"
    else:
        where = path
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise UsageError(f"--rules {path}: {error.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{where}: not valid TOML: {error}") from None
    if data.get("schema_version") != 1:
        raise UsageError(f"{where}: schema_version: expected 1, got {data.get('schema_version')!r}")
    rules, seen = [], set()
    for n, item in enumerate(data.get("rule", [])):
        at = f"{where}: rule[{n}]"
        unknown = set(item) - {"id", "kind", "metric", "threshold", "for", "window", "severity", "cooldown", "summary",
                                  "min_delta"}
        if unknown:
            raise UsageError(f"{at}.{sorted(unknown)[0]}: unknown key")
        for key in ("id", "kind", "metric", "threshold"):
            if key not in item:
                raise UsageError(f"{at}.{key}: missing")
        if item["kind"] not in KINDS:
            raise UsageError(f"{at}.kind: {item['kind']!r} is not one of {', '.join(KINDS)}")
        if item["metric"] not in METRICS:
            raise UsageError(f"{at}.metric: {item['metric']!r} is not one of {', '.join(METRICS)}")
        if not isinstance(item["threshold"], (int, float)) or isinstance(item["threshold"], bool):
            raise UsageError(f"{at}.threshold: expected a number")
        if item["id"] in seen or not re.match(r"^[a-z][a-z0-9_]*$", str(item["id"])):
            raise UsageError(f"{at}.id: {item['id']!r} is repeated or not lower_snake_case")
        if item.get("severity", "warning") not in ("warning", "critical"):
            raise UsageError(f"{at}.severity: expected warning or critical")
        seen.add(item["id"])
        rules.append(Rule(item["id"], item["kind"], item["metric"], float(item["threshold"]),
                          duration(item.get("for", 0), f"{at}.for"), duration(item.get("window", 60), f"{at}.window"),
                          item.get("severity", "warning"), duration(item.get("cooldown", 600), f"{at}.cooldown"),
                          str(item.get("summary", item["id"])), float(item.get("min_delta", 0))))
    return tuple(rules)


def series(sample: Sample, counters: dict[str, float]) -> dict[str, dict[str, float]]:
    """The metrics rules read, per key ("" for the host, the GPU index for GPUs). COUNTERS accumulates totals."""
    found: dict[str, dict[str, float]] = {"host_memory_bytes": {"": float(sample.tree_rss_bytes)}}
    if sample.gpus:
        found["gpu_memory_ratio"] = {str(g.index): g.used_bytes / g.total_bytes for g in sample.gpus if g.total_bytes}
    if sample.headroom_bytes is not None:
        found["host_headroom_bytes"] = {"": float(sample.headroom_bytes)}
    if sample.shm_total_bytes:
        found["shm_ratio"] = {"": (sample.shm_used_bytes or 0) / sample.shm_total_bytes}
    if sample.disk_total_bytes:
        found["disk_ratio"] = {"": (sample.disk_used_bytes or 0) / sample.disk_total_bytes}
    for xid in sample.xids:
        counters[f"xid:{xid.gpu}"] = counters.get(f"xid:{xid.gpu}", 0) + 1
    found["xid_total"] = {k[4:]: v for k, v in counters.items() if k.startswith("xid:")}
    counters["ranks_gone"] = counters.get("ranks_gone", 0) + len(sample.ranks_gone)
    found["ranks_gone_total"] = {"": counters["ranks_gone"]}
    if sample.cgroup_oom_kills is not None:
        found["oom_kills_total"] = {sample.cgroup or "": float(sample.cgroup_oom_kills)}
    return found


def slope(points: deque[tuple[float, float]]) -> float | None:
    """Least-squares slope (units per second) of (time, value) points; None with fewer than 3."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var <= 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / var


class Evaluator:
    """Evaluates every rule on each sample and returns the alerts that fire (cooldown is the notifier's)."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self.history: dict[tuple[str, str], deque[tuple[float, float]]] = {}
        self.holding: dict[tuple[str, str], float] = {}  # (rule, key) -> since when the condition holds
        self.last: dict[tuple[str, str], float] = {}
        self.counters: dict[str, float] = {}
        self.horizon = max((r.window_s for r in rules), default=60.0)

    def feed(self, sample: Sample) -> tuple[Alert, ...]:
        now = sample.time
        values = series(sample, self.counters)
        for metric, keyed in values.items():
            for key, value in keyed.items():
                points = self.history.setdefault((metric, key), deque())
                points.append((now, value))
                while points and points[0][0] < now - self.horizon:
                    points.popleft()
        fired = []
        for rule in self.rules:
            for key, value in values.get(rule.metric, {}).items():
                measured = self._measure(rule, key, value, now)
                if measured is not None:
                    fired.append(Alert(rule.id, rule.severity, now, sample.elapsed, key, round(measured, 6),
                                       rule.threshold, _message(rule, key, measured)))
        return tuple(fired)

    def _measure(self, rule: Rule, key: str, value: float, now: float) -> float | None:
        """The measured quantity when the rule's condition holds now, else None."""
        ident = (rule.id, key)
        if rule.kind == "increase":
            before = self.last.get(ident)
            self.last[ident] = value
            if before is None and rule.metric in ("xid_total", "ranks_gone_total"):
                before = 0.0  # counted by the guard from zero; a cgroup's counter is a baseline when first seen
            return value if before is not None and value > before else None
        if rule.kind == "threshold":
            if value <= rule.threshold:
                self.holding.pop(ident, None)
                return None
            since = self.holding.setdefault(ident, now)
            return value if now - since >= rule.for_s else None
        points = deque(p for p in self.history.get((rule.metric, key), ()) if p[0] >= now - rule.window_s)
        rate = slope(points)
        if rate is None:
            return None
        if rule.kind == "rate":
            per_minute = rate * 60
            moved = points[-1][1] - min(v for _, v in points)
            return per_minute if per_minute > rule.threshold and moved >= rule.min_delta else None
        if rate >= 0:  # time_to_limit: headroom is not shrinking
            return None
        eta = value / -rate
        return eta if eta < rule.threshold else None


def _message(rule: Rule, key: str, value: float) -> str:
    try:
        return rule.summary.format(key=key or "host", value=value, threshold=rule.threshold, value_gb=value / 1e9)
    except (KeyError, ValueError, IndexError):
        return f"{rule.summary} (value {value:g}, threshold {rule.threshold:g})"
