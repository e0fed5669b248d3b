"""How long regenerating every stack in lockfiles/ takes (resolve + uv lock + emitters), warm and cold index cache.

Run: .venv/bin/python benchmarks/bench_lockfiles.py [--cold]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", action="store_true", help="use an empty uv cache (downloads all metadata)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = dict(os.environ)
    times = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
            if args.cold:
                env["UV_CACHE_DIR"] = cache
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "envcheck.emit.lockfiles", "--out", out], check=True, env=env,
                           capture_output=True)
            times.append(time.perf_counter() - started)
    print(f"{'cold' if args.cold else 'warm'} cache: {len(times)} runs, median {sorted(times)[len(times) // 2]:.1f} s, "
          f"min {min(times):.1f} s, max {max(times):.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
