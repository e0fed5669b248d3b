"""Static `envcheck doctor` vs `python -m torch.utils.collect_env`, side by side on one environment.

Usage: python benchmarks/bench_doctor.py --python /path/to/venv/bin/python [--runs 5]

The target environment needs torch (collect_env is part of torch). Both commands run as child processes; each
run's wall time and peak resident memory (of the largest process it started, from getrusage of a fresh
wrapper) are measured, and the medians are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

_WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter(); r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)\n"
)


def measure(argv: list[str], runs: int) -> dict[str, float]:
    walls, peaks = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, check=True)
        wall, peak_kib, code = out.stdout.split()
        if int(code) not in (0, 1):
            raise SystemExit(f"{' '.join(argv)} exited with {code}")
        walls.append(float(wall))
        peaks.append(int(peak_kib) / 1024)
    return {"wall_s_median": statistics.median(walls), "wall_s_min": min(walls), "peak_rss_mib": max(peaks)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="interpreter of an environment that has torch")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    envcheck = shutil.which("envcheck") or os.path.join(os.path.dirname(sys.executable), "envcheck")
    subjects = {
        "envcheck doctor (static)": [envcheck, "doctor", "--no-deep", "--python", args.python],
        "envcheck doctor --deep": [envcheck, "doctor", "--deep", "--python", args.python],
        "torch.utils.collect_env": [args.python, "-m", "torch.utils.collect_env"],
    }
    # one warm-up run each, so that both sides read from a warm page cache
    for argv in subjects.values():
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {name: measure(argv, args.runs) for name, argv in subjects.items()}
    ratio = results["torch.utils.collect_env"]["wall_s_median"] / results["envcheck doctor (static)"]["wall_s_median"]
    if args.json:
        print(json.dumps({"results": results, "speedup_static_vs_collect_env": ratio}, indent=2))
        return 0
    print(f"{'command':<28} {'median s':>9} {'min s':>7} {'peak MiB':>9}   ({args.runs} runs, {time.strftime('%Y-%m-%d')})")
    for name, r in results.items():
        print(f"{name:<28} {r['wall_s_median']:>9.3f} {r['wall_s_min']:>7.3f} {r['peak_rss_mib']:>9.1f}")
    print(f"static doctor is {ratio:.1f}x faster than collect_env")
    return 0


if __name__ == "__main__":
    sys.exit(main())
