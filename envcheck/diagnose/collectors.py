"""The time stamps that log collectors and loggers put before every line, taken off for a second reading (pasted.py).

Why: a rule anchored at a line's start (the shell's `Killed`) and a traceback, whose frames the scan finds under its
header's prefix, are lost when every line starts with a stamp that changes from line to line: journald's and
syslog's, the container runtime's log files (CRI), Python logging's and glog's. prefixes.py takes off the launchers'
prefixes that do not change (a rank, a host) and docker's own stamp in the main scan; these, only when the log as it
is names no cause.

A format is taken off only when it starts at least half of the log's non-blank lines (one stamped line in a paste is
a line, not a log collector's), and only from the lines it starts; a level it carries stays.
"""

from __future__ import annotations

import re

_TIME = rb"\d\d:\d\d:\d\d(?:[.,]\d+)?"
_DATE_TIME = rb"\d{4}-\d\d-\d\d[ T]" + _TIME + rb"(?:Z|[+-]\d\d:?\d\d)?"
_LEVEL = rb"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
# (the format, what of it stays): the times and thread ids go; a level stays, as rules that leave out a logger's
# INFO and WARNING lines (JAX's backend notices, NVML's, DeepSpeed's [WARNING]) and glog's W lines read it, and a
# logger's message is no shell's or compiler's line start ('WARNING - Killed stale process 4123')
FORMATS = (
    # syslog and `journalctl` (short): 'Dec 04 01:02:03 gpu-node07 python[1234]: '
    (re.compile(rb"^[A-Z][a-z]{2} [ \d]\d " + _TIME + rb" \S+ [\w./@:-]+(?:\[\d+\])?: "), b""),
    # the CRI log files of Kubernetes' containers: '2024-05-01T10:00:00.123456789Z stderr F '
    (re.compile(rb"^" + _DATE_TIME + rb" (?:stdout|stderr) [FP] "), b""),
    # a stamp alone or before a level (Python logging's '2024-05-01 10:00:00,123 - ERROR - ', DeepSpeed's
    # '[2024-05-01 10:00:00,123] [INFO] ', loguru's '2024-05-01 10:00:00.123 | ERROR    | ', `docker logs -t`'s):
    # one space after it, so the line's own indentation stays
    (re.compile(rb"^\[?" + _DATE_TIME + rb"\]? (?:[-|] )?"), b""),
    # vLLM's: 'ERROR 10-13 09:06:25 [multiproc_executor.py:597] '
    (re.compile(rb"^(" + _LEVEL + rb") \d\d-\d\d " + _TIME + rb" (?=\[[^\]\n]+\] )"), rb"\1 "),
    # glog's (TensorFlow, XLA, Paddle): 'E0501 10:00:00.123456 12345 main.cc:42] ' -> 'E0501 main.cc:42] '
    (re.compile(rb"^([IWEF]\d{4}) " + _TIME + rb"\s+\d+ (?=[\w./-]+:\d+\] )"), rb"\1 "),
)


def unstamped(data: bytes) -> bytes:
    """DATA without the stamp format that starts at least half of its non-blank lines (DATA itself when none does)."""
    lines = data.split(b"\n")
    filled = sum(1 for line in lines if line.strip())
    if not filled:
        return data
    best, count = FORMATS[0], 0
    for form in FORMATS:
        found = sum(1 for line in lines if form[0].match(line))
        if found > count:
            best, count = form, found
    if not count or 2 * count < filled:
        return data
    regex, kept = best
    return b"\n".join(regex.sub(kept, line, count=1) for line in lines)
