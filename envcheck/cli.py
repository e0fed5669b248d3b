"""Command line: one small function per subcommand, and the exit-code contract of CONTRACT.md.

0 ran clean; 1 findings at or above --fail-on; 2 usage error or unusable input (one line, no traceback);
3 internal error (a short message and the path of a crash report). Only this module prints or exits.
"""

from __future__ import annotations

import argparse
import datetime
import errno
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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (ONLY) just that command's: building all of them is a third of a short run."""
    parser = _Parser(prog="envcheck", description="Find and explain the environment problems that kill GPU "
                                                  "fine-tuning runs.")
    parser.add_argument("--version", action="version", version=f"envcheck {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    if only in PLUGIN_NAMES:
        import importlib

        importlib.import_module(PLUGIN_NAMES[only]).add_parser(commands)
        return parser

    for module in _plugin_modules()[:2]:  # probe and doctor first, as users meet them
        module.add_parser(commands)
    matrix = commands.add_parser("matrix", help="validate or show the compatibility matrix",
                                 description="Check and show envcheck's compatibility matrix (compat_matrix/, every "
                                             "row with its source; keys in compat_matrix/SCHEMA.md).",
                                 epilog="examples:\n  envcheck matrix validate\n  envcheck matrix show --json\n\n"
                                        "exit codes:\n  0  valid (validate) or shown (show)\n  1  the matrix has "
                                        "problems (validate)\n  2  bad flags or an unusable --matrix\n  3  internal error",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    matrix.add_argument("action", choices=("validate", "show", "harvest"))
    matrix.add_argument("--matrix", metavar="DIR", help="a matrix directory instead of the bundled one")
    matrix.add_argument("--json", action="store_true", help="one JSON document on stdout")
    from envcheck.matrix.harvest.cli import add_arguments as add_harvest_arguments

    add_harvest_arguments(matrix)  # `harvest` (maintainers): refresh the generated releases.toml from the index
    for module in _plugin_modules()[2:]:
        module.add_parser(commands)
    return parser


# Commands that live in their own package keep their CLI layer beside them: a module with
# `NAME`, `add_parser(subparsers)` (cheap: argparse only) and `run(args) -> int` (imports the heavy parts).
# command (each module's NAME) -> its CLI module, in help order, so that one command's parser is built alone.
PLUGIN_NAMES: dict[str, str] = {
    "probe": "envcheck.probes.cli", "doctor": "envcheck.doctor.cli", "diagnose": "envcheck.diagnose.cli",
    "plan": "envcheck.plan.cli", "resolve": "envcheck.resolve.cli", "env": "envcheck.resolve.env_cli",
    "ckpt": "envcheck.ckpt.cli", "guard": "envcheck.guard.cli", "alerts": "envcheck.guard.alerts_cli",
    "fleet": "envcheck.fleet.cli",
}
PLUGIN_COMMANDS: tuple[str, ...] = tuple(PLUGIN_NAMES.values())


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


def cmd_matrix(args: argparse.Namespace) -> int:
    from envcheck.formats.jsonfmt import dumps
    from envcheck.matrix import MatrixError, load_matrix
    from envcheck.matrix.validate import problems

    if args.action == "harvest":
        from envcheck.matrix.harvest.cli import run as run_harvest

        return run_harvest(args)
    if args.action == "validate" and args.matrix and not os.path.isdir(args.matrix):
        raise UsageError(f"--matrix {args.matrix}: not a directory")
    try:
        matrix = load_matrix(args.matrix, validated=False, releases=True)
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"matrix": cmd_matrix}


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
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required: probe, doctor, resolve, env, diagnose, plan, matrix, guard "
                             "or alerts (see 'envcheck --help')")
        handler = COMMANDS.get(args.command)
        if handler is None:
            import importlib

            handler = importlib.import_module(PLUGIN_NAMES[args.command]).run
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
