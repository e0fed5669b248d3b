"""Engines: adapters that run one command on every node through a tool the cluster already has, and return each
node's output. Nothing here knows what the command is; nothing here raises for a node that fails: a node that
cannot be reached or runs out of time is a NodeOutput that says so.

- ssh: one `ssh -o BatchMode=yes HOST 'sh -c SCRIPT'` per node, many at once, each with its own time limit.
- pdsh: `pdsh -S -f FANOUT -u TIMEOUT -w HOSTS` (DeepSpeed's invocation); `-R exec` runs the command locally once
  per host with %h substituted, the way to simulate N nodes on one machine.
- srun: one task per node of the allocation (`srun --overlap -N N -w NODES --ntasks-per-node=1 -l`), stdin
  broadcast to every task with `--input=all` when envcheck is shipped.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from envcheck.fleet.model import NodeOutput

SLACK_S = 15.0  # beyond --timeout, for the engine itself to report and exit


class Engine(Protocol):
    name: str

    def run(self, nodes: tuple[str, ...], script: str, stdin: bytes | None, timeout: float) -> dict[str, NodeOutput]:
        ...


@dataclass(frozen=True)
class Finished:
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    duration_s: float


def run_process(argv: list[str], stdin: bytes | None, timeout: float, env: dict[str, str] | None = None) -> Finished:
    """Run argv to its end or to `timeout`, then stop its process group; keep what it wrote either way."""
    began = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            child = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                     stdout=out, stderr=err, start_new_session=True, env=env)
        except OSError as error:
            return Finished("", f"cannot run {argv[0]}: {error.strerror or error}", None, False, 0.0)
        timed_out = False
        try:
            child.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(child)
        out.seek(0)
        err.seek(0)
        return Finished(out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                        None if timed_out else child.returncode, timed_out, time.monotonic() - began)


def _stop(child: subprocess.Popen) -> None:  # type: ignore[type-arg]
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except OSError:
            pass
        try:
            child.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class Ssh:
    name: str = "ssh"
    carries_stdin: bool = True
    parallel: int = 64
    ssh: str = "ssh"

    def run(self, nodes: tuple[str, ...], script: str, stdin: bytes | None, timeout: float) -> dict[str, NodeOutput]:
        remote = f"sh -c {shlex.quote(script)}"

        def one(node: str) -> NodeOutput:
            argv = [self.ssh, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, min(int(timeout), 30))}", node,
                    remote]
            done = run_process(argv, stdin, timeout)
            return NodeOutput(node, done.stdout, done.stderr, done.exit_code, done.timed_out, done.duration_s)

        with ThreadPoolExecutor(max_workers=max(1, min(self.parallel, len(nodes)))) as pool:
            return {output.node: output for output in pool.map(one, nodes)}


_PDSH_LINE = re.compile(r"^(?P<host>[^\s:]+): ?(?P<text>.*)$")
_PDSH_STATUS = re.compile(r"^pdsh@[^:]*: (?P<host>[^\s:]+): .*exited with exit code (?P<rc>\d+)")
_PDSH_TIMEOUT = re.compile(r"^pdsh@[^:]*: (?P<host>[^\s:]+): command timeout")
_PDSH_SIGNAL = re.compile(r"^pdsh@[^:]*: (?P<host>[^\s:]+): .*killed by signal (?P<sig>\d+)")


@dataclass(frozen=True)
class Pdsh:
    name: str = "pdsh"
    carries_stdin: bool = False  # pdsh does not forward stdin to the nodes
    rcmd: str | None = None  # pdsh -R (ssh, exec, ...); None: PDSH_RCMD_TYPE or pdsh's default
    fanout: int = 1024

    def run(self, nodes: tuple[str, ...], script: str, stdin: bytes | None, timeout: float) -> dict[str, NodeOutput]:
        rcmd = self.rcmd or os.environ.get("PDSH_RCMD_TYPE")
        argv = ["pdsh", "-S", "-f", str(self.fanout), "-u", str(max(1, int(round(timeout)))), "-w", ",".join(nodes)]
        if self.rcmd:
            argv += ["-R", self.rcmd]
        # exec runs argv itself; remote modules join the words into one line for the node's shell
        argv += ["sh", "-c", script] if rcmd == "exec" else ["sh", "-c", shlex.quote(script)]
        done = run_process(argv, None, timeout + SLACK_S)
        return split_pdsh(nodes, done)


def split_pdsh(nodes: tuple[str, ...], done: Finished) -> dict[str, NodeOutput]:
    """pdsh prefixes every line with `host: `; its own reports (`pdsh@me: host: ...`) say how each host ended."""
    out: dict[str, list[str]] = {node: [] for node in nodes}
    err: dict[str, list[str]] = {node: [] for node in nodes}
    codes: dict[str, int] = {}
    late: set[str] = set()
    for line in done.stdout.splitlines():
        match = _PDSH_LINE.match(line)
        if match and match.group("host") in out:
            out[match.group("host")].append(match.group("text"))
    for line in done.stderr.splitlines():
        for pattern in (_PDSH_TIMEOUT, _PDSH_STATUS, _PDSH_SIGNAL):
            match = pattern.match(line)
            if match and match.group("host") in err:
                host = match.group("host")
                if pattern is _PDSH_TIMEOUT:
                    late.add(host)
                elif pattern is _PDSH_STATUS:
                    codes[host] = int(match.group("rc"))
                else:
                    codes.setdefault(host, 128 + int(match.group("sig")))
                err[host].append(line)
                break
        else:
            match = _PDSH_LINE.match(line)
            if match and match.group("host") in err:
                err[match.group("host")].append(match.group("text"))
    return {node: NodeOutput(node, "\n".join(out[node]) + "\n", "\n".join(err[node]), codes.get(node, None if
                             node in late else 0 if out[node] else None),
                             node in late or (done.timed_out and node not in codes and not out[node]), done.duration_s)
            for node in nodes}


_SRUN_LINE = re.compile(r"^\s*(?P<task>\d+): ?(?P<text>.*)$")
_SRUN_TASK = re.compile(r"^srun: error: (?P<node>[^\s:]+): task (?P<task>\d+): (?P<what>.*)$")


@dataclass(frozen=True)
class Srun:
    name: str = "srun"
    carries_stdin: bool = True  # --input=all

    def run(self, nodes: tuple[str, ...], script: str, stdin: bytes | None, timeout: float) -> dict[str, NodeOutput]:
        argv = ["srun", "--overlap", "-N", str(len(nodes)), "-n", str(len(nodes)), "--ntasks-per-node=1",
                "-w", ",".join(nodes), "-l", "--kill-on-bad-exit=0"]
        if stdin is not None:
            argv.append("--input=all")
        argv += ["sh", "-c", script]
        done = run_process(argv, stdin, timeout + SLACK_S / 3)
        return split_srun(nodes, done)


def split_srun(nodes: tuple[str, ...], done: Finished) -> dict[str, NodeOutput]:
    """srun -l labels lines with the task number; the script's marker names the node of each task, and srun's own
    `srun: error: NODE: task N: ...` lines name the node of a task that failed."""
    from envcheck.fleet.remote import parse

    by_task: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        match = _SRUN_LINE.match(line)
        if match:
            by_task.setdefault(int(match.group("task")), []).append(match.group("text"))
    task_node: dict[int, str] = {}
    task_errors: dict[int, list[str]] = {}
    for line in done.stderr.splitlines():
        match = _SRUN_TASK.match(line)
        if match:
            task_node.setdefault(int(match.group("task")), match.group("node"))
            task_errors.setdefault(int(match.group("task")), []).append(line)
    found: dict[str, NodeOutput] = {}
    for task, lines in sorted(by_task.items()):
        text = "\n".join(lines) + "\n"
        node = parse(text).node or task_node.get(task)
        if node in nodes and node not in found:
            found[node] = NodeOutput(node, text, "\n".join(task_errors.get(task, [])), parse(text).exit_code,
                                     False, done.duration_s)
    general = "\n".join(line for line in done.stderr.splitlines() if not _SRUN_TASK.match(line))[-2000:]
    for node in nodes:
        if node not in found:
            errors = [line for task, lines in task_errors.items() if task_node.get(task) == node for line in lines]
            found[node] = NodeOutput(node, "", "\n".join(errors) or general, None if done.timed_out else
                                     done.exit_code, done.timed_out, done.duration_s)
    return found


def choose(via: str, rcmd: str | None) -> Engine:
    if via == "ssh":
        return Ssh()
    if via == "pdsh":
        return Pdsh(rcmd=rcmd)
    return Srun()
