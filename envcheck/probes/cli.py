"""`envcheck probe`: capture a snapshot of this machine as JSON; also the probe options doctor shares.

Kept cheap to import: argparse only at parser time; the probes load when the command runs.
"""

from __future__ import annotations

import argparse
import os
import sys

from envcheck.errors import UsageError
from envcheck.helptext import help_kwargs

NAME = "probe"
DOCS = "docs/snapshot.md"



def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 seconds")
    return value


def add_probe_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--python", metavar="PATH",
                        help="examine this interpreter's environment (a venv's or conda env's python); default: the "
                             "active one (VIRTUAL_ENV, else CONDA_PREFIX, else python3 on PATH, else envcheck's own)")
    deep = parser.add_mutually_exclusive_group()
    deep.add_argument("--deep", dest="deep", action="store_true", default=None,
                      help="import torch and compiled extensions in child processes (default: when a GPU is present)")
    deep.add_argument("--no-deep", dest="deep", action="store_false", help="never import anything")
    parser.add_argument("--import-timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
                        help="time limit for each child import (default 60)")


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    parser = subparsers.add_parser(NAME, help="capture a snapshot of this machine as JSON", **help_kwargs(
        "Capture what the doctor judges (host, driver, GPUs, CUDA toolkits, the Python environment, torch and "
        "DeepSpeed builds) as one redacted JSON snapshot, to judge later or elsewhere with 'envcheck doctor "
        f"--snapshot'. The snapshot's fields are documented in {DOCS}.",
        ("envcheck probe -o node17.json", "envcheck probe --python ~/envs/train/bin/python --deep > snap.json"),
        (("0", "the snapshot was written"),)))
    add_probe_options(parser)
    parser.add_argument("-o", "--output", metavar="FILE", help="write the snapshot to FILE instead of stdout")
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    parser.add_argument("--json", action="store_true", help="accepted for symmetry: the snapshot is always JSON")


def progress(message: str) -> None:
    if sys.stderr.isatty():
        print(f"envcheck: {message}...", file=sys.stderr, flush=True)


def check_python(path: str | None) -> None:
    if path is None:
        return
    if not os.path.exists(path):
        raise UsageError(f"--python {path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"--python {path}: is a directory; give the interpreter, e.g. {path.rstrip('/')}/bin/python")
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {path}: not executable")


def check_output_path(path: str | None, force: bool) -> None:
    """Refuse a bad output path before seconds of probing, not after."""
    if path is None:
        return
    if not path.strip():
        raise UsageError("-o: give a file name")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory; give a file name")
    if os.path.exists(path) and not force:
        raise UsageError(f"{path} exists; use --force to overwrite it")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {path}: the directory {parent} is not writable")


def start(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Choose the environment and start its interpreter probe before envcheck imports the rest of itself."""
    from envcheck.probes.pyenv_start import start_python_probe
    from envcheck.probes.target import examined_environment

    check_python(args.python)
    examined = examined_environment(args.python)
    return examined, start_python_probe(examined.python)


def capture_snapshot(args: argparse.Namespace, started=None):  # type: ignore[no-untyped-def]
    from envcheck.capture import capture

    examined, running = started if started is not None else start(args)
    snapshot = capture(python=examined.python, deep=args.deep, progress=progress, import_timeout=args.import_timeout,
                       started_python=running, examined_because=examined.reason)
    if args.python and snapshot.python is None:  # the user named this interpreter: not being one is bad input
        raise UsageError(f"--python {args.python}: not a usable Python interpreter "
                         f"({snapshot.skipped_reason('python') or 'no answer'})")
    return snapshot


def run(args: argparse.Namespace) -> int:
    from envcheck.formats.jsonfmt import dumps

    check_output_path(args.output, args.force)
    text = dumps(capture_snapshot(args).to_dict())
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            raise UsageError(f"cannot write {args.output}: {error.strerror or error}") from None
        print(f"envcheck: snapshot written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
