"""`envcheck alerts --format prometheus [--rules FILE]`: the guard's rules as Prometheus alerting rules over
dcgm-exporter and node_exporter metrics, with the same thresholds. Only this module prints."""

from __future__ import annotations

import argparse
import sys

NAME = "alerts"


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    from envcheck.helptext import help_kwargs

    parser = subparsers.add_parser(NAME, help="the guard's alert rules for Prometheus (dcgm-exporter, node_exporter)",
                                   **help_kwargs(
        "Print envcheck guard's alert rules (the bundled rules.toml, or --rules FILE) as a Prometheus rule file over "
        "dcgm-exporter (DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE, DCGM_FI_DEV_XID_ERRORS) and node_exporter "
        "(node_memory_MemAvailable_bytes, node_vmstat_oom_kill, node_filesystem_*) metrics, with the same "
        "thresholds. Check it with `promtool check rules`.",
        ("envcheck alerts --format prometheus > envcheck-guard.rules.yml",
         "envcheck alerts --format prometheus --rules my-rules.toml | promtool check rules /dev/stdin"),
        (("0", "the rules were printed"),)))
    parser.add_argument("--format", choices=("prometheus",), default="prometheus", help="output format "
                                                                                        "(default: prometheus)")
    parser.add_argument("--rules", metavar="FILE", help="guard rules (TOML; default: the bundled rules.toml)")
    parser.add_argument("--json", action="store_true", help='one JSON document: {"rules": [{"alert", "expr", '
                                                            '"for", "severity", "guard_rule"}]}')


def run(args: argparse.Namespace) -> int:
    from envcheck.guard import rules as rules_mod
    from envcheck.guard.prometheus import _camel, expression, rules_yaml

    rules = rules_mod.load(args.rules)
    if args.json:
        import json

        sys.stdout.write(json.dumps({"format": args.format, "rules": [
            {"alert": _camel(r.id), "expr": expression(r), "for_s": r.for_s, "severity": r.severity,
             "guard_rule": r.id} for r in rules if expression(r)]}, indent=2) + "\n")
    else:
        sys.stdout.write(rules_yaml(rules))
    return 0
