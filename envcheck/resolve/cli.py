"""`envcheck resolve [TARGET] [--json]`: choose a compatible pinned stack and explain every choice."""

from __future__ import annotations

import argparse
import sys

NAME = "resolve"


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    from envcheck.resolve.flags import add_target_flags

    from envcheck.helptext import help_kwargs

    parser = subparsers.add_parser(NAME, help="choose a compatible pinned stack for a target and explain it", **help_kwargs(
        "Choose a torch build, CUDA variant and training stack (transformers, DeepSpeed, ...) that fit a target "
        "machine's driver, GPUs and Python, and explain every choice. With no target flags the target is this "
        "machine and its active Python environment. JSON output: docs/resolve-json.md.",
        ("envcheck resolve                                      # this machine",
         "envcheck resolve --driver 535.104.05 --gpu H100 --for llamafactory",
         "envcheck resolve --snapshot node17.json --with flash-attn --json"),
        (("0", "a stack was chosen"), ("1", "the target is impossible (the reason is printed)"))))
    add_target_flags(parser)
    parser.add_argument("--no-lock", action="store_true", help="do not run uv: pins are the newest releases the "
                        "matrix names inside each range, marked not locked (offline, instant)")
    parser.add_argument("--exclude-newer", metavar="DATE", help="lock only releases published before DATE "
                        "(YYYY-MM-DD; default: the matrix's data date, so the pins are reproducible)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout (docs/resolve-json.md)")


def _probe():  # type: ignore[no-untyped-def]
    """This machine as the target: the active environment's Python (CONTRACT.md), its GPUs and driver."""
    from envcheck.capture import capture
    from envcheck.probes.target import examined_environment

    examined = examined_environment(None)
    return capture(python=examined.python, deep=False, progress=lambda _m: None, examined_because=examined.reason)


def run_resolve(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(matrix, target, result): shared with `env`."""
    from envcheck.matrix import load_matrix
    from envcheck.resolve.solver import resolve
    from envcheck.resolve.target import build_target

    matrix = load_matrix(args.matrix)
    target = build_target(args, matrix, _probe)
    return matrix, target, resolve(target, matrix, args.policy)


def progress_for(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """A progress printer for long network work: stderr, only on a terminal and never with --json."""
    if getattr(args, "json", False) or not sys.stderr.isatty():
        return lambda _message: None
    return lambda message: print(f"envcheck: {message}", file=sys.stderr, flush=True)


def exact_pins(args: argparse.Namespace, matrix, result, also: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """One resolution to exact versions: uv's hashed lock of the stack (the same run env writes as the lock), or
    the matrix fallback, marked not locked, when uv cannot run or reach the index."""
    import time

    from envcheck.emit import requirements
    from envcheck.resolve import exact
    from envcheck.resolve.env_cli import exclude_newer

    uv = requirements.find_uv()
    if getattr(args, "no_lock", False) or uv is None:
        why = "--no-lock: uv was not run" if uv else "uv is not installed (pip install uv): nothing was locked"
        return exact.lock(result, matrix, None, why)
    options = requirements.LockOptions(exclude_newer(args, matrix.data_version), uv, also)
    progress = progress_for(args)

    def run_uv() -> tuple[str, str]:
        started = time.monotonic()
        progress(f"locking {len(result.ranges) - 2} packages and their dependencies with uv "
                 f"({result.torch_index}, --exclude-newer {options.exclude_newer[:10]})...")
        try:
            body = requirements.compile_body(result, options)
        except requirements.LockError as error:
            progress(f"uv failed after {time.monotonic() - started:.1f} s")
            raise error
        progress(f"locked in {time.monotonic() - started:.1f} s")
        return body, requirements.resolver_command(result, options)

    return exact.lock(result, matrix, run_uv, "")


def run(args: argparse.Namespace) -> int:
    from envcheck.formats.jsonfmt import dumps
    from envcheck.resolve.render import impossible_dict, render_text, to_dict
    from envcheck.resolve.solver import Impossible

    matrix, target, result = run_resolve(args)
    if isinstance(result, Impossible):
        if args.json:
            sys.stdout.write(dumps(impossible_dict(result, target.to_dict(), matrix.data_version)))
        print(f"envcheck: impossible target: {result.reason}", file=sys.stderr)
        for detail in result.details[:8]:
            print(f"  {detail}", file=sys.stderr)
        return 1
    pins = exact_pins(args, matrix, result)
    if not pins.locked and not args.json:
        print(f"envcheck: not locked: {pins.note}", file=sys.stderr)
    sys.stdout.write(dumps(to_dict(result, pins)) if args.json else render_text(result, pins))
    return 0
