"""CLI layer of `envcheck matrix harvest` (cmd_matrix dispatches here; argparse only until `run`)."""

from __future__ import annotations

import argparse
import datetime
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("harvest (maintainers)")
    group.add_argument("--index-url", metavar="URL", help="harvest: a simple-API index instead of pip's or uv's configured one")
    group.add_argument("--since", metavar="YYYY-MM-DD", help="harvest: oldest first-upload day of releases to read "
                                                               "(default 2024-01-01)")
    group.add_argument("--recorded", metavar="DIR", help="harvest: answer from recorded index answers (tests)")
    group.add_argument("--record", metavar="DIR", help="harvest: also write the index's answers to DIR (fixtures)")
    group.add_argument("--no-cache", action="store_true", help="harvest: do not keep read metadata in the user cache")


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "envcheck", "harvest-metadata")


def run(args: argparse.Namespace) -> int:
    from envcheck.errors import UsageError
    from envcheck.matrix import bundled_matrix_dir
    from envcheck.matrix.harvest.core import SINCE, harvest
    from envcheck.matrix.harvest.interface import IndexError_

    directory = args.matrix or bundled_matrix_dir()
    if not os.path.isdir(directory):
        raise UsageError(f"--matrix {directory}: not a directory")
    if args.recorded:
        from envcheck.matrix.harvest.recorded import RecordedIndex

        index = RecordedIndex(args.recorded)
    else:
        from envcheck.matrix.harvest.live import LiveIndex

        try:
            index = LiveIndex(args.index_url, cache_dir=None if args.no_cache else _cache_dir())
        except IndexError_ as error:
            raise UsageError(str(error)) from None
    if args.record:
        from envcheck.matrix.harvest.recorded import RecordingIndex

        index = RecordingIndex(index, args.record)
    today = os.environ.get("ENVCHECK_HARVEST_DATE") or datetime.date.today().strftime("%Y.%m.%d")
    try:
        result = harvest(index, directory, today, since=args.since or SINCE)
    except IndexError_ as error:
        raise UsageError(f"harvest: {error}") from None
    if args.json:
        from envcheck.formats.jsonfmt import dumps

        sys.stdout.write(dumps({
            "path": result.path, "data_version": result.data_version, "written": result.written,
            "index": result.index, "releases": len(result.rows),
            "added": [{"package": r.package, "version": r.version, "source": r.source} for r in result.added],
            "skipped": [{"package": s.package, "version": s.version, "reason": s.reason} for s in result.skipped],
            "seconds": round(result.seconds, 2), "bytes_read": result.bytes_read,
        }))
        return 0
    by_package: dict[str, list[str]] = {}
    for row in result.added:
        by_package.setdefault(row.package, []).append(row.version)
    if by_package:
        print(f"new since the last harvest ({len(result.added)} release(s)):")
        for package, versions in sorted(by_package.items()):
            print(f"  {package}: {', '.join(versions)}")
    else:
        print("nothing new since the last harvest")
    for item in result.skipped:
        print(f"  skipped {item.package} {item.version}: {item.reason}", file=sys.stderr)
    state = "written" if result.written else "unchanged"
    print(f"{result.path}: {len(result.rows)} release(s), data_version {result.data_version}, {state} "
          f"({result.releases_listed} listed on {result.index}, {result.bytes_read / 1e6:.1f} MB read, "
          f"{result.seconds:.1f} s)")
    return 0
