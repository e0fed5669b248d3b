"""Top-1 accuracy of `envcheck diagnose` on one split of the labelled corpus (tests/assets/diagnose/corpus/).

Usage: python benchmarks/diagnose_accuracy.py [--split dev|test|all] [--corpus DIR] [--misses] [--judged] [--json]

For each `[[log]]` of labels.toml in the split: the primary cause `diagnose` names (offline: only the log) against
the label, the `library` it names against the label's (when the label names one), per-cause precision/recall and
a confusion table (label -> predicted). Beside it, a 14-regex toy: OUR RECONSTRUCTION of the baseline issue 17
quotes (one regex per common cause, first match in the log wins, in the order below); it is not the original.
`--judged` adds how the logs read against what their lines show: the corpus's judged.tsv holds two blind judges'
verdicts per log (shown, hinted, not_shown; benchmarks/diagnose_ceiling_brief.md), and the table counts the logs
read right and wrong for each pair of verdicts. While tuning, run only `--split dev` (the default): `test` is the
held-out half, measured by the lead only (benchmarks/README.md lists every measurement).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(HERE, "tests", "assets", "diagnose", "corpus")

# Our reconstruction of "a 14-regex toy" (issue 17): the most common message of each cause, first match wins.
TOY = [
    ("gpu_oom", r"CUDA out of memory|OutOfMemoryError"),
    ("host_oom", r"return code = -9|exitcode\s*:\s*-9|Killed"),
    ("segfault_abi_mismatch", r"undefined symbol"),
    ("segfault_other", r"Segmentation fault|SIGSEGV|exitcode\s*:\s*-11"),
    ("cuda_arch_unsupported", r"no kernel image is available|not compatible with the current PyTorch|"
                              r"Unsupported gpu architecture"),
    ("driver_too_old", r"driver on your system is too old|CUDA driver version is insufficient"),
    ("cuda_toolkit_mismatch", r"mismatches the version that was used to compile PyTorch"),
    ("missing_cuda_library", r"cannot open shared object file|cannot find -l"),
    ("nccl_timeout", r"Watchdog caught collective operation timeout|NCCL.*[Tt]imeout"),
    ("nccl_error", r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError"),
    ("shm_too_small", r"/dev/shm|Bus error|shared memory"),
    ("numpy_abi", r"compiled using NumPy 1\.x|numpy\.core\.multiarray failed to import|np\.\w+` was removed"),
    ("torch_cpu_only", r"Torch not compiled with CUDA enabled"),
    ("deepspeed_build_failure", r"Error building extension"),
]
_TOY = [(cause, re.compile(pattern)) for cause, pattern in TOY]


def toy(text: str) -> str:
    first: tuple[int, str] | None = None
    for cause, regex in _TOY:
        found = regex.search(text)
        if found and (first is None or found.start() < first[0]):
            first = (found.start(), cause)
    return first[1] if first else "unknown"


def _dotted(name: str) -> str:
    """NAME in lower case without its shared-library suffix and an extension's ABI tag: the dotted module name."""
    return re.sub(r"\.(?:cpython-[^.]*|abi3)$", "", name.lower().split(".so")[0])


def _lib(name: str) -> str:
    """libcublasLt.so.11 and libcublasLt name one library; torch-scatter and torch_scatter one distribution (PEP
    503 normalises runs of '-', '_' and '.'); an extension's ABI tag (.cpython-38-x86_64-linux-gnu, .abi3) and the
    hash auditwheel gives a vendored copy (libcudart.7ec1eba6.so.12) name no other library, nor does the "lib" of a
    shared library's file name (ld's -lcurand and libcurand.so are curand)."""
    base = re.sub(r"^lib(?=[a-z])", "", _dotted(name))
    # DeepSpeed's op and the module setup.py builds it as (deepspeed_ccl_comm, deepspeed.ops.comm.deepspeed_ccl_comm_op)
    return re.sub(r"-op$", "", re.sub(r"[-_.]+", "-", re.sub(r"[.-][0-9a-f]{8}$", "", base)))


def same_library(named: str, label: str) -> bool:
    """Whether NAMED is the label's library: the same name, or one is a dotted module of the other (torch._C and the
    _C extension of torch; torch_scatter and its torch_scatter._version_cuda)."""
    a, b = _lib(named), _lib(label)
    if not a or not b:
        return a == b
    if a == b:
        return True
    parts_a, parts_b = _dotted(named).split("."), _dotted(label).split(".")
    return (len(parts_a) != len(parts_b)) and (
        _lib(parts_a[0]) == _lib(parts_b[0]) or _lib(parts_a[-1]) == _lib(parts_b[-1]))


def shown(label: str, text: str) -> bool:
    """Whether the log names the label's library at all (the issue asks for it "whenever the log shows it")."""
    stem = _lib(label)
    return bool(stem) and stem in re.sub(r"[-_.]+", "-", text.lower())


def load(corpus: str, split: str) -> list[dict]:
    import tomllib

    with open(os.path.join(corpus, "labels.toml"), "rb") as handle:
        logs = tomllib.load(handle).get("log", [])
    return [entry for entry in logs if split == "all" or entry.get("split") == split]


def ours(path: str) -> tuple[str, str]:
    from envcheck.diagnose.engine import Request, diagnose

    result = diagnose(Request(logs=(path,), system=False))
    if not result.causes:
        return "unknown", ""
    return result.causes[0].cause, getattr(result.causes[0], "library", "") or ""


JUDGED_ORDER = ("both shown", "shown+hinted", "shown+not_shown", "both hinted", "hinted+not_shown", "both not_shown")


def judged(corpus: str) -> dict[str, str]:
    """id -> the pair of verdicts judged.tsv holds for it ("both shown", "shown+hinted", ...); {} without the file."""
    path = os.path.join(corpus, "judged.tsv")
    if not os.path.exists(path):
        return {}
    pairs = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#") or line.startswith("id\t"):
                continue
            log_id, *verdicts = line.rstrip("\n").split("\t")
            if len(verdicts) != 2 or not set(verdicts) <= {"shown", "hinted", "not_shown"}:
                continue  # a blank or malformed row counts in no pair
            a, b = sorted(verdicts, key=("shown", "hinted", "not_shown").index)
            pairs[log_id] = f"both {a}" if a == b else f"{a}+{b}"
    return pairs


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion: how far the top-1 figure of n logs may be from the rate on all
    logs like them (it stays inside [0, 1] and is honest at small n, unlike the normal approximation)."""
    if not n:
        return 0.0, 0.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(centre - half, 3), round(centre + half, 3)


def score(rows: list[tuple[str, str]]) -> dict:
    """rows: (label, predicted) -> accuracy, per-cause precision/recall, confusion."""
    hits = sum(1 for label, got in rows if label == got)
    per: dict[str, dict[str, float]] = {}
    for cause in sorted({c for row in rows for c in row}):
        tp = sum(1 for label, got in rows if label == got == cause)
        predicted = sum(1 for _, got in rows if got == cause)
        actual = sum(1 for label, _ in rows if label == cause)
        per[cause] = {"support": actual, "precision": round(tp / predicted, 3) if predicted else 0.0,
                      "recall": round(tp / actual, 3) if actual else 0.0}
    confusion: dict[str, dict[str, int]] = defaultdict(dict)
    for (label, got), n in Counter(rows).items():
        confusion[label][got] = n
    return {"n": len(rows), "correct": hits, "accuracy": round(hits / len(rows), 3) if rows else 0.0,
            "interval_95": list(wilson(hits, len(rows))), "per_cause": per, "confusion": dict(confusion)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--misses", action="store_true", help="list each log whose primary cause is wrong")
    parser.add_argument("--judged", action="store_true", help="cross the results with judged.tsv's verdicts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    entries = load(args.corpus, args.split)
    if not entries:
        print(f"no logs in split {args.split!r}", file=sys.stderr)
        return 2
    mine, baseline, library, misses = [], [], [0, 0, 0, 0], []
    verdicts, crossed = judged(args.corpus) if args.judged else {}, Counter()
    for entry in entries:
        path = os.path.join(args.corpus, entry["file"])
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        cause, lib = ours(path)
        mine.append((entry["cause"], cause))
        if entry["id"] in verdicts:
            crossed[(verdicts[entry["id"]], cause == entry["cause"])] += 1
        baseline.append((entry["cause"], toy(text)))
        right = same_library(lib, entry.get("library", ""))
        if entry.get("library"):
            library[1] += 1
            library[0] += int(right)
            if shown(entry["library"], text):
                library[3] += 1
                library[2] += int(right)
        if cause != entry["cause"] or (entry.get("library") and not right):
            misses.append((entry["id"], entry["cause"], cause, entry.get("library", ""), lib))
    report = {"split": args.split, "envcheck": score(mine), "toy_reconstruction": score(baseline),
              "library": {"labelled": library[1], "named_right": library[0], "shown_in_log": library[3],
                          "shown_named_right": library[2]}}
    if args.judged:
        report["judged"] = {pair: {"right": crossed[(pair, True)], "wrong": crossed[(pair, False)]}
                            for pair in JUDGED_ORDER}
    if args.json:
        print(json.dumps(report, indent=1, sort_keys=True))
        return 0
    e, t = report["envcheck"], report["toy_reconstruction"]
    print(f"split {args.split}: {e['n']} logs")
    low, high = e["interval_95"]
    print(f"envcheck diagnose top-1: {e['correct']}/{e['n']} = {e['accuracy']:.0%} "
          f"(95 % interval {low:.0%}-{high:.0%})")
    print(f"14-regex toy (our reconstruction): {t['correct']}/{t['n']} = {t['accuracy']:.0%}")
    print(f"library named right: {library[0]}/{library[1]} (of those the log names: {library[2]}/{library[3]})")
    print(f"\n{'cause':<24} {'support':>7} {'precision':>9} {'recall':>6}   (envcheck)")
    for cause, row in e["per_cause"].items():
        print(f"{cause:<24} {row['support']:>7} {row['precision']:>9.2f} {row['recall']:>6.2f}")
    print("\nconfusion (label -> predicted: count), envcheck:")
    for label, row in sorted(e["confusion"].items()):
        print(f"  {label:<24} " + ", ".join(f"{got}: {n}" for got, n in sorted(row.items(), key=lambda x: -x[1])))
    if args.judged:
        print("\nwhat the lines show (judged.tsv, two blind judges) -> read right, wrong:")
        for pair in JUDGED_ORDER:
            print(f"  {pair:<18} {crossed[(pair, True)]:>4} {crossed[(pair, False)]:>4}")
    if args.misses:
        print("\nmisses (id, label, predicted, label library, named library):")
        for miss in misses:
            print("  " + " | ".join(miss))
    return 0


if __name__ == "__main__":
    sys.exit(main())
