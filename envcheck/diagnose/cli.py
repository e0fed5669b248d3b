"""CLI layer of `envcheck diagnose`: parse, run, print, return the exit code (0 no known cause, 1 causes found)."""

from __future__ import annotations

import argparse
import sys
import time

NAME = "diagnose"


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    from envcheck.helptext import help_kwargs

    parser = subparsers.add_parser(NAME, help="explain why a training run died (-9, -11, -7, NCCL, OOM, ...)", **help_kwargs(
        "Explain why a training run died from its logs, its exit status, this machine's kernel log (OOM kills and "
        "segfaults inside the run's time window, of the run's processes) and core dumps. JSON output: "
        "docs/diagnose-json.md.",
        ("envcheck diagnose train.log --exit-code -9",
         "torchrun ... 2>&1 | tee run.log; envcheck diagnose run.log --snapshot node17.json",
         "envcheck diagnose run.log.gz --kernel-log kern.log --since '2026-11-30 08:00' --json"),
        (("0", "no known cause was recognised"), ("1", "causes were found (the first is the primary cause)"))))
    parser.add_argument("logs", nargs="*", metavar="LOG", help="training log(s), gzip too; '-' reads stdin")
    parser.add_argument("--exit-code", type=_exit_code, metavar="N", help="the run's exit status (-9 from a "
                                                                          "launcher, 137 from a shell)")
    parser.add_argument("--kernel-log", metavar="FILE", help="a saved kernel log (default: dmesg / journalctl -k "
                                                             "of this machine when allowed)")
    parser.add_argument("--core", metavar="FILE", help="a core dump to analyse with gdb (default: the newest core "
                                                       "per core_pattern or coredumpctl after a crash)")
    parser.add_argument("--since", metavar="WHEN", type=_when(False),
                        help="the run started at WHEN (ISO date/time, local unless an offset is given; default: the "
                             "logs' first timestamp): older kernel events and cores are not the run's")
    parser.add_argument("--until", metavar="WHEN", type=_when(True),
                        help="the run ended at WHEN (default: the logs' last timestamp plus 2 minutes)")
    parser.add_argument("--pid", metavar="PID", type=_pid, action="append", default=[],
                        help="a process id of the run (repeatable; the logs' pids are used too): kernel events of "
                             "other processes are not the run's")
    parser.add_argument("--boot-time", metavar="WHEN", type=_when(False),
                        help="boot time of the machine a saved --kernel-log comes from, to date its "
                             "seconds-since-boot stamps")
    parser.add_argument("--snapshot", metavar="FILE", help="link causes to the doctor's findings on this snapshot")
    parser.add_argument("--probe", action="store_true", help="probe this machine (static) and link causes to the "
                                                             "doctor's findings")
    parser.add_argument("--offline", action="store_true", help="read only the files given: no dmesg, no core "
                                                               "search")
    parser.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout (docs/diagnose-json.md)")


def _when(end_of_day: bool):  # type: ignore[no-untyped-def]
    """An argparse type for ISO dates/times (a bad value is one line and exit 2 through the parser)."""

    def parse(text: str):  # type: ignore[no-untyped-def]
        from envcheck.diagnose.stamps import parse_when

        try:
            return parse_when(text, end_of_day)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _exit_code(text: str) -> int:
    """A process's status as a launcher (-1..-64, a signal) or a shell (0..255) reports it."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an exit status (a number such as -9 or 137)") from None
    if not -64 <= value <= 255:
        raise argparse.ArgumentTypeError(f"{value} is not an exit status: use -64..-1 for a signal as a launcher "
                                         "reports it, or 0..255 as a shell does")
    return value


def _pid(text: str) -> int:
    if not text.strip().isdigit() or not 0 < int(text) < 1 << 22:
        raise argparse.ArgumentTypeError(f"{text!r} is not a process id (a positive number such as 1234)")
    return int(text)


class _Progress:
    """Progress on stderr for large files, only on a terminal, at most a few times a second."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, name: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - self.last < 0.25 or not total or total < 64 << 20:
            return
        self.last = now
        print(f"\renvcheck: scanning {name}: {100 * done // total}% ({done >> 20} of {total >> 20} MiB)",
              end="", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from envcheck.diagnose.engine import Request, diagnose
    from envcheck.diagnose.render import to_dict, to_text
    from envcheck.errors import UsageError
    from envcheck.redact import Redactor

    if args.snapshot and args.probe:
        raise UsageError("--snapshot and --probe both name the machine to link to; give one")
    if not args.logs and args.exit_code is None and not args.kernel_log and not args.core:
        if sys.stdin.isatty():
            raise UsageError("nothing to diagnose: give a LOG, '-' for stdin, --exit-code, --kernel-log or --core")
        args.logs = ["-"]
    if args.logs.count("-") > 1:
        raise UsageError("'-' (stdin) can be given once")
    if args.since and args.until and args.since > args.until:
        raise UsageError(f"--since {args.since.isoformat()} is after --until {args.until.isoformat()}")
    request = Request(tuple(args.logs), args.exit_code, args.kernel_log, args.core, args.snapshot, args.probe,
                      not args.offline, args.matrix, args.since, args.until, tuple(args.pid), args.boot_time)
    progress = _Progress() if sys.stderr.isatty() else None
    result = diagnose(request, progress, _capture if args.probe else None)
    if progress is not None and progress.last:
        print(file=sys.stderr)
    # Logs quote tokens, URLs with passwords and home paths: everything printed goes through the redactor.
    redactor = Redactor()
    if args.json:
        from envcheck.formats.jsonfmt import dumps

        sys.stdout.write(dumps(redactor.tree(to_dict(result))))
    else:
        sys.stdout.write(redactor.text(to_text(result)))
    return 1 if result.causes else 0


def _capture():  # type: ignore[no-untyped-def]
    from envcheck.capture import capture

    return capture(python=None, deep=False, progress=lambda message: None, import_timeout=60.0)
