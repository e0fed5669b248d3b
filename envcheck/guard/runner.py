"""Run COMMAND in its own process group, tee its output, forward signals, sample in a thread.

The training process is never blocked by the guard: its output is drained by a thread that only copies bytes, and
the samplers run in another thread at --interval. Nothing here prints: lines for the user go through `say`, the
command's output through `echo`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from envcheck.guard import rules as rules_mod
from envcheck.guard.model import Alert, Rule, Sample
from envcheck.guard.notify import Notifier
from envcheck.guard.samplers import Nvml, Sampler
from envcheck.serde import to_dict

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
KEEP_SAMPLES = 600  # the last samples kept in memory for the post-mortem's timeline


class CommandNotRunnable(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Config:
    command: tuple[str, ...]
    out_dir: str
    interval: float = 5.0
    rules: tuple[Rule, ...] = ()
    webhook: str | None = None
    on_alert: str | None = None
    textfile_dir: str | None = None


@dataclass(frozen=True)
class Result:
    pid: int
    returncode: int  # as subprocess reports it: -N for a signal
    status: int  # as a shell reports it: 128 + N for a signal
    started: float
    ended: float
    signals: tuple[str, ...]  # signals the guard received and forwarded
    samples: tuple[Sample, ...]  # the last KEEP_SAMPLES
    sample_count: int
    alerts: tuple[Alert, ...]
    seen: dict[int, dict[str, Any]]  # every pid of the tree the samplers saw
    first_oom: dict[str, int]  # cgroup -> its oom_kill counter when first seen
    sampler_cpu_s: float  # CPU time the sampling thread used
    notes: tuple[str, ...] = field(default=())


def shell_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run(config: Config, say: Callable[[str], None], echo: Callable[[bytes], None],
        nvml: Nvml | None = None) -> Result:
    os.makedirs(config.out_dir, exist_ok=True)
    log = open(os.path.join(config.out_dir, "train.log"), "ab")
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")  # a Python command's last lines reach train.log before it dies
    env.setdefault("PYTHONFAULTHANDLER", "1")  # and a crash prints the Python stack
    extra: dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    # In its own process group the command would be stopped (SIGTTIN) reading the terminal: it gets /dev/null then.
    stdin = subprocess.DEVNULL if sys.stdin is not None and sys.stdin.isatty() else None
    started = time.time()
    try:
        child = subprocess.Popen(list(config.command), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 env=env, **extra)
    except FileNotFoundError:
        log.close()
        raise CommandNotRunnable(f"{config.command[0]}: command not found", 127) from None
    except PermissionError:
        log.close()
        raise CommandNotRunnable(f"{config.command[0]}: permission denied", 126) from None
    received: list[str] = []

    def forward(number: int, _frame: object) -> None:
        received.append(signal.Signals(number).name)
        try:
            os.killpg(child.pid, number)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    stop = threading.Event()
    state = _SamplerState(config, say, started, child.pid, nvml)
    tee = threading.Thread(target=_tee, args=(child.stdout, log, echo), daemon=True, name="envcheck-guard-tee")
    sampling = threading.Thread(target=state.loop, args=(stop,), daemon=True, name="envcheck-guard-sampler")
    tee.start()
    sampling.start()
    try:
        returncode = child.wait()
    finally:
        ended = time.time()
        stop.set()
        sampling.join(30)
        tee.join(2)  # orphans may hold the pipe open: do not wait for them
        log.close()
        state.notifier.drain()
        for number, handler in previous.items():
            signal.signal(number, handler)
    notes = tuple(state.notes + state.notifier.failures)
    return Result(child.pid, returncode, shell_status(returncode), started, ended, tuple(received),
                  tuple(state.kept), state.count, tuple(state.notifier.alerts), state.sampler.tree.seen,
                  state.first_oom, state.cpu, notes)


def _tee(stream: Any, log: Any, echo: Callable[[bytes], None]) -> None:
    fd = stream.fileno()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        log.write(chunk)
        log.flush()
        try:
            echo(chunk)
        except (OSError, ValueError):
            pass  # a closed terminal must not stop the log


class _SamplerState:
    def __init__(self, config: Config, say: Callable[[str], None], started: float, pid: int,
                 nvml: Nvml | None) -> None:
        self.config, self.say = config, say
        self.sampler = Sampler(pid, config.out_dir, started, nvml)
        self.evaluator = rules_mod.Evaluator(config.rules)
        self.notifier = Notifier(config.rules, os.path.join(config.out_dir, "alerts.jsonl"), say, config.webhook,
                                 config.on_alert)
        self.kept: list[Sample] = []
        self.count = 0
        self.first_oom: dict[str, int] = {}
        self.notes: list[str] = []
        self.cpu = 0.0

    def loop(self, stop: threading.Event) -> None:
        began = time.thread_time()
        with open(os.path.join(self.config.out_dir, "metrics"), "a", encoding="utf-8") as metrics:
            while True:
                last = stop.is_set()  # one more sample after the command ended: the cgroup's final counter
                tick = time.monotonic()
                try:
                    self.once(metrics)
                except Exception as error:  # a sampler bug must not take the run down
                    self.notes.append(f"sampler: {type(error).__name__}: {error}")
                self.cpu = time.thread_time() - began
                if last:
                    break
                stop.wait(max(0.0, self.config.interval - (time.monotonic() - tick)))

    def once(self, metrics: Any) -> None:
        sample = self.sampler.sample()
        self.count += 1
        for why in sample.skipped:
            self.say(f"sampler skipped: {why}")
        if sample.cgroup is not None and sample.cgroup_oom_kills is not None:
            self.first_oom.setdefault(sample.cgroup, sample.cgroup_oom_kills)
        metrics.write(json.dumps(to_dict(sample), separators=(",", ":")) + "\n")
        metrics.flush()
        self.kept.append(sample)
        if len(self.kept) > KEEP_SAMPLES:
            del self.kept[: len(self.kept) - KEEP_SAMPLES]
        self.notifier.send(self.evaluator.feed(sample))
        if self.config.textfile_dir:
            from envcheck.guard.prometheus import write_textfile

            try:
                write_textfile(self.config.textfile_dir, sample, self.evaluator.counters, self.notifier.alerts)
            except OSError as error:
                if not self.notes or "textfile" not in self.notes[-1]:
                    self.notes.append(f"textfile: {error}")
