"""`envcheck diagnose` scan speed and memory vs `grep -E` over the same signatures, on a 1 GB training log.

Usage: python benchmarks/bench_diagnose.py [--size-mb 1024] [--runs 3] [--keep FILE] [--shape NAME|all]

Shapes: `benchmark` (below), `trainer` (dense `{'loss': ...}` and `[INFO|trainer.py:N]` lines), `ranks` (eight ranks'
stdout interleaved, `[rankN]:` prefixes, NCCL INFO lines), `tracebacks` (repeated two-line traceback headers). Each
is timed with Hyperscan (when installed), without it (ENVCHECK_NO_HYPERSCAN=1), and against grep.

The log is synthetic but shaped like a LLaMA-Factory run (loss dicts, tqdm bars, DeepSpeed and NCCL info lines)
with a real failure at the end. Both sides run as fresh processes on one core (taskset when present) after a
warm-up that puts the file in the page cache and lets Python write its bytecode cache (as an installed package
has it); peak memory is the child's maximum RSS. Every shape has the same size; `--issue-case` also times the
issue's 100,000 repeated two-line traceback headers (7 MB) and an empty-ish log (the start-up alone).
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


def _write_repeated(path: str, block: bytes, size_mb: int) -> None:
    """BLOCK repeated to SIZE_MB, then the launcher's -9 line: the failure at the end of every shape."""
    with open(path, "wb") as handle:
        written = 0
        while written < size_mb << 20:
            handle.write(block)
            written += len(block)
        handle.write(_TAIL.encode())


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
    _write_repeated(path, "".join(lines).encode(), size_mb)


def make_shape(path: str, size_mb: int, shape: str) -> None:
    if shape == "benchmark":
        make_log(path, size_mb)
        return
    rng = random.Random(2)
    lines = []
    for i in range(4000):
        if shape == "trainer":
            lines.append(f"{{'loss': {rng.random() * 3:.4f}, 'grad_norm': {rng.random() * 5:.6f}, 'learning_rate': "
                         f"{rng.random() * 1e-4:.4e}, 'epoch': {i / 400:.2f}}}\n")
            lines.append(f"[INFO|trainer.py:{rng.randint(100, 4000)}] 2025-02-09 07:05:{i % 60:02d},{i % 1000:03d} >> "
                         f"***** Running training ***** step {i}\n")
        elif shape == "ranks":
            r = i % 8
            lines.append(f"[rank{r}]: {{'loss': {rng.random() * 3:.4f}, 'learning_rate': 2e-05, 'epoch': {i / 400:.2f}}}\n")
            lines.append(f"node{r // 4}:{1000 + r}:{2000 + r} [{r % 4}] NCCL INFO Channel {i % 16:02d}/0 : {r}[{r}] -> "
                         f"{(r + 1) % 8}[{(r + 1) % 8}] via P2P/IPC/read\n")
            lines.append(f"[rank{r}]:[W209 07:05:39.{i:09d} ProcessGroupNCCL.cpp:4115] Warning: "
                         "TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives.\n")
        else:
            lines.append("Traceback (most recent call last):\n")
            lines.append(f'  File "train.py", line {i}, in <module>\n')
    _write_repeated(path, "".join(lines).encode(), size_mb)


_WRAP = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
         "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
         "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")


def _env(**extra: str) -> dict[str, str]:
    """The children's environment: bytecode written and used (PYTHONDONTWRITEBYTECODE would recompile every
    module of every run, about 0.1 s, which no installed envcheck pays)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def timed(argv: list[str], runs: int, env: dict[str, str] | None = None) -> tuple[float, float]:
    walls, peaks = [], []
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _WRAP, *pin, *argv], capture_output=True, text=True, check=True,
                             env=env)
        wall, peak = out.stdout.split()
        walls.append(float(wall))
        peaks.append(float(peak))
    return statistics.median(walls), max(peaks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="write (or reuse) the log at this path (a shape name is added for --shape all)")
    parser.add_argument("--shape", default="benchmark", choices=("benchmark", "trainer", "ranks", "tracebacks", "all"))
    parser.add_argument("--issue-case", action="store_true",
                        help="also time issue 17's 7 MB log of 100,000 traceback headers and the start-up alone")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from envcheck.matrix import load_matrix

    patterns = [s.pattern for s in load_matrix().signatures]
    folder = tempfile.mkdtemp(prefix="envcheck-bench-")
    pattern_file = os.path.join(folder, "signatures.patterns")
    with open(pattern_file, "w", encoding="utf-8") as handle:  # grep -E spells \d and \s differently
        handle.write("\n".join(p.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\S", "[^[:space:]]")
                               .replace(r"\w", "[[:alnum:]_]").replace(r"\b", "") for p in patterns) + "\n")
    shapes = ("benchmark", "trainer", "ranks", "tracebacks") if args.shape == "all" else (args.shape,)
    print(f"{len(patterns)} signatures, median of {args.runs} runs, one core (taskset -c 0), page cache warm")
    print("| shape | MB | envcheck MB/s (Hyperscan) | envcheck MB/s (re) | grep -E -f MB/s | peak MiB (ours, grep) "
          "| ours/grep |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for shape in shapes:
        path = args.keep if args.keep and len(shapes) == 1 else os.path.join(args.keep or folder, f"{shape}.log") \
            if args.keep and os.path.isdir(args.keep) else os.path.join(folder, f"{shape}.log")
        if not os.path.exists(path):
            make_shape(path, args.size_mb, shape)
            os.sync()  # a freshly written log is still being written back to disk: that I/O is not the scan's
        size = os.path.getsize(path)
        envcheck = [sys.executable, "-m", "envcheck", "diagnose", "--offline", "--json", path]
        grep = ["grep", "-E", "-n", "-f", pattern_file, path]
        plain = _env(ENVCHECK_NO_HYPERSCAN="1")
        for argv in (envcheck, grep):  # warm the page cache (and write the bytecode)
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        fast, fast_mem = timed(envcheck, args.runs, _env())
        slow, slow_mem = timed(envcheck, args.runs, plain)
        theirs, theirs_mem = timed(grep, args.runs)
        print(f"| {shape} | {size / 1e6:.0f} | {size / fast / 1e6:.0f} | {size / slow / 1e6:.0f} | "
              f"{size / theirs / 1e6:.0f} | {max(fast_mem, slow_mem):.0f}, {theirs_mem:.0f} | {theirs / fast:.2f} |")
    if args.issue_case:
        case = os.path.join(folder, "issue-17-tracebacks.log")
        with open(case, "wb") as handle:  # the issue's log: 100,000 repeated two-line traceback headers
            handle.write(b'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n' * 100_000)
        tiny = os.path.join(folder, "tiny.log")
        with open(tiny, "wb") as handle:
            handle.write(_TAIL.encode())
        for name, path in (("issue 17's 100,000 traceback headers", case), ("start-up (a one-line log)", tiny)):
            argv = [sys.executable, "-m", "envcheck", "diagnose", "--offline", "--json", path]
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
            fast, _ = timed(argv, args.runs, _env())
            slow, _ = timed(argv, args.runs, _env(ENVCHECK_NO_HYPERSCAN="1"))
            print(f"{name}: {os.path.getsize(path) / 1e6:.1f} MB in {fast:.2f} s (Hyperscan), {slow:.2f} s (re)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
