"""`envcheck ckpt` read speed (GB/s) and memory vs `sha256sum` over the same checkpoint files.

Usage: python benchmarks/bench_ckpt.py [--size-gb 4] [--runs 3] [--keep DIR]

Writes an HF Trainer checkpoint-N shaped like a real one (model.safetensors with a valid header, optimizer.pt as
a STORED zip like torch.save writes, scheduler.pt, rng_state.pth, trainer_state.json), about 1/3 weights and 2/3
optimizer state, then times, as fresh processes with the page cache warm:
  envcheck ckpt verify DIR --json          (safetensors header + every zip CRC: reads the .pt files)
  envcheck ckpt verify DIR --deep --json   (sha256 of every byte + CRCs, one pass per file)
  sha256sum FILES                          (coreutils, one process, one file after another)
  xargs -P N sha256sum                     (one sha256sum per file, N = cores, the fair parallel peer)
GB/s is bytes read over wall time; GB/CPU-s is bytes over the CPU time of every process the command started, which
other load on the machine does not change. Peak memory is the largest resident set of any child.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import zipfile

_WRAP = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
         "subprocess.run(sys.argv[1], shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
         "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)\n")
_BLOCK = os.urandom(1 << 20)


def _fill(handle, size: int) -> None:  # type: ignore[no-untyped-def]
    while size > 0:
        handle.write(_BLOCK[:min(size, len(_BLOCK))])
        size -= len(_BLOCK)


def make_checkpoint(root: str, size_gb: float) -> str:
    ckpt = os.path.join(root, "checkpoint-1000")
    os.makedirs(ckpt, exist_ok=True)
    total = int(size_gb * 1e9)
    weights, tensor = total // 3, 64 << 20
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    count = max(1, weights // tensor)
    for i in range(count):
        header[f"layer.{i}.weight"] = {"dtype": "BF16", "shape": [tensor // 2], "data_offsets": [i * tensor,
                                                                                              (i + 1) * tensor]}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(os.path.join(ckpt, "model.safetensors"), "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        _fill(handle, count * tensor)
    records = max(1, (total - weights) // tensor)
    with zipfile.ZipFile(os.path.join(ckpt, "optimizer.pt"), "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("optimizer/data.pkl", pickle.dumps({"state": {}, "param_groups": []}, protocol=2))
        for i in range(records):
            with archive.open(f"optimizer/data/{i}", "w", force_zip64=True) as member:
                _fill(member, tensor)
        archive.writestr("optimizer/version", "3\n")
    for name in ("scheduler.pt", "rng_state.pth"):
        with zipfile.ZipFile(os.path.join(ckpt, name), "w", zipfile.ZIP_STORED) as archive:
            archive.writestr(f"{name.split('.')[0]}/data.pkl", pickle.dumps({"last_epoch": 1000}, protocol=2))
    for name, body in (("trainer_state.json", {"global_step": 1000}), ("config.json", {"model_type": "llama"})):
        with open(os.path.join(ckpt, name), "w", encoding="utf-8") as handle:
            json.dump(body, handle)
    return ckpt


def timed(command: str, runs: int) -> tuple[float, float, float]:
    """(median wall s, median CPU s of every process it started, peak MiB)."""
    walls, cpus, peaks = [], [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _WRAP, command], capture_output=True, text=True, check=True)
        wall, cpu, peak = out.stdout.split()
        walls.append(float(wall))
        cpus.append(float(cpu))
        peaks.append(float(peak))
    return statistics.median(walls), statistics.median(cpus), max(peaks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="write (or reuse) the checkpoint under this directory")
    args = parser.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="envcheck-bench-ckpt-")
    ckpt = os.path.join(root, "checkpoint-1000")
    if not os.path.isdir(ckpt):
        make_checkpoint(root, args.size_gb)
    files = sorted(os.path.join(ckpt, n) for n in os.listdir(ckpt) if not n.startswith("ENVCHECK"))
    size = sum(os.path.getsize(f) for f in files)
    quoted = " ".join(f"'{f}'" for f in files)
    envcheck = f"'{sys.executable}' -m envcheck ckpt verify '{ckpt}' --json"
    cores = os.cpu_count() or 1
    commands = [("envcheck ckpt verify", envcheck, 0), ("envcheck ckpt verify --deep", envcheck + " --deep", 0),
                ("sha256sum FILES", f"sha256sum {quoted}", 0),
                (f"xargs -P {cores} sha256sum", f"printf '%s\\n' {quoted} | xargs -P {cores} -n 1 sha256sum", 0)]
    for _, command, _ in commands:  # warm the page cache and check every command works
        subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    optim = os.path.getsize(os.path.join(ckpt, "optimizer.pt"))
    print(f"checkpoint: {size / 1e9:.2f} GB in {len(files)} files ({optim / 1e9:.2f} GB in optimizer.pt), "
          f"median of {args.runs} runs, page cache warm, {cores} cores")
    print(f"{'command':<30} {'wall s':>7} {'GB/s':>7} {'CPU s':>7} {'GB/CPU-s':>9} {'peak MiB':>9}")
    for label, command, _ in commands:
        wall, cpu, peak = timed(command, args.runs)
        read = optim if label == "envcheck ckpt verify" else size
        print(f"{label:<30} {wall:7.2f} {read / wall / 1e9:7.2f} {cpu:7.2f} {read / cpu / 1e9:9.2f} {peak:9.1f}"
              + ("   (reads the .pt files only)" if read != size else ""))
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
