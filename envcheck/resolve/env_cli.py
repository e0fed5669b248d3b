"""`envcheck env [TARGET] --format environment.yml|requirements|conda-lock|dockerfile|all [-o DIR] [--force]`."""

from __future__ import annotations

import argparse
import sys

NAME = "env"
FORMATS = ("environment.yml", "requirements", "conda-lock", "dockerfile", "all")


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    from envcheck.resolve.flags import add_target_flags

    from envcheck.helptext import help_kwargs

    parser = subparsers.add_parser(NAME, help="write environment.yml, a hashed lock, conda-lock inputs, a Dockerfile",
                                   **help_kwargs(
        "Resolve a stack for the target (as 'envcheck resolve' does) and write the files that build it: "
        "environment.yml, a hashed requirements lock (uv), conda-lock inputs and a Dockerfile that ships envcheck "
        "beside it. Existing files are never overwritten without --force. JSON output: docs/resolve-json.md.",
        ("envcheck env --for llamafactory -o env/",
         "envcheck env --driver 580.95.05 --gpu H100 --format dockerfile -o image/",
         "envcheck env --snapshot node17.json --format environment.yml --force"),
        (("0", "the files were written"), ("1", "the target is impossible (the reason is printed)"))))
    add_target_flags(parser)
    parser.add_argument("--format", choices=FORMATS, default="all", help="which files to write (default: all)")
    parser.add_argument("-o", "--output", metavar="DIR", default=".", help="directory to write into (default: .)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.add_argument("--exclude-newer", metavar="DATE", help="lock only releases published before DATE "
                        "(YYYY-MM-DD; default: the matrix's data date, so the lock is reproducible)")
    parser.add_argument("--no-conda-lock", action="store_true", help="write conda-lock inputs but do not run it")
    parser.add_argument("--json", action="store_true", help="one JSON document: the resolution and the files written")


def command_text(args: argparse.Namespace) -> str:
    """The command that reproduces the files, rebuilt from the parsed flags (not argv: no output paths in it)."""
    parts = []
    for flag, dest in (("--snapshot", "snapshot"), ("--driver", "driver"), ("--gpu", "gpu"),
                       ("--compute-capability", "compute_capability"), ("--python", "python"), ("--cuda", "cuda"),
                       ("--torch", "torch"), ("--with", "with_"), ("--for", "for_"), ("--exclude-newer", "exclude_newer")):
        value = getattr(args, dest, None)
        for item in value if isinstance(value, list) else [value] if value else []:
            parts += [flag, f"'{item}'" if any(c in item for c in " <>=!*,") else item]
    if getattr(args, "policy", "full") != "full":
        parts += ["--policy", args.policy]
    return "envcheck env " + " ".join(parts) + f" --format {args.format}"


def exclude_newer(args: argparse.Namespace, matrix_version: str) -> str:
    import re

    from envcheck.errors import UsageError

    date = args.exclude_newer or matrix_version.replace(".", "-")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise UsageError(f"--exclude-newer {date}: expected YYYY-MM-DD")
    return f"{date}T00:00:00Z"


def names_for(fmt: str) -> list[str]:
    from envcheck.emit import zipapp
    from envcheck.emit.conda_lock import COMMAND_NAME, VIRTUAL_NAME

    table = {"environment.yml": ["environment.yml"], "requirements": ["requirements.lock.txt"],
             "conda-lock": ["environment.yml", VIRTUAL_NAME, COMMAND_NAME],
             "dockerfile": ["Dockerfile", "requirements.lock.txt", zipapp.NAME]}
    if fmt == "all":
        return sorted({n for names in table.values() for n in names})
    return table[fmt]


def render_files(result, exact, names: list[str], command: str, options) -> dict[str, str | bytes]:  # type: ignore[no-untyped-def]
    """name -> text (bytes for envcheck.pyz) for the requested files, from one lock (`exact`, uv's output)."""
    from envcheck.emit import conda_lock, dockerfile, environment_yml, requirements, zipapp
    from envcheck.errors import UsageError

    files: dict[str, str | bytes] = {}
    if "environment.yml" in names:
        files["environment.yml"] = environment_yml.render(result, command, exact)
    if conda_lock.VIRTUAL_NAME in names:
        files[conda_lock.VIRTUAL_NAME] = conda_lock.virtual_packages(result, command)
    if conda_lock.COMMAND_NAME in names:
        files[conda_lock.COMMAND_NAME] = conda_lock.command_script(result, command)
    if "requirements.lock.txt" in names:
        files["requirements.lock.txt"] = requirements.render(result, options, command, exact.lock_body)
    if "Dockerfile" in names:
        if result.base_image_ref is None:
            raise UsageError(f"no CUDA {result.cuda} base image in the matrix: cannot write a Dockerfile")
        files["Dockerfile"] = dockerfile.render(result, command)
        files[zipapp.NAME] = zipapp.build()
    return files


def run(args: argparse.Namespace) -> int:
    from envcheck.emit import requirements, zipapp
    from envcheck.emit.conda_lock import run_conda_lock
    from envcheck.emit.writer import check_free, write
    from envcheck.errors import UsageError
    from envcheck.formats.jsonfmt import dumps
    from envcheck.resolve.cli import exact_pins, progress_for, run_resolve
    from envcheck.resolve.render import impossible_dict, to_dict
    from envcheck.resolve.solver import Impossible

    matrix, target, result = run_resolve(args)
    if isinstance(result, Impossible):
        if args.json:
            sys.stdout.write(dumps({"resolution": impossible_dict(result, target.to_dict(), matrix.data_version),
                                    "written": [], "notes": []}))
        print(f"envcheck: impossible target: {result.reason}", file=sys.stderr)
        return 1
    names = names_for(args.format)
    check_free(args.output, names, args.force)
    also = zipapp.runtime_requirements(result.python) if "Dockerfile" in names else ()
    exact = exact_pins(args, matrix, result, also)
    if not exact.locked:  # every file env writes holds exact pins: there is no fallback to write
        raise UsageError(f"cannot lock the stack: {exact.note}")
    options = requirements.LockOptions(exclude_newer(args, matrix.data_version), requirements.find_uv() or "uv", also)
    files = render_files(result, exact, names, command_text(args), options)
    written = write(args.output, files)
    notes = [f"the resolver's pin {o}" for o in exact.outside]
    if args.format in ("conda-lock", "all") and not args.no_conda_lock:
        progress_for(args)("checking conda-lock's channel and running conda-lock...")
        notes.append(run_conda_lock(args.output)[1])
    if args.json:
        sys.stdout.write(dumps({"resolution": to_dict(result, exact), "written": written, "notes": notes}))
    else:
        for path in written:
            print(f"wrote {path}")
        for note in notes:
            print(f"note: {note}")
    return 0
