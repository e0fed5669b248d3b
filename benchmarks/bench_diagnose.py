"""`envcheck diagnose` scan speed and memory vs `grep -E` over the same signatures, on a 1 GB training log.

Usage: python benchmarks/bench_diagnose.py [--size-mb 1024] [--runs 3] [--keep FILE]

The log is synthetic but shaped like a LLaMA-Factory run (loss dicts, tqdm bars, DeepSpeed and NCCL info lines)
with a real failure at the end. Both sides run as fresh processes on one core (taskset when present) after a
warm-up that puts the file in the page cache; peak memory is the child's maximum RSS.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

_TAIL = ("[2025-02-09 07:12:21,000] [ERROR] [launch.py:321:sigkill_handler] ['python', '-u', 'train.py', "
         "'--local_rank=0'] exits with return code = -9\n")


def make_log(path: str, size_mb: int) -> None:
    rng = random.Random(1)
    lines = []
    for i in range(2000):
        lines.append(f"[INFO|2025-02-09 07:05:{i % 60:02d}] llamafactory.train.callbacks:157 >> {{'loss': "
                     f"{rng.random():.4f}, 'learning_rate': 1.9999e-05, 'epoch': {i / 1000:.2f}}}\n")
        lines.append(f"{{'loss': 1.0802, 'grad_norm': {rng.random() * 2:.16f}, 'learning_rate': 1.99e-05}}\n")
        lines.append(f"  6%|█████▉                                   | {i}/625 [47:47<13:21:36, 81.52s/it]\n")
        lines.append(f"[2025-02-09 07:05:39,123] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0\n")
        lines.append(f"[rank3]:[W209 07:05:39.{i:09d} ProcessGroupNCCL.cpp:4115] Warning: "
                     "TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives.\n")
    block = "".join(lines).encode()
    with open(path, "wb") as handle:
        written = 0
        while written < size_mb << 20:
            handle.write(block)
            written += len(block)
        handle.write(_TAIL.encode())


_WRAP = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
         "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
         "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")


def timed(argv: list[str], runs: int) -> tuple[float, float]:
    walls, peaks = [], []
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _WRAP, *pin, *argv], capture_output=True, text=True, check=True)
        wall, peak = out.stdout.split()
        walls.append(float(wall))
        peaks.append(float(peak))
    return statistics.median(walls), max(peaks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="write (or reuse) the log at this path")
    args = parser.parse_args()
    path = args.keep or os.path.join(tempfile.mkdtemp(prefix="envcheck-bench-"), "train.log")
    if not os.path.exists(path):
        make_log(path, args.size_mb)
    size = os.path.getsize(path)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from envcheck.matrix import load_matrix

    patterns = [s.pattern for s in load_matrix().signatures]
    pattern_file = path + ".patterns"
    with open(pattern_file, "w", encoding="utf-8") as handle:  # grep -E spells \d and \s differently
        handle.write("\n".join(p.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\S", "[^[:space:]]")
                               .replace(r"\w", "[[:alnum:]_]").replace(r"\b", "") for p in patterns) + "\n")
    envcheck = [sys.executable, "-m", "envcheck", "diagnose", "--offline", "--json", path]
    grep = ["grep", "-E", "-n", "-f", pattern_file, path]
    for argv in (envcheck, grep):  # warm the page cache
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours, ours_mem = timed(envcheck, args.runs)
    theirs, theirs_mem = timed(grep, args.runs)
    print(f"log: {size / 1e6:.0f} MB, {len(patterns)} signatures, median of {args.runs} runs, one core")
    print(f"{'command':<34} {'s':>7} {'MB/s':>8} {'peak MiB':>9}")
    print(f"{'envcheck diagnose':<34} {ours:7.2f} {size / ours / 1e6:8.0f} {ours_mem:9.1f}")
    print(f"{'grep -E -f signatures':<34} {theirs:7.2f} {size / theirs / 1e6:8.0f} {theirs_mem:9.1f}")
    print(f"ratio (grep time / envcheck time): {theirs / ours:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
