"""The guard's own cost: CPU of the guard process while it watches a command, as a share of one core.

    python benchmarks/bench_guard.py --seconds 60 --interval 5

The guarded command is `sleep` under a small process tree (a shell and N sleeping children) so that the cost is the
sampling itself, not the tee. The guard's CPU time (utime + stime of its process, /proc/PID/stat) is read after a
warm-up (start-up imports are excluded) and again just before the command ends; the sampler thread's own CPU time
is what `--json` reports."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--interval", type=float, default=5)
    parser.add_argument("--children", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=3)
    args = parser.parse_args()
    script = f"for i in $(seq {args.children}); do sleep {args.seconds + 5} & done; sleep {args.seconds}; kill $(jobs -p)"
    with tempfile.TemporaryDirectory() as out:
        guard = subprocess.Popen([sys.executable, "-m", "envcheck", "guard", "--json", "--interval",
                                  str(args.interval), "--out", out, "--", "bash", "-c", script],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(args.warmup)
        began, cpu0 = time.monotonic(), cpu_s(guard.pid)
        time.sleep(args.seconds - args.warmup - 0.5)
        wall, cpu1 = time.monotonic() - began, cpu_s(guard.pid)
        summary = json.loads(guard.communicate()[0])
    share = (cpu1 - cpu0) / wall
    print(json.dumps({"interval_s": args.interval, "children": args.children, "measured_s": round(wall, 1),
                      "guard_cpu_s": round(cpu1 - cpu0, 3), "share_of_one_core": f"{share:.3%}",
                      "samples": summary["samples"], "sampler_cpu_s": summary["sampler_cpu_s"],
                      "sampler_ms_per_sample": round(1000 * summary["sampler_cpu_s"] / summary["samples"], 2),
                      "processes_on_host": len([p for p in os.listdir('/proc') if p.isdigit()])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
