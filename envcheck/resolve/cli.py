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
    sys.stdout.write(dumps(to_dict(result)) if args.json else render_text(result))
    return 0
