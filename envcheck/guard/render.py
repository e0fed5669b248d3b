"""Files a person opens after a death: postmortem.md and timeline.svg (hand-written SVG: no plotting library)."""

from __future__ import annotations

from html import escape
from typing import Any

from envcheck.guard.model import Alert, Postmortem, Sample


def _mib(n: int | None) -> str:
    return "—" if n is None else f"{n / 2**20:,.0f} MiB"


def markdown(pm: Postmortem) -> str:
    d = pm.diagnosis
    lines = [f"# Post-mortem: `{' '.join(pm.command)}`", "",
             f"- started {pm.started}, ended {pm.ended} ({pm.duration_s:.1f} s)",
             f"- exit: **{pm.status}** — {pm.exit['meaning']}",
             *(f"- {reason}" for reason in pm.reasons), ""]
    causes = d.get("causes", [])
    lines += ["## Causes", ""]
    if not causes:
        lines.append("No known cause was recognised.")
    for n, cause in enumerate(causes, 1):
        lines += [f"{n}. **{cause['cause']}** ({cause['confidence']:.0%}) — {cause['title']}",
                  f"   {cause['explanation']}"]
        lines += [f"   - {e['source']}: `{e['text'][:300]}`" for e in cause.get("evidence", [])]
        lines += [f"   - fix: {f['summary']}" for f in cause.get("fixes", [])]
    lines += ["", "## Processes", "", "| pid | role | comm | exit | how |", "| --- | --- | --- | --- | --- |"]
    for p in pm.processes:
        shown = "—" if p.exit_code is None else f"{p.exit_code}" + (f" ({p.signal})" if p.signal else "")
        lines.append(f"| {p.pid} | {p.role} | `{escape(p.comm)}` | {shown} | {escape(p.how)} |")
    if pm.oom:
        lines += ["", "## OOM killer", ""]
        if pm.oom.get("cgroup"):
            lines.append(f"- memory cgroup `{pm.oom['cgroup']}`: oom_kill {pm.oom['oom_kills_before']} -> "
                         f"{pm.oom['oom_kills_after']}")
        lines += [f"- kernel: `{k['text']}`" for k in pm.oom.get("kernel", [])]
        if pm.oom.get("kernel_unreadable"):
            lines.append(f"- kernel log not readable: {pm.oom['kernel_unreadable']}")
    if pm.alerts:
        lines += ["", "## Alerts before the end", ""]
        lines += [f"- +{a.elapsed:.1f} s [{a.severity}] {a.rule}: {a.message}" for a in pm.alerts]
    if pm.timeline:
        lines += ["", "## Memory at the end (see timeline.svg)", "",
                  "| +s | run RSS | cgroup usage | cgroup limit | MemAvailable | GPU used |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for row in pm.timeline[-10:]:
            gpus = ", ".join(_mib(g) for g in row["gpu_used_bytes"]) or "—"
            lines.append(f"| {row['elapsed']:.1f} | {_mib(row['tree_rss_bytes'])} | {_mib(row['cgroup_usage_bytes'])}"
                         f" | {_mib(row['cgroup_limit_bytes'])} | {_mib(row['mem_available_bytes'])} | {gpus} |")
    if pm.findings:
        lines += ["", "## Doctor findings on this machine now", ""]
        lines += [f"- {f['id']} [{f['severity']}] {f['title']}" for f in pm.findings]
    lines += ["", "## Last lines of train.log", "", "```", *pm.log_tail, "```"]
    if pm.skipped:
        lines += ["", "## Notes", "", *(f"- {s}" for s in pm.skipped)]
    return "\n".join(lines) + "\n"


def svg(samples: tuple[Sample, ...], alerts: tuple[Alert, ...], title: str, width: int = 900,
        height: int = 360) -> str:
    """Host memory (run RSS, cgroup usage and limit) and GPU memory over time, with a red mark per alert."""
    left, right, top, bottom = 70, 20, 30, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    series: dict[str, tuple[str, list[tuple[float, float]]]] = {
        "run RSS": ("#1f77b4", [(s.elapsed, s.tree_rss_bytes) for s in samples]),
        "cgroup usage": ("#2ca02c", [(s.elapsed, s.cgroup_usage_bytes) for s in samples
                                     if s.cgroup_usage_bytes is not None]),
        "cgroup limit": ("#7f7f7f", [(s.elapsed, s.cgroup_limit_bytes) for s in samples
                                     if s.cgroup_limit_bytes is not None]),
    }
    for index in sorted({g.index for s in samples for g in s.gpus}):
        series[f"GPU {index} used"] = ("#ff7f0e", [(s.elapsed, g.used_bytes) for s in samples for g in s.gpus
                                                   if g.index == index])
    points = [p for _, pts in series.values() for p in pts]
    t_max = max([p[0] for p in points] + [a.elapsed for a in alerts] + [1e-3])
    v_max = max([p[1] for p in points] + [1.0])

    def x(t: float) -> float:
        return left + plot_w * t / t_max

    def y(v: float) -> float:
        return top + plot_h * (1 - v / v_max)

    out: list[str] = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                      f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
                      f'<rect width="{width}" height="{height}" fill="white"/>',
                      f'<text x="{left}" y="18" font-size="14">{escape(title)}</text>',
                      f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>',
                      f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>']
    for i in range(5):
        v = v_max * i / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v / 2**30:.2f} GiB</text>')
        t = t_max * i / 4
        out.append(f'<text x="{x(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{t:.0f} s</text>')
    for n, (name, (color, pts)) in enumerate(series.items()):
        if pts:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
            dash = ' stroke-dasharray="6,4"' if name == "cgroup limit" else ""
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{dash} points="{path}"/>')
        out.append(f'<text x="{left + 10 + 150 * n}" y="{height - 6}" fill="{color}">{escape(name)}</text>')
    for alert in alerts:
        out.append(f'<line x1="{x(alert.elapsed):.1f}" y1="{top}" x2="{x(alert.elapsed):.1f}" y2="{top + plot_h}" '
                   f'stroke="#d62728" stroke-width="1"><title>{escape(alert.rule)}: {escape(alert.message)}</title>'
                   f'</line>')
        out.append(f'<text x="{x(alert.elapsed) + 3:.1f}" y="{top + 12}" fill="#d62728">{escape(alert.rule)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def summary(pm: Postmortem) -> dict[str, Any]:
    causes = pm.diagnosis.get("causes", [])
    return {"status": pm.status, "signal": pm.exit.get("signal"), "cause": causes[0]["cause"] if causes else None}
