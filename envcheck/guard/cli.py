"""`envcheck guard [options] -- COMMAND [ARGS...]`: run and watch a training command. Only this module prints.

Exit status: COMMAND's, as a shell reports it (128 + N when a signal killed it; 127 not found, 126 not runnable);
2 for bad flags before COMMAND started."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

NAME = "guard"


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    from envcheck.helptext import help_kwargs

    parser = subparsers.add_parser(NAME, help="run and watch a training command; save the scene if it dies",
                                   **help_kwargs(
        "Run COMMAND in its own process group (signals are passed on), tee its output to DIR/train.log, sample the "
        "memory of its whole process tree, its memory cgroup, /dev/shm, the disk of DIR and the GPUs (NVML) every "
        "--interval seconds into DIR/metrics, and alert by rules (bundled rules.toml, or --rules) on stderr, in "
        "DIR/alerts.jsonl, to --webhook and --on-alert. After an abnormal end (non-zero exit, a signal, an OOM kill) "
        "it writes DIR/postmortem.json, postmortem.md and timeline.svg: who died of what, the OOM killer's record, "
        "the log's last lines, the memory timeline, doctor findings and diagnose's causes. JSON: docs/guard-json.md.",
        ("envcheck guard --out runs/sft -- llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml",
         "envcheck guard --interval 2 --webhook http://alerts.internal:9000/hook -- torchrun --nproc_per_node 8 "
         "train.py",
         "envcheck guard --textfile /var/lib/node_exporter/textfile -- deepspeed train.py --deepspeed ds.json",
         "envcheck guard --on-alert 'notify-send \"$ENVCHECK_ALERT_MESSAGE\"' -- python train.py"),
        (("0", "COMMAND exited 0"), ("N", "COMMAND's own exit status, as a shell reports it"),
         ("128+N", "COMMAND was killed by signal N (137 SIGKILL, e.g. the OOM killer; 139 SIGSEGV; 135 SIGBUS)"),
         ("127", "COMMAND was not found (126: not executable)"))))
    parser.add_argument("--interval", type=_interval, default=5.0, metavar="S",
                        help="seconds between samples (default: 5)")
    parser.add_argument("--rules", metavar="FILE", help="alert rules (TOML; default: the bundled rules.toml)")
    parser.add_argument("--out", metavar="DIR", help="where train.log, metrics, alerts.jsonl and the post-mortem go "
                                                     "(default: ./guard-YYYYmmdd-HHMMSS)")
    parser.add_argument("--webhook", metavar="URL", help="POST each alert as JSON to URL (5 s timeout)")
    parser.add_argument("--on-alert", metavar="CMD", help="run CMD (a shell line) for each alert, with "
                                                          "ENVCHECK_ALERT_RULE, _SEVERITY, _MESSAGE and _JSON set")
    parser.add_argument("--textfile", metavar="DIR", help="write node_exporter textfile-collector metrics "
                                                          "(envcheck_guard.prom) into DIR at every sample")
    parser.add_argument("--json", action="store_true", help="COMMAND's output goes to stderr; one JSON summary "
                                                            "on stdout at the end (docs/guard-json.md)")
    parser.add_argument("guarded", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{value:g} s is outside 0.05..3600")
    return value


def _say(message: str) -> None:
    print(f"envcheck guard: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from envcheck.errors import UsageError
    from envcheck.guard import rules as rules_mod
    from envcheck.guard.runner import CommandNotRunnable, Config
    from envcheck.guard.runner import run as run_guarded

    command = list(args.guarded)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("envcheck guard needs a command after '--' (e.g. envcheck guard -- python train.py)")
    if args.webhook and not args.webhook.startswith(("http://", "https://")):
        raise UsageError(f"--webhook {args.webhook}: expected an http:// or https:// URL")
    out_dir = args.out or time.strftime("guard-%Y%m%d-%H%M%S")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"--out {out_dir}: exists and is not a directory")
    config = Config(tuple(command), out_dir, args.interval, rules_mod.load(args.rules), args.webhook, args.on_alert,
                    args.textfile)
    stream = sys.stderr if args.json else sys.stdout

    def echo(chunk: bytes) -> None:
        stream.buffer.write(chunk)
        stream.buffer.flush()

    try:
        result = run_guarded(config, _say, echo)
    except CommandNotRunnable as error:
        _say(str(error))
        return error.status
    postmortem_path = None
    try:
        postmortem_path, headline = _after(config, result)
        if headline:
            _say(headline)
    except Exception as error:  # the command's status is the contract: a post-mortem failure only says so
        _say(f"could not write the post-mortem: {type(error).__name__}: {error}")
    for note in result.notes:
        _say(note)
    if args.json:
        sys.stdout.write(json.dumps({"status": result.status, "returncode": result.returncode, "out": out_dir,
                                     "postmortem": postmortem_path, "alerts": len(result.alerts),
                                     "samples": result.sample_count, "sampler_cpu_s": round(result.sampler_cpu_s, 4),
                                     "duration_s": round(result.ended - result.started, 3)}, indent=2) + "\n")
    return result.status


def _after(config, result):  # type: ignore[no-untyped-def]
    """Write the post-mortem after an abnormal end; (its path, one line for the user) or (None, None)."""
    from envcheck.guard import postmortem, render
    from envcheck.serde import to_dict

    events, kernel_why = postmortem.read_kernel()
    kills = postmortem.run_kills(result, events)
    why = postmortem.reasons(result, kills)
    if not why:
        return None, None
    pm = postmortem.build(config, result, why, kills, kernel_why, _capture)
    path = os.path.join(config.out_dir, "postmortem.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(to_dict(pm), handle, indent=2, sort_keys=True)
        handle.write("\n")
    with open(os.path.join(config.out_dir, "postmortem.md"), "w", encoding="utf-8") as handle:
        handle.write(render.markdown(pm))
    with open(os.path.join(config.out_dir, "timeline.svg"), "w", encoding="utf-8") as handle:
        handle.write(render.svg(result.samples, result.alerts, " ".join(pm.command)[:100]))
    short = render.summary(pm)
    cause = f"; primary cause: {short['cause']}" if short["cause"] else ""
    return path, f"{'; '.join(why)}{cause}; post-mortem in {path} (and postmortem.md, timeline.svg)"


def _capture():  # type: ignore[no-untyped-def]
    if os.environ.get("ENVCHECK_GUARD_NO_SNAPSHOT"):
        return None
    from envcheck.capture import capture

    return capture(python=None, deep=False, progress=lambda message: None, import_timeout=60.0)
