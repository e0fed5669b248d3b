"""Where a paste that starts inside a traceback begins: users copy the last screen, and the issue store keeps a
thread's tail, so the header 'Traceback (most recent call last):' is cut off and the frames come first. The scan reads
such frames as a traceback whose first frame stands for its header."""

from __future__ import annotations

import re

from envcheck.diagnose.matcher import TRACEBACK

# a frame (CPython prints '  File "<path>", line N, in <name>', two spaces under the header, after a rank's or a
# tool's prefix) among the log's first LINES lines, before any header
LINES = 50
_AT = rb'(?P<prefix>[^\n]{0,40}?)  File "[^"\n]+", line \d+, in '
_FRAME = re.compile(rb"^" + _AT, re.M)
_FRAME_AT = re.compile(_AT)  # at LO itself, which '^' does not match unless a newline is before it
# Frames under a header that is not a traceback's, the header's line being the last non-blank one before them:
# logging's stack_info ("Stack (most recent call last):"), torch's "CUDA call was originally invoked at:" (a blank
# line, then the frames).
_OTHER_STACK = re.compile(rb"\(most recent call (?:last|first)\):?$|invoked at:$")
# The exception line that ends a headless traceback: an exception's type as CPython prints it (a warning or a log
# line after a printed stack, traceback.print_stack's, is none).
EXCEPTION = re.compile(rb"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Za-z_]\w*)?(?:Error|Exception|Interrupt|Exit|Fault|Failure)\b")
# a line a user put for frames left out ("...", "…")
ELIDED = (b"...", "\u2026".encode())


def first_frame(data: bytes, lo: int, hi: int) -> tuple[int, int, bytes] | None:
    """(start, end, prefix) of the first frame of DATA[LO:HI] when the log starts inside a traceback, else None."""
    limit = _nth_line_end(data, lo, hi, LINES)
    header = data.find(TRACEBACK, lo, limit)
    end = header if header >= 0 else limit
    found = _FRAME_AT.match(data, lo, end) or _FRAME.search(data, lo, end)
    if found is None:
        return None
    start = found.start()
    if _OTHER_STACK.search(_previous_line(data, lo, start)):  # a stack another header introduced
        return None
    end = data.find(b"\n", start, hi)
    return start, hi if end < 0 else end, found.group("prefix")


def _previous_line(data: bytes, lo: int, start: int) -> bytes:
    """The last non-blank line of DATA[LO:START], stripped (START is within the log's first LINES lines)."""
    return next((line.strip() for line in reversed(data[lo:start].splitlines()) if line.strip()), b"")


def _nth_line_end(data: bytes, lo: int, hi: int, n: int) -> int:
    """Where the Nth line of DATA[LO:HI] ends (HI when it has fewer lines)."""
    pos = lo - 1
    for _ in range(n):
        pos = data.find(b"\n", pos + 1, hi)
        if pos < 0:
            return hi
    return pos
