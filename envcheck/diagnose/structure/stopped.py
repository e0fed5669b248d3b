"""A run its user or its scheduler stopped: Python's KeyboardInterrupt or torch elastic's SIGINT (the user's Ctrl-C),
mpirun forwarding it, Slurm cancelling the job (scancel, its time limit, a preemption, another task's failure).

Why: the ranks then die of the signals the launcher sends (mpirun's `exited on signal 9 (Killed)`), which alone would
read as the kernel's OOM killer. The event is a hint of kind INTERRUPTED, like a KeyboardInterrupt: combine drops a
weak host_oom (a signal and nothing else) beside it. A memory kill of Slurm's own (`exceeded memory limit`, its
oom_kill events) keeps its stronger rules."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

# An Event of this kind says the user stopped the run (Ctrl-C: a KeyboardInterrupt traceback); it is no cause itself:
# the aborts of threads still joinable at the interrupted interpreter's exit ('terminate called without an active
# exception', 'Aborted') are then no crash to hunt, and a weak segfault_other (<= WEAK_CRASH) is dropped.
INTERRUPTED = "interrupted"
WEAK_CRASH = 0.5
# Python's KeyboardInterrupt line, torch elastic's "Received Signals.SIGINT death signal" (api.py _terminate_process)
_CTRL_C = re.compile(r"^\W{0,3}KeyboardInterrupt\b|Received Signals\.SIGINT death signal")


def interrupted(lines: list[Line]) -> list[Event]:
    """A hint (no cause) when the log shows the user stopping the run with Ctrl-C."""
    hit = next((line for line in lines if _CTRL_C.search(line.text)), None)
    return [Event(INTERRUPTED, "", 0.0, "the run was interrupted (Ctrl-C)", "", "", hit.file, hit.number, hit.text,
                  "")] if hit is not None else []


ANCHORS = (b"Forwarding signal ", b" CANCELLED AT ", b"KeyboardInterrupt", b"Signals.SIGINT death signal")
# Open MPI's orterun/prterun: "mpirun: Forwarding signal 2 to job" (SIGINT, SIGTERM, ...: the user's or a scheduler's);
# Open MPI 5's PRRTE prints "PRTE: Forwarding signal 2 to job" (prrte src/tools/prte/prte.c)
_FORWARDED = re.compile(r"(?:mpirun|prterun|orterun|PRTE): Forwarding signal (?:2|15)\b")
# slurmstepd (src/slurmd/slurmstepd/req.c): "*** JOB 123 ON node CANCELLED AT <time> ***", or with why: " DUE TO TIME
# LIMIT", " DUE TO PREEMPTION", " DUE TO JOB REQUEUE", " DUE to SIGNAL Terminated" (scancel), " DUE TO TASK FAILURE"
# (another task failed: Slurm killed the rest). Not " DUE TO NODE FAILURE": the node, not a stop, ended the run.
# Older releases put the node last or left it out: "*** STEP 12.0 CANCELLED AT <time> *** on node",
# "*** JOB 12 CANCELLED AT <time> DUE TO TIME LIMIT on node ***".
_CANCELLED = re.compile(r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+"
                        r"(?: DUE (?:TO|to) (?:TIME LIMIT|PREEMPTION|JOB REQUEUE|TASK FAILURE|SIGNAL \w+))?"
                        r"(?: on \S+)? \*\*\*")


def events(lines: list[Line]) -> list[Event]:
    """A hint (no cause) when a launcher forwards the user's Ctrl-C or Slurm cancels the job."""
    for line in lines:
        if _FORWARDED.search(line.text) or _CANCELLED.search(line.text):
            return [Event(INTERRUPTED, "", 0.0, "the run was stopped by its user or its scheduler", "", "", line.file,
                          line.number, line.text, "")]
    return []
