"""Command line: one small function per subcommand, and the exit-code contract of CONTRACT.md.

0 ran clean; 1 findings at or above --fail-on; 2 usage error or unusable input (one line, no traceback);
3 internal error (a short message and the path of a crash report). Only this module prints or exits.
"""

from __future__ import annotations

import argparse
import datetime
import errno
from concurrent.futures import ThreadPoolExecutor
import os
import sys
import tempfile
import traceback
from typing import Callable, NoReturn, Sequence

from envcheck import __version__
from envcheck.errors import EnvcheckError, UsageError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit 2, never a usage dump on stderr."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _prefixes(text: str) -> tuple[str, ...]:
    items = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    for item in items:
        if not item.startswith("EC") or not item[2:].isdigit() and item != "EC":
            raise argparse.ArgumentTypeError(f"{item!r} is not a finding id prefix such as EC3 or EC301")
    return items


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 seconds")
    return value


def _add_probe_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--python", metavar="PATH", help="probe this interpreter's environment (a venv or conda "
                                                         "env's python) instead of envcheck's own")
    deep = parser.add_mutually_exclusive_group()
    deep.add_argument("--deep", dest="deep", action="store_true", default=None,
                      help="import torch and compiled extensions in child processes (default: when a GPU is present)")
    deep.add_argument("--no-deep", dest="deep", action="store_false", help="never import anything")
    parser.add_argument("--import-timeout", type=_positive_seconds, default=60.0, metavar="SECONDS",
                        help="time limit for each child import (default 60)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="envcheck", description="Find and explain the environment problems that kill GPU "
                                                  "fine-tuning runs.")
    parser.add_argument("--version", action="version", version=f"envcheck {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    probe = commands.add_parser("probe", help="capture a snapshot of this machine as JSON")
    _add_probe_options(probe)
    probe.add_argument("-o", "--output", metavar="FILE", help="write the snapshot to FILE instead of stdout")
    probe.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    probe.add_argument("--json", action="store_true", help="accepted for symmetry: the snapshot is always JSON")

    doctor = commands.add_parser("doctor", help="probe (or read a snapshot), check, and report")
    _add_probe_options(doctor)
    doctor.add_argument("--snapshot", metavar="FILE", help="judge this snapshot instead of probing")
    doctor.add_argument("--fail-on", default="error", choices=("info", "warning", "error", "fatal"),
                        help="exit 1 when a finding is at or above this severity (default: error)")
    doctor.add_argument("--select", type=_prefixes, default=(), metavar="PREFIXES",
                        help="only findings whose id starts with one of these (comma-separated, e.g. EC3,EC101)")
    doctor.add_argument("--ignore", type=_prefixes, default=(), metavar="PREFIXES",
                        help="drop findings whose id starts with one of these")
    output = doctor.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
    output.add_argument("--format", choices=("text", "json", "markdown"), default=None, help="report format")
    doctor.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR instead of the bundled one")
    doctor.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text report (default: only on a terminal)")
    matrix = commands.add_parser("matrix", help="validate or show the compatibility matrix")
    matrix.add_argument("action", choices=("validate", "show"))
    matrix.add_argument("--matrix", metavar="DIR", help="a matrix directory instead of the bundled one")
    matrix.add_argument("--json", action="store_true", help="one JSON document on stdout")
    for module in _plugin_modules():
        module.add_parser(commands)
    return parser


# Commands that live in their own package keep their CLI layer beside them: a module with
# `NAME`, `add_parser(subparsers)` (cheap: argparse only) and `run(args) -> int` (imports the heavy parts).
PLUGIN_COMMANDS: tuple[str, ...] = (
    "envcheck.diagnose.cli", "envcheck.plan.cli", "envcheck.resolve.cli", "envcheck.resolve.env_cli",
)


def _plugin_modules() -> list:  # type: ignore[type-arg]
    import importlib
    import importlib.util

    found = []
    for name in PLUGIN_COMMANDS:
        try:
            present = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # its package is not part of this build
            present = False
        if present:
            found.append(importlib.import_module(name))
    return found


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        print(f"envcheck: {message}...", file=sys.stderr, flush=True)


def _check_python(path: str | None) -> None:
    if path is None:
        return
    if not os.path.exists(path):
        raise UsageError(f"--python {path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"--python {path}: is a directory; give the interpreter, e.g. {path.rstrip('/')}/bin/python")
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {path}: not executable")


def _start_python_probe(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Start the interpreter probe before envcheck imports the rest of itself: the two then overlap."""
    from envcheck.probes.pyenv_start import start_python_probe

    _check_python(args.python)
    return start_python_probe(args.python)


def _capture(args: argparse.Namespace, started=None):  # type: ignore[no-untyped-def]
    from envcheck.capture import capture

    if started is None:
        started = _start_python_probe(args)
    snapshot = capture(python=args.python, deep=args.deep, progress=_progress, import_timeout=args.import_timeout,
                       started_python=started)
    if args.python and snapshot.python is None:  # the user named this interpreter: not being one is bad input
        raise UsageError(f"--python {args.python}: not a usable Python interpreter "
                         f"({snapshot.skipped_reason('python') or 'no answer'})")
    return snapshot


def cmd_probe(args: argparse.Namespace) -> int:
    from envcheck.formats.jsonfmt import dumps

    if args.output is not None and not args.output.strip():
        raise UsageError("-o: give a file name")
    if args.output and os.path.exists(args.output) and not args.force:
        raise UsageError(f"{args.output} exists; use --force to overwrite it")
    text = dumps(_capture(args).to_dict())
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            raise UsageError(f"cannot write {args.output}: {error.strerror or error}") from None
        print(f"envcheck: snapshot written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.snapshot and (args.python or args.deep):
        raise UsageError("--snapshot judges a recorded snapshot; it cannot be combined with --python or --deep")
    started = None if args.snapshot else _start_python_probe(args)
    from envcheck.checks import run_checks
    from envcheck.checks.model import Severity
    from envcheck.formats import render_json, render_markdown, render_text
    from envcheck.matrix import load_matrix
    from envcheck.report import Report
    from envcheck.snapshot import load_snapshot

    from envcheck.checks.meta import matrix_unusable
    from envcheck.matrix import MatrixError

    # Parsing the matrix is pure Python; probing mostly waits on child processes: overlap the two.
    with ThreadPoolExecutor(max_workers=1) as pool:
        matrix_job = pool.submit(load_matrix, args.matrix)
        snapshot = load_snapshot(args.snapshot) if args.snapshot else _capture(args, started)
        matrix_problem = None
        try:
            matrix = matrix_job.result()
        except MatrixError as error:
            if args.matrix:
                raise  # the user's own matrix: their input, exit 2
            matrix, matrix_problem = None, str(error)  # a damaged install must not cost the matrix-free checks
    findings = run_checks(snapshot, matrix, args.select, args.ignore)
    if matrix_problem:
        findings = sorted([*findings, matrix_unusable(matrix_problem)], key=lambda f: f.sort_key())
    report = Report(snapshot, tuple(findings), matrix.data_version if matrix else None)
    fmt = args.format or "text"
    if fmt == "json":
        sys.stdout.write(render_json(report))
    elif fmt == "markdown":
        sys.stdout.write(render_markdown(report))
    else:
        colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
        sys.stdout.write(render_text(report, colour=colour))
    return EXIT_FINDINGS if report.fails(Severity.parse(args.fail_on)) else EXIT_OK


def cmd_matrix(args: argparse.Namespace) -> int:
    from envcheck.formats.jsonfmt import dumps
    from envcheck.matrix import MatrixError, load_matrix
    from envcheck.matrix.validate import problems

    if args.action == "validate" and args.matrix and not os.path.isdir(args.matrix):
        raise UsageError(f"--matrix {args.matrix}: not a directory")
    try:
        matrix = load_matrix(args.matrix, validated=False)
    except MatrixError as error:
        if args.action != "validate":
            raise
        # validating is the question asked: a file that cannot be read is its answer, not a usage error
        if args.json:
            sys.stdout.write(dumps({"path": args.matrix, "data_version": None, "valid": False,
                                    "problems": [str(error)], "counts": {}}))
        else:
            print(str(error))
            print("matrix is not valid: 1 problem", file=sys.stderr)
        return EXIT_FINDINGS
    found = problems(matrix)
    if args.action == "validate":
        if args.json:
            sys.stdout.write(dumps({"path": matrix.path, "data_version": matrix.data_version, "valid": not found,
                                    "problems": found, "counts": matrix.counts()}))
        else:
            for problem in found:
                print(f"{matrix.path}/{problem}")
            state = f"{len(found)} problem(s)" if found else "valid"
            print(f"matrix {matrix.data_version} at {matrix.path}: {state}", file=sys.stderr if found else sys.stdout)
        return EXIT_FINDINGS if found else EXIT_OK
    if found:
        raise UsageError(f"{matrix.path}: {found[0]} (run 'envcheck matrix validate' for all problems)")
    from envcheck.formats.matrix_text import render_matrix

    if args.json:
        from envcheck.serde import to_dict

        sys.stdout.write(dumps(to_dict(matrix)))
    else:
        sys.stdout.write(render_matrix(matrix))
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "probe": cmd_probe, "doctor": cmd_doctor, "matrix": cmd_matrix,
}


def _write_crash_report(error: BaseException, argv: Sequence[str]) -> str:
    """Save the traceback (redacted) where the user can attach it to a bug report."""
    from envcheck.redact import Redactor

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    body = (f"envcheck {__version__} crashed\nargv: {' '.join(argv)}\npython: {sys.version}\n\n"
            + "".join(traceback.format_exception(type(error), error, error.__traceback__)))
    body = Redactor().text(body)
    directory = os.environ.get("ENVCHECK_CRASH_DIR") or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix=f"envcheck-crash-{stamp}-", suffix=".txt", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(body)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required: probe, doctor, resolve, env, diagnose, plan or matrix "
                             "(see 'envcheck --help')")
        handler = COMMANDS.get(args.command)
        if handler is None:
            handler = next(m.run for m in _plugin_modules() if m.NAME == args.command)
        return handler(args)
    except UsageError as error:
        print(f"envcheck: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("envcheck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK  # `envcheck doctor | head` closed the pipe: not an error
    except OSError as error:
        if error.filename is None and error.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            print(f"envcheck: error: cannot write the output: {error.strerror}", file=sys.stderr)
            return EXIT_USAGE  # a full disk or a dead terminal, not a bug
        return _internal_error(error, argv)
    except (EnvcheckError, Exception) as error:  # a bug: keep the traceback for the report, not the screen
        return _internal_error(error, argv)


def _internal_error(error: BaseException, argv: Sequence[str]) -> int:
    try:
        where = _write_crash_report(error, argv)
    except OSError:
        where = "(could not write a crash report)"
    print(f"envcheck: internal error: {type(error).__name__}: {error}\n"
          f"envcheck: crash report written to {where}; please attach it to a bug report", file=sys.stderr)
    return EXIT_INTERNAL
