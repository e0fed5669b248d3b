"""A log cut into blocks that end at line ends, for the scan: chunks read in place, a line a chunk's end cuts joined
with the next chunk, an over-long line matched in segments, and a traceback a chunk's end cuts read whole."""

from __future__ import annotations

import re
from typing import Callable, Protocol

from envcheck.diagnose.matcher import TRACEBACK
from envcheck.diagnose.source import OpenedLog

MAX_LINE = 64 * 1024  # longer lines are matched in segments of this size
HOLD = 64 * 1024  # a traceback that starts in a chunk's last HOLD bytes is read with the next chunk's first REACH
REACH = 64 * 1024
# Terminal escapes that a log saved with tee keeps: colours (ECMA-48 CSI: ESC [ parameters final-byte; DeepSpeed's red
# "[ERROR]", rich and loguru levels) and OSC sequences (ESC ] ... BEL or ESC \\: rich's hyperlinks). Removed before
# matching, so a message coloured mid-phrase still matches; a chunk without ESC (nearly every log) costs one memchr:
# a one-byte find (a two-byte `in` is 25 times slower).
_ESC = b"\x1b"
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

Progress = Callable[[str, int, "int | None"], None]


class Blocks(Protocol):
    def block(self, data: bytes, complete: bool, lo: int = 0, hi: int | None = None) -> None: ...


def plain(data: bytes) -> bytes:
    """DATA without terminal escape sequences and with Windows line ends (CRLF) as LF, so that a pattern's `$` and
    NCCL's ' -> 2\n' hold in a log saved on Windows (unchanged, and not copied, when it holds no ESC and no CR; a
    CRLF log costs one copy of each chunk)."""
    if data.find(_ESC) >= 0:
        data = _ESCAPES.sub(b"", data)
    if data.find(b"\r") >= 0:  # a lone CR (a progress bar redrawn) stays
        data = data.replace(b"\r\n", b"\n")
    return data


def read_blocks(log: OpenedLog, scanner: Blocks, progress: Progress | None, size: int) -> int:
    """Feed LOG, read SIZE bytes at a time, to SCANNER in blocks that end at line ends. A line cut by a chunk's end
    is finished by the next chunk; a traceback whose header is in a chunk's last HOLD bytes (or on the line the end
    cuts) is read with the next chunk's lines up to the next traceback or REACH bytes, so that its exception line,
    past the chunk's end, stays in its block. Returns the bytes read."""
    read, carry, held = 0, b"", b""  # the line cut by the chunk's end; the lines held back from a traceback on
    for chunk in log.chunks(size):
        read += len(chunk)
        chunk = plain(chunk)
        lo = 0
        if carry or held:
            reach = chunk.find(b"\n") + 1
            if not reach:
                carry, lo = carry + chunk, len(chunk)
            else:  # the cut line (and the held lines), then the chunk in place from REACH
                if held or TRACEBACK in carry + chunk[:reach]:  # a traceback goes on in this chunk: its next lines
                    reach = _reach(chunk, reach)
                scanner.block(plain(held + carry + chunk[:reach]), complete=True)  # a sequence cut by the end
                carry, held, lo = b"", b"", reach
        if lo < len(chunk):
            cut = chunk.rfind(b"\n", lo) + 1
            if cut > lo:
                header = chunk.rfind(TRACEBACK, max(lo, cut - HOLD), cut)
                start = max(chunk.rfind(b"\n", lo, header) + 1, lo) if header >= 0 else cut
                start = cut if cut - start > HOLD + MAX_LINE else start  # a header in an over-long line: not held
                if start > lo:
                    scanner.block(chunk, complete=True, lo=lo, hi=start)
                held, carry = chunk[start:cut], chunk[cut:]
            else:
                carry = chunk[lo:]
        while len(carry) > MAX_LINE:  # an over-long line: match it in segments, count it once
            if held:  # the held lines come first
                scanner.block(held, complete=True)
                held = b""
            scanner.block(carry[:MAX_LINE], complete=False)
            carry = carry[MAX_LINE:]
        if progress is not None:
            progress(log.name, log.position(), log.size)
    if held or carry:
        scanner.block(plain(held + carry) + (b"\n" if carry else b""), complete=True)
    return read - log.appended


def _reach(chunk: bytes, first: int) -> int:
    """Where the block that finishes a held traceback ends in CHUNK: at the line start before the next traceback
    header (which ends the held one's search, and is then read whole, in place), else at the last line end within
    REACH; never before FIRST, the end of the chunk's first line."""
    far = max(chunk.rfind(b"\n", first, REACH) + 1, first)
    header = chunk.find(TRACEBACK, first, far)
    return far if header < 0 else max(chunk.rfind(b"\n", first, header) + 1, first)
