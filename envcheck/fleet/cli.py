"""`envcheck fleet`: probe every node of a job through srun, pdsh or ssh, judge each with the doctor, and report
what differs across nodes. Parsing is cheap; the engine, the checks and the matrix load when it runs. Only this
module prints."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from envcheck.errors import UsageError
from envcheck.helptext import help_kwargs

NAME = "fleet"


def add_parser(subparsers) -> None:  # type: ignore[no-untyped-def]
    from envcheck.doctor.cli import add_report_options
    from envcheck.probes.cli import positive_seconds

    parser = subparsers.add_parser(NAME, help="probe every node of a job (srun, pdsh, ssh) and show what differs",
                                   **help_kwargs(
        "Run 'envcheck probe --json' on every node through an engine the cluster already has (srun inside a Slurm "
        "allocation, pdsh with a DeepSpeed hostfile or a host list, or ssh), judge each node with the doctor, and "
        "compare the nodes: driver and CUDA, GPUs, torch and its CUDA, NCCL, cuDNN, every Python distribution, the "
        "interpreter, NCCL_*/TORCH_NCCL_*/CUDA_VISIBLE_DEVICES, NCCL_SOCKET_IFNAME against each node's interfaces, "
        "InfiniBand devices, /dev/shm and memory. Findings name the nodes that differ from the majority; identical "
        "nodes are grouped. envcheck runs on a node from this interpreter's path when the node has it (a shared "
        "filesystem), else it is shipped as envcheck.pyz over ssh or srun. JSON output: docs/fleet-json.md.",
        ("envcheck fleet --slurm                                  # inside salloc/sbatch: one srun task per node",
         "envcheck fleet --hostfile /job/hostfile --via pdsh      # DeepSpeed's 'host slots=N' file",
         "envcheck fleet --hosts gpu[01-16] --via ssh --python /shared/envs/train/bin/python",
         "envcheck fleet --hosts node[1-64] --via pdsh --rcmd exec --format markdown   # simulated nodes"),
        (("0", "every node answered and nothing at or above --fail-on, on any node or across nodes"),
         ("1", "a finding at or above --fail-on (default: error) on a node or across nodes, or a node that "
               "could not be probed"))))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--hostfile", metavar="FILE", help="DeepSpeed hostfile: one 'hostname slots=N' a line")
    where.add_argument("--hosts", metavar="LIST", help="host list with ranges, e.g. node[1-4,7],gpu01")
    where.add_argument("--slurm", action="store_true", help="the nodes of this Slurm allocation (SLURM_JOB_NODELIST)")
    parser.add_argument("--via", choices=("srun", "pdsh", "ssh"),
                        help="engine (default: srun with --slurm, else pdsh when installed, else ssh)")
    parser.add_argument("--rcmd", metavar="MODULE", help="pdsh's -R: ssh, rsh or exec (exec runs the command "
                        "locally once per host with %%h substituted: simulated nodes); default PDSH_RCMD_TYPE")
    parser.add_argument("--python", metavar="PATH",
                        help="the interpreter whose environment to examine on every node; $VARS expand on the node "
                             "($SLURMD_NODENAME), and so does pdsh's %%h")
    parser.add_argument("--timeout", type=positive_seconds, default=120.0, metavar="S",
                        help="time limit for each node's probe (default 120)")
    parser.add_argument("--ship", choices=("auto", "always", "never"), default="auto",
                        help="send envcheck.pyz over the engine: when a node lacks envcheck at this interpreter's path "
                             "(auto, default), always, or never")
    parser.add_argument("--envcheck-command", metavar="CMD",
                        help="how to run envcheck on the nodes instead (e.g. /shared/venv/bin/envcheck); "
                             "'probe --json' is appended")
    add_report_options(parser, "docs/fleet-json.md")


def _nodes(args: argparse.Namespace) -> tuple[str, ...]:
    from envcheck.fleet.hosts import expand, read_hostfile, slurm_nodes

    if args.hostfile:
        return read_hostfile(args.hostfile)
    if args.hosts is not None:
        nodes = expand(args.hosts)
        if not nodes:
            raise UsageError("--hosts: no hosts in it")
        return nodes
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        raise UsageError("--slurm: SLURM_JOB_NODELIST is not set; run inside an allocation (salloc or sbatch)")
    return slurm_nodes(nodelist)


def _via(args: argparse.Namespace) -> str:
    via = args.via or ("srun" if args.slurm else "pdsh" if shutil.which("pdsh") else "ssh")
    if via == "srun" and not args.slurm and not os.environ.get("SLURM_JOB_ID"):
        raise UsageError("--via srun runs inside a Slurm allocation: use --slurm within salloc or sbatch")
    if shutil.which(via) is None:
        raise UsageError(f"--via {via}: {via} is not on PATH")
    if args.rcmd and via != "pdsh":
        raise UsageError("--rcmd is pdsh's -R; it needs --via pdsh")
    return via


def run(args: argparse.Namespace) -> int:
    began = time.monotonic()
    nodes = _nodes(args)
    via = _via(args)
    from envcheck.checks.model import Severity
    from envcheck.fleet.collect import judge, probe_nodes
    from envcheck.fleet.engines import choose
    from envcheck.fleet.remote import RemotePlan
    from envcheck.fleet.render import render_markdown, render_text, to_json
    from envcheck.formats.jsonfmt import dumps
    from envcheck.matrix import MatrixError, load_matrix

    plan = RemotePlan(exe=sys.executable, python=args.python, ship=args.ship, command=args.envcheck_command)
    if sys.stderr.isatty() and args.format != "json":
        print(f"envcheck: probing {len(nodes)} nodes via {via}...", file=sys.stderr, flush=True)
    results = probe_nodes(nodes, choose(via, args.rcmd), plan, args.timeout)
    try:
        matrix = load_matrix(None)
    except MatrixError as error:
        print(f"envcheck: warning: the compatibility matrix is unusable ({error}); matrix checks skipped",
              file=sys.stderr)
        matrix = None
    report = judge(results, via, matrix, getattr(matrix, "data_version", None), began, args.select, args.ignore)
    fmt = args.format or "text"
    if fmt == "json":
        sys.stdout.write(dumps(to_json(report)))
    elif fmt == "markdown":
        sys.stdout.write(render_markdown(report))
    else:
        sys.stdout.write(render_text(report))
    return 1 if report.fails(Severity.parse(args.fail_on)) else 0
