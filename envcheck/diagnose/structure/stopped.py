"""A run its user or its scheduler stopped: mpirun forwarding the user's Ctrl-C, Slurm cancelling the job (scancel,
its time limit, a preemption, another task's failure).

Why: the ranks then die of the signals the launcher sends (mpirun's `exited on signal 9 (Killed)`), which alone would
read as the kernel's OOM killer. The event is a hint of kind INTERRUPTED, like a KeyboardInterrupt: combine drops a
weak host_oom (a signal and nothing else) beside it. A memory kill of Slurm's own (`exceeded memory limit`, its
oom_kill events) keeps its stronger rules."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.structure.tracebacks import INTERRUPTED

ANCHORS = (b"Forwarding signal ", b" CANCELLED AT ")
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
    for line in lines:
        if _FORWARDED.search(line.text) or _CANCELLED.search(line.text):
            return [Event(INTERRUPTED, "", 0.0, "the run was stopped by its user or its scheduler", "", "", line.file,
                          line.number, line.text, "")]
    return []
