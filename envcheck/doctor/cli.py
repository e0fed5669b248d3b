"""`envcheck doctor`: the CLI layer. Parsing is cheap; the checks, formats and matrix load when it runs."""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from envcheck.errors import UsageError
from envcheck.helptext import help_kwargs
from envcheck.probes.cli import add_probe_options, capture_snapshot, start

NAME = "doctor"



def finding_prefixes(text: str) -> tuple[str, ...]:
    items = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    for item in items:
        if not item.startswith("EC") or not item[2:].isdigit() and item != "EC":
            raise argparse.ArgumentTypeError(f"{item!r} is not a finding id prefix such as EC3 or EC301")
    return items


def add_report_options(parser: argparse.ArgumentParser, json_doc: str) -> None:
    """--fail-on, --select/--ignore and --json/--format, as every command that reports findings takes them."""
    parser.add_argument("--fail-on", default="error", choices=("info", "warning", "error", "fatal"),
                        help="exit 1 when a finding is at or above this severity (default: error)")
    parser.add_argument("--select", type=finding_prefixes, default=(), metavar="PREFIXES",
                        help="only findings whose id starts with one of these (comma-separated, e.g. EC3,EC101)")
    parser.add_argument("--ignore", type=finding_prefixes, default=(), metavar="PREFIXES",
                        help="drop findings whose id starts with one of these")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_const", const="json", dest="format",
                        help=f"one JSON document on stdout ({json_doc})")
    output.add_argument("--format", choices=("text", "json", "markdown"), default=None, help="report format")


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    parser = subparsers.add_parser(NAME, help="probe (or read a snapshot), check, and report", **help_kwargs(
        "Examine the active Python environment and this machine (driver, GPUs, CUDA toolkits, torch, DeepSpeed and "
        "compiled extensions) against envcheck's sourced compatibility matrix, and report each problem with its "
        "evidence and an exact fix. The first line of the report says which environment was examined and why. JSON "
        "output: docs/doctor-json.md; finding ids: README.md.",
        ("envcheck doctor                                  # the active venv / conda env",
         "envcheck doctor --python ~/envs/train/bin/python # another environment",
         "envcheck doctor --snapshot node17.json --json    # judge a recorded snapshot",
         "envcheck doctor --fail-on warning --ignore EC104 # a CI gate"),
        (("0", "nothing at or above --fail-on (default: error)"), ("1", "findings at or above --fail-on"))))
    add_probe_options(parser)
    parser.add_argument("--snapshot", metavar="FILE", help="judge this snapshot instead of probing")
    add_report_options(parser, "docs/doctor-json.md")
    parser.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR instead of the bundled one")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text report (default: only on a terminal)")


def _warn_unknown_prefixes(select: tuple[str, ...], ignore: tuple[str, ...]) -> None:
    from envcheck.checks import known_ids

    ids = known_ids()
    for flag, prefixes in (("--select", select), ("--ignore", ignore)):
        for prefix in prefixes:
            if not any(finding_id.startswith(prefix) for finding_id in ids):
                print(f"envcheck: warning: {flag} {prefix} matches no finding id envcheck knows "
                      "(see the table in README.md)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.snapshot and (args.python or args.deep):
        raise UsageError("--snapshot judges a recorded snapshot; it cannot be combined with --python or --deep")
    started = None if args.snapshot else start(args)
    from envcheck.checks import run_checks, selected
    from envcheck.checks.meta import matrix_unusable
    from envcheck.checks.model import Severity
    from envcheck.formats import render_json, render_markdown, render_text
    from envcheck.matrix import MatrixError, load_matrix
    from envcheck.report import Report
    from envcheck.snapshot import load_snapshot

    if args.select or args.ignore:  # importing every check to know their ids costs start-up time: only when asked
        _warn_unknown_prefixes(args.select, args.ignore)
    # Parsing the matrix is pure Python; probing mostly waits on child processes: overlap the two.
    with ThreadPoolExecutor(max_workers=1) as pool:
        matrix_job = pool.submit(load_matrix, args.matrix)
        snapshot = load_snapshot(args.snapshot) if args.snapshot else capture_snapshot(args, started)
        matrix_problem = None
        try:
            matrix = matrix_job.result()
        except MatrixError as error:
            if args.matrix:
                raise  # the user's own matrix: their input, exit 2
            matrix, matrix_problem = None, str(error)  # a damaged install must not cost the matrix-free checks
    every = run_checks(snapshot, matrix)
    if matrix_problem:
        every = sorted([*every, matrix_unusable(matrix_problem)], key=lambda f: f.sort_key())
    findings = [f for f in every if f.id == "EC900" or selected(f.id, args.select, args.ignore)]
    report = Report(snapshot, tuple(findings), matrix.data_version if matrix else None,
                    hidden=len(every) - len(findings))
    fmt = args.format or "text"
    if fmt == "json":
        sys.stdout.write(render_json(report))
    elif fmt == "markdown":
        sys.stdout.write(render_markdown(report))
    else:
        colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
        sys.stdout.write(render_text(report, colour=colour))
    return 1 if report.fails(Severity.parse(args.fail_on)) else 0
