"""Prometheus: the guard's samples as a node_exporter textfile-collector file, and the guard's rules as alerting
rules over dcgm-exporter and node_exporter metrics (names: DCGM_FI_DEV_FB_USED/FB_FREE/XID_ERRORS,
node_memory_MemAvailable_bytes, node_vmstat_oom_kill, node_filesystem_avail_bytes/size_bytes) plus the guard's own
textfile metrics where no exporter has the fact (ranks gone, the run's memory)."""

from __future__ import annotations

import os
import re
import tempfile
from typing import Iterable

from envcheck.guard.model import Alert, Rule, Sample

TEXTFILE = "envcheck_guard.prom"


def textfile(sample: Sample, counters: dict[str, float], alerts: Iterable[Alert]) -> str:
    """Text exposition format, one HELP/TYPE block per metric."""
    blocks: list[tuple[str, str, str, list[tuple[str, float]]]] = []

    def add(name: str, kind: str, help_text: str, values: list[tuple[str, float]]) -> None:
        values = [(labels, v) for labels, v in values if v is not None]
        if values:
            blocks.append((name, kind, help_text, values))

    add("envcheck_guard_last_sample_timestamp_seconds", "gauge", "Time of the guard's last sample.",
        [("", round(sample.time, 3))])
    add("envcheck_guard_tree_rss_bytes", "gauge", "Resident memory of the guarded command's process tree.",
        [("", sample.tree_rss_bytes)])
    add("envcheck_guard_processes", "gauge", "Processes in the guarded command's tree.", [("", len(sample.processes))])
    add("envcheck_guard_cgroup_memory_usage_bytes", "gauge", "Usage of the command's memory cgroup.",
        [("", sample.cgroup_usage_bytes)])  # type: ignore[list-item]
    add("envcheck_guard_cgroup_memory_limit_bytes", "gauge", "Limit of the command's memory cgroup.",
        [("", sample.cgroup_limit_bytes)])  # type: ignore[list-item]
    add("envcheck_guard_cgroup_oom_kills_total", "counter", "OOM kills in the command's memory cgroup.",
        [("", sample.cgroup_oom_kills)])  # type: ignore[list-item]
    add("envcheck_guard_headroom_bytes", "gauge", "Bytes left before the OOM killer (cgroup or MemAvailable).",
        [("", sample.headroom_bytes)])  # type: ignore[list-item]
    add("envcheck_guard_gpu_memory_used_bytes", "gauge", "GPU memory used (NVML).",
        [(f'gpu="{g.index}"', g.used_bytes) for g in sample.gpus])
    add("envcheck_guard_gpu_memory_total_bytes", "gauge", "GPU memory in total (NVML).",
        [(f'gpu="{g.index}"', g.total_bytes) for g in sample.gpus])
    add("envcheck_guard_xid_events_total", "counter", "NVIDIA Xid events the guard saw.",
        [(f'gpu="{k[4:]}"', v) for k, v in sorted(counters.items()) if k.startswith("xid:")])
    add("envcheck_guard_ranks_gone_total", "counter", "Rank processes that exited while the run went on.",
        [("", counters.get("ranks_gone", 0))])
    fired: dict[str, int] = {}
    for alert in alerts:
        fired[alert.rule] = fired.get(alert.rule, 0) + 1
    add("envcheck_guard_alerts_total", "counter", "Alerts the guard sent, per rule.",
        [(f'rule="{rule}"', n) for rule, n in sorted(fired.items())])
    lines = []
    for name, kind, help_text, values in blocks:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        lines += [f"{name}{{{labels}}} {_number(v)}" if labels else f"{name} {_number(v)}" for labels, v in values]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_textfile(directory: str, sample: Sample, counters: dict[str, float], alerts: Iterable[Alert]) -> str:
    """Write atomically (a temp file in the same directory, then rename): the collector never reads half a file."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, TEXTFILE)
    fd, temp = tempfile.mkstemp(prefix=".envcheck_guard.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(textfile(sample, counters, alerts))
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return path


def _seconds(value: float) -> str:
    value = int(round(value))
    return f"{value // 60}m" if value % 60 == 0 and value >= 60 else f"{value}s"


_FS = 'fstype!~"tmpfs|devtmpfs|overlay|squashfs|nsfs|proc|sysfs"'


def expression(rule: Rule) -> str | None:
    """The PromQL of one rule over exporter metrics, with the rule's threshold; None when it has no equivalent."""
    t, w = rule.threshold, _seconds(max(rule.window_s, 60))
    if rule.metric == "gpu_memory_ratio":
        return f"DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > {t:g}"
    if rule.metric == "host_memory_bytes" and rule.kind == "rate":
        floor = f" and -delta(node_memory_MemAvailable_bytes[{w}]) > {rule.min_delta:g}" if rule.min_delta else ""
        return f"-deriv(node_memory_MemAvailable_bytes[{w}]) * 60 > {t:g}{floor}"
    if rule.metric == "host_headroom_bytes" and rule.kind == "time_to_limit":
        return (f"node_memory_MemAvailable_bytes / clamp_min(-deriv(node_memory_MemAvailable_bytes[{w}]), 1) < {t:g}"
                f" and deriv(node_memory_MemAvailable_bytes[{w}]) < 0")
    if rule.metric == "shm_ratio":
        return (f'1 - node_filesystem_avail_bytes{{mountpoint="/dev/shm"}} / '
                f'node_filesystem_size_bytes{{mountpoint="/dev/shm"}} > {t:g}')
    if rule.metric == "disk_ratio":
        return f"1 - node_filesystem_avail_bytes{{{_FS}}} / node_filesystem_size_bytes{{{_FS}}} > {t:g}"
    if rule.metric == "xid_total":
        return "changes(DCGM_FI_DEV_XID_ERRORS[10m]) > 0 and DCGM_FI_DEV_XID_ERRORS != 0"
    if rule.metric == "ranks_gone_total":
        return f"increase(envcheck_guard_ranks_gone_total[5m]) > {t:g}"
    if rule.metric == "oom_kills_total":
        return f"increase(node_vmstat_oom_kill[5m]) > {t:g}"
    return None


def _camel(rule_id: str) -> str:
    return "EnvcheckGuard" + "".join(part.capitalize() for part in rule_id.split("_"))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rules_yaml(rules: tuple[Rule, ...]) -> str:
    """A Prometheus rule file (YAML written by hand: every value is quoted, so no YAML library is needed)."""
    lines = ["# Generated by `envcheck alerts --format prometheus` from the guard's rules (same thresholds).",
             "groups:", "  - name: envcheck-guard", "    rules:"]
    for rule in rules:
        expr = expression(rule)
        if expr is None:
            continue
        summary = rule.summary.replace("{key}", "{{ $labels.gpu }}")
        summary = re.sub(r"\{value:[^}]*%\}", "{{ $value | humanizePercentage }}", summary)
        summary = re.sub(r"\{value_gb[^}]*\} GB/min", "{{ $value | humanize }}B/min", summary)
        summary = re.sub(r"\{value[^}]*\}", "{{ $value | humanize }}", summary)
        lines += [f"      - alert: {_camel(rule.id)}", f"        expr: {_quote(expr)}"]
        if rule.for_s:
            lines.append(f"        for: {_seconds(rule.for_s)}")
        lines += ["        labels:", f"          severity: {rule.severity}", f"          guard_rule: {rule.id}",
                  "        annotations:", f"          summary: {_quote(summary)}"]
    return "\n".join(lines) + "\n"
