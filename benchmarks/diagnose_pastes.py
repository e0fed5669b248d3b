"""The same logs as users paste or collect them: how many keep their cause (envcheck diagnose, offline).

Usage: python benchmarks/diagnose_pastes.py [--only NAME ...] [--json]

Every log of the corpus's dev half (tests/assets/diagnose/corpus) and of the evident set (tests/assets/diagnose/
evident) whose cause `diagnose` names right as it is, changed in one of the ways below, each line or the whole log;
the count is how many still read their labelled cause. Beside it, the same changes read by the 14-regex toy of
diagnose_accuracy.py (its share of the logs it read right as they were), which is what a grep over a log's lines
would do. Only the dev half and the evident set: the test half stays held out.

The changes, each one a real way a log reaches a user's clipboard or disk:
- quoted, indented: an e-mail's or an issue's '> ', a Markdown code block's four spaces;
- wrapped at 80 / 120: a console that cuts lines at its width (Windows' console, tmux) when copied;
- colour codes without ESC: GitHub keeps '[31m' when the ESC byte is dropped; '<-[31m' as Windows' console copies it;
- no-break spaces, curled quotes: a rich-text editor's (chat, wiki, word processor) spaces and quotes;
- CRLF: saved on Windows;
- HTML-escaped: a page's source or a JUnit XML report (pytest --junitxml) holds '&lt;', '&quot;', '&#x27;';
- journald, a wrapper's '[date time] ', docker -t, CRI: a collector's stamp before every line, changing from line to
  line (a second each, a microsecond part that changes); Python logging's and glog's stamps with a level: the level
  stays when the second reading takes a stamp off (rules leave a logger's INFO and WARNING lines out by it), so a
  shell's or compiler's line under a logger's ERROR level is a logger's message, as it would be;
- no final newline: saved by an editor or `echo -n`.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import tempfile
import tomllib
from typing import Callable

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(HERE, "tests", "assets", "diagnose")
sys.path.insert(0, os.path.join(HERE, "benchmarks"))


def _each(make: Callable[[int, str], str]) -> Callable[[str], str]:
    return lambda text: "".join(make(i, line) + "\n" for i, line in enumerate(text.splitlines()))


def _wrap(width: int) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        out = []
        for line in text.splitlines():
            while len(line) > width:
                out.append(line[:width])
                line = line[width:]
            out.append(line)
        return "\n".join(out) + "\n"
    return wrap


def _micro(i: int) -> str:
    return f"{i * 7919 % 10**6:06d}"


CHANGES: dict[str, Callable[[str], str]] = {
    "quoted": _each(lambda i, line: "> " + line),
    "indented": _each(lambda i, line: "    " + line),
    "wrapped at 80": _wrap(80),
    "wrapped at 120": _wrap(120),
    "colour codes without ESC": _each(lambda i, line: f"[1;31m{line}[0m"),
    "colour codes as Windows copies them": _each(lambda i, line: f"\u2190[33m{line}\u2190[0m"),
    "no-break spaces": lambda text: text.replace(" ", "\u00a0"),
    "curled quotes": lambda text: re.sub(r"'([^'\n]*)'", "\u2018\\1\u2019", text).replace('"', "\u201d"),
    "CRLF": lambda text: text.replace("\n", "\r\n"),
    "HTML-escaped": html.escape,
    "journald stamps": _each(lambda i, line: f"Dec 04 01:02:{i % 60:02d} gpu-node07 python[1234]: {line}"),
    "a wrapper's stamps": _each(lambda i, line: f"[2024-05-01 10:00:{i % 60:02d}] {line}"),
    "Python logging stamps and level": _each(
        lambda i, line: f"2024-05-01 10:00:{i % 60:02d},{i * 7 % 1000:03d} - ERROR - {line}"),
    "docker logs -t stamps": _each(lambda i, line: f"2024-05-01T10:00:{i % 60:02d}.{_micro(i)}789Z {line}"),
    "CRI stamps": _each(lambda i, line: f"2024-05-01T10:00:{i % 60:02d}.{_micro(i)}789Z stderr F {line}"),
    "glog stamps": _each(lambda i, line: f"E0501 10:00:{i % 60:02d}.{_micro(i)} 12345 main.cc:42] {line}"),
    "no final newline": lambda text: text.rstrip("\n"),
}


def _logs() -> list[tuple[str, str, str]]:
    """(id, path, cause) of every dev log and evident log."""
    logs = []
    for folder, split in (("corpus", "dev"), ("evident", "evident")):
        with open(os.path.join(ASSETS, folder, "labels.toml"), "rb") as handle:
            for entry in tomllib.load(handle)["log"]:
                if entry.get("split") == split:
                    logs.append((entry["id"], os.path.join(ASSETS, folder, entry["file"]), entry["cause"]))
    return logs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(CHANGES), help="only these changes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from diagnose_accuracy import ours, toy

    right, toy_right = [], []
    for log_id, path, cause in _logs():
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if ours(path)[0] == cause:
            right.append((log_id, text, cause))
        if toy(text) == cause:
            toy_right.append((log_id, text, cause))
    rows = []
    with tempfile.TemporaryDirectory(prefix="envcheck-pastes-") as folder:
        changed = os.path.join(folder, "pasted.log")
        for name in args.only or CHANGES:
            change = CHANGES[name]
            kept, missed = 0, []
            for log_id, text, cause in right:
                with open(changed, "w", encoding="utf-8", newline="") as handle:
                    handle.write(change(text))
                if ours(changed)[0] == cause:
                    kept += 1
                else:
                    missed.append(log_id)
            toy_kept = sum(1 for _, text, cause in toy_right if toy(change(text)) == cause)
            rows.append({"change": name, "kept": kept, "of": len(right), "toy_kept": toy_kept, "toy_of": len(toy_right),
                         "missed": missed})
            if not args.json:
                print(f"| {name} | {kept}/{len(right)} | {toy_kept}/{len(toy_right)} |", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
