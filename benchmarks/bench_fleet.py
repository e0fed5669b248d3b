"""`envcheck fleet` over 64 simulated nodes with pdsh's exec module (`pdsh -R exec -w node[1-64]`), vs plain pdsh.

Usage: python benchmarks/bench_fleet.py [--nodes 64] [--runs 3]

Times, as fresh processes (wall seconds, median of --runs):
  replay   envcheck fleet --via pdsh --rcmd exec --envcheck-command 'REPLAY %h'  (each simulated node prints a
           recorded snapshot chosen by %h; two nodes differ): the cost of fleet itself (fan-out, parse, 64 doctor
           runs, the diff, rendering)
  probe    envcheck fleet --via pdsh --rcmd exec  (every simulated node runs the real `envcheck probe --json`;
           on one machine the N probes share its cores, on a real cluster each node has its own)
  pdsh cat pdsh -R exec -w node[1-N] cat SNAPSHOT  (the peer: moving the same bytes with no judging)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(argv: list[str], runs: int) -> tuple[float, int]:
    times, rc = [], 0
    for _ in range(runs):
        began = time.perf_counter()
        rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO).returncode
        times.append(time.perf_counter() - began)
    return statistics.median(times), rc


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = json.loads((REPO / "tests/assets/healthy/llamafactory-0.9.1-py311-cu121-h200.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(1, args.nodes + 1):
            data = json.loads(json.dumps(base))
            if i == 17:
                data["python"]["packages"]["numpy"] = "2.0.1"
            if i == 40:
                data["env"]["NCCL_SOCKET_IFNAME"] = "ib0"
            (Path(tmp) / f"node{i}.json").write_text(json.dumps(data))
        replay = Path(tmp) / "replay"
        replay.write_text(f'#!/bin/sh\nexec cat "{tmp}/$1.json"\n')
        replay.chmod(0o755)
        hosts = f"node[1-{args.nodes}]"
        fleet = [sys.executable, "-m", "envcheck", "fleet", "--hosts", hosts, "--via", "pdsh", "--rcmd", "exec"]
        rows = [("replay", *timed(fleet + ["--envcheck-command", f"{replay} %h"], args.runs)),
                ("probe", *timed(fleet + ["--timeout", "120"], args.runs)),
                ("pdsh cat", *timed(["pdsh", "-R", "exec", "-w", hosts, "cat", f"{tmp}/node1.json"], args.runs))]
    print(f"{args.nodes} simulated nodes, {os.cpu_count()} cores, median of {args.runs}")
    for name, seconds, rc in rows:
        print(f"  {name:<9} {seconds:6.2f} s  (exit {rc})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
