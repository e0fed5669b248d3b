"""`envcheck ckpt verify|manifest|latest PATH`: which checkpoint is whole before you resume. Only this module
prints. Exit 0 all whole (latest: one to resume from was found), 1 problems found, 2 bad input (UsageError)."""

from __future__ import annotations

import argparse
import os
import sys
import time

NAME = "ckpt"
EXIT_OK, EXIT_PROBLEMS = 0, 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(NAME, help="is a checkpoint whole? which one to resume from (HF, PEFT, DeepSpeed)",
                              description="Completeness and integrity of HF Trainer, PEFT, DeepSpeed and "
                                          "LLaMA-Factory checkpoints, without torch.",
                              epilog="examples:\n  envcheck ckpt verify saves/llama3-8b/lora/sft\n"
                                     "  envcheck ckpt manifest output/checkpoint-500\n"
                                     "  RESUME=$(envcheck ckpt latest output) && train --resume $RESUME\n\n"
                                     "exit codes:\n  0  every checkpoint is whole (latest: one was found)\n"
                                     "  1  problems found (latest: no whole checkpoint)\n  2  bad input\n"
                                     "  3  internal error",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="ckpt_action", metavar="ACTION", parser_class=type(p))
    verify = actions.add_parser("verify", help="check every checkpoint under PATH")
    manifest = actions.add_parser("manifest", help="verify, then write a sha256 manifest into each whole checkpoint")
    latest = actions.add_parser("latest", help="print the newest whole checkpoint to resume from")
    for sub in (verify, manifest, latest):
        sub.add_argument("path", metavar="PATH", help="a checkpoint, or an output directory holding several")
        sub.add_argument("--json", action="store_true", help="one JSON document on stdout (docs/ckpt-json.md)")
    for sub in (verify, latest):
        sub.add_argument("--deep", action="store_true", help="hash every file (sha256) and read every byte")
    manifest.add_argument("--force", action="store_true", help="replace an existing manifest")


class _Bar:
    """A progress bar on stderr: only on a terminal, never with --json, at most ten redraws a second."""

    def __init__(self) -> None:
        self.total, self.done, self.began, self.drawn = 0, 0, time.monotonic(), 0.0

    def start(self, total_bytes: int) -> None:
        self.total, self.began = total_bytes, time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.drawn >= 0.1:
            self.drawn = now
            rate = self.done / max(now - self.began, 1e-6) / 1e9
            share = self.done / self.total if self.total else 1.0
            filled = int(share * 30)
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {share:4.0%} {self.done / 1e9:.2f}/"
                             f"{self.total / 1e9:.2f} GB {rate:.2f} GB/s")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.drawn:
            sys.stderr.write("\r" + " " * 79 + "\r")
            sys.stderr.flush()


def _progress(args: argparse.Namespace) -> _Bar | None:
    return _Bar() if not args.json and sys.stderr.isatty() else None


def run(args: argparse.Namespace) -> int:
    from envcheck.errors import UsageError

    action = getattr(args, "ckpt_action", None)
    if action is None:
        raise UsageError("envcheck ckpt needs an action: verify, manifest or latest (see 'envcheck ckpt --help')")
    return {"verify": _verify, "manifest": _manifest, "latest": _latest}[action](args)


def _verify(args: argparse.Namespace) -> int:
    from envcheck.ckpt.render import render_text
    from envcheck.ckpt.verify import verify
    from envcheck.formats.jsonfmt import dumps

    report = verify(args.path, deep=args.deep, progress=_progress(args))
    sys.stdout.write(dumps(report.to_dict()) if args.json else render_text(report))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _latest(args: argparse.Namespace) -> int:
    from envcheck.ckpt.render import skipped_lines
    from envcheck.ckpt.verify import verify
    from envcheck.formats.jsonfmt import dumps

    report = verify(args.path, deep=args.deep, progress=_progress(args), stop_at_whole=True)
    if args.json:
        sys.stdout.write(dumps(report.to_dict()))
    else:
        for line in skipped_lines(report):
            print(f"envcheck: {line}", file=sys.stderr)
        if report.resume_from is not None:
            print(report.resume_from.checkpoint.path)
        else:
            print(f"envcheck: no whole checkpoint to resume from under {args.path}", file=sys.stderr)
    return EXIT_OK if report.resume_from is not None else EXIT_PROBLEMS


def _manifest(args: argparse.Namespace) -> int:
    from envcheck.ckpt import manifest
    from envcheck.ckpt.layout import discover
    from envcheck.ckpt.model import Report
    from envcheck.ckpt.verify import run_problems, verify_all
    from envcheck.errors import UsageError
    from envcheck.formats.jsonfmt import dumps

    kind, checkpoints, facts = discover(args.path)
    sealed = [c for c in checkpoints if os.path.exists(os.path.join(c.path, manifest.NAME))]
    if sealed and not args.force and kind == "checkpoint":
        raise UsageError(f"{os.path.join(sealed[0].path, manifest.NAME)} exists; use --force to replace it")
    fresh = [c for c in checkpoints if args.force or c not in sealed]
    verdicts = {v.checkpoint.path: v for v in verify_all(fresh, deep=True, use_manifest=False,
                                                          progress=_progress(args))}
    kept = {v.checkpoint.path: v for v in verify_all([c for c in checkpoints if c not in fresh], deep=False)}
    written, refused = [], []
    for ckpt in checkpoints:
        verdict = verdicts.get(ckpt.path)
        if verdict is None:
            continue
        if not verdict.whole:
            refused.append(verdict)
            continue
        try:
            written.append(manifest.write(ckpt.path, list(verdict.files), force=args.force))
        except FileExistsError:
            raise UsageError(f"{os.path.join(ckpt.path, manifest.NAME)} appeared while hashing; use --force "
                             "to replace it") from None
        except OSError as error:
            raise UsageError(f"cannot write {os.path.join(ckpt.path, manifest.NAME)}: {error.strerror}") from None
    all_verdicts = tuple(verdicts.get(c.path) or kept[c.path] for c in checkpoints)
    report = Report(path=os.path.abspath(args.path), kind=kind, verdicts=all_verdicts,
                    problems=tuple(run_problems(facts, list(all_verdicts))), resume_from=None, deep=True)
    if args.json:
        document = report.to_dict()
        document["manifests_written"] = written
        document["manifests_kept"] = [os.path.join(c.path, manifest.NAME) for c in checkpoints if c not in fresh]
        sys.stdout.write(dumps(document))
    else:
        for path in written:
            print(f"wrote {path}")
        for ckpt in checkpoints:
            if ckpt not in fresh:
                state = kept[ckpt.path].status
                print(f"kept {os.path.join(ckpt.path, manifest.NAME)} (exists; --force replaces it; {state})")
        for verdict in refused:
            first = verdict.problems[0]
            print(f"not sealed {verdict.checkpoint.path}: {verdict.status}: {first.kind} {first.file}: "
                  f"{first.detail}")
    bad = refused or any(not v.whole for v in kept.values()) or report.problems
    return EXIT_PROBLEMS if bad else EXIT_OK
