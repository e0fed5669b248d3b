"""What pasting did to a log, undone: long lines wrapped, colour codes that lost their escape, typographic characters,
HTML's and XML's character references (and what log collectors did: collectors.py).

Why: a message a paste broke in two ("version `GLIBCXX_3.4.20'" / "not found (required by ...)", "Resource
exhausted: Out" / "of memory while trying to allocate") matches no rule in either half; nor does a line that a colour
code without its ESC ("[31m", Windows' "←[31m") now starts, or whose spaces a rich-text editor made non-breaking or
whose quotes it curled. The engine reads a log this way when nothing matched the log as it is, or only weakly, and
takes that reading only when it names a stronger cause (engine.py); and it reads a paste cut at a width this way in any
case, since there the first reading's rules matched pieces of lines (has_width tells cheaply, before the paste is read
again).

A line continues the one before it when it starts with a lower-case letter (after a launcher's prefix and any
indentation) and the line before is long (a wrap happens at a width), ends no sentence, and is no traceback frame or
warning, whose next line is source code. A hard wrap at a fixed width (several lines exactly as long as the longest,
or two at a console's usual width) cuts anywhere, inside a word too: the line after one of that width continues it,
whatever it starts with (but a traceback's header, frame or exception line), and so does the line after one of a
console's usual widths (one line cut at 80 columns: 'insufficient for CUD' / 'A runtime version'); both are joined as
they were cut. Where a paste has such a width, a shorter line was
not cut: nothing is joined to it by its words. A line that starts at the margin with the first 12 characters of the
line before (as printed, or after a launcher's prefix) is the next record of a program's output (NCCL's lines of one
process, a log collector's stamped lines), never a continuation. The joined line keeps its number and the continuation
leaves a blank line, so every other line keeps its number.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Callable

from envcheck.diagnose.collectors import unstamped
from envcheck.diagnose.prefixes import unprefixed

LIMIT = 1024 * 1024  # a paste: a longer log is a program's own output, which no paste wrapped
MIN_WIDTH = 60  # the shortest line taken for a wrapped one (terminals and editors wrap at 80 or more)
# Code and frames under a frame line (CPython's `  File "x.py", line 3, in f`, Java's and Node's `at ...`)
_FRAME = re.compile(rb'^\s*(?:File "|at )')
# a warning's line (warnings.showwarning: "<file>:<line>: <category>: <message>"), whose next line is the source
_WARNING = re.compile(rb":\d+: \w*Warning: ")
# Python statements, which a traceback prints under each frame and a warning under its line
_STATEMENT = re.compile(rb"^(?:return|raise|from|import|if|for|while|with|assert|yield|await|del|elif|else)\b")
_LOWER = re.compile(rb"^[a-z]")
# lines that start something whatever comes before them: a traceback, its frames and its exception's line (a line of
# exactly the paste's width before one is a line of that length, not a cut)
_START = re.compile(rb'^(?:Traceback \(most recent call last\)|File "[^"]+", line \d'
                    rb'|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt): '
                    # the shell's report of a child's signal, a line of its own (bash's strsignal words)
                    rb'|(?:Killed|Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception'
                    rb'|Terminated|Hangup)(?: \(core dumped\))?\s*$)')
# How log records start, which no wrapped line's rest does: NCCL's 'host:pid:tid [rank]', a date, a level word
_RECORD = re.compile(rb"^(?:[\w.-]+:\d+:\d+ \[\d+\] |\[?\d{4}-\d\d-\d\d[ T]\d"
                     rb"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b)")
# a program's name before its message ('slurmstepd: error: ...', 'bash: '): no soft wrap's rest (a hard cut's may
# be: 'libcudart.so.11.0: cannot open ...')
_PROGRAM = re.compile(rb"^[\w.-]+: ")
_RULE = re.compile(rb"^\s*[-=*_#~+]{8,}\s*$")  # a line of dashes (Open MPI's help, pip's)
# Terminal widths a console cuts its lines at (the defaults of xterm and Windows' console, 80 and 120, and the
# widths people set): a line of exactly such a length was most likely cut there, even alone.
_WIDTHS = (80, 100, 120, 132, 160, 200)


# ECMA-48 SGR and erase-line codes whose ESC a paste lost (GitHub keeps "[0m", Windows' console copies ESC as "←"):
# digits before m (a bare "[m" is an index as often), or K as gcc's colours end with (not "[K]")
_LOST_ESCAPES = re.compile(rb"(?:\xe2\x86\x90)?\[(?:\d{1,3}(?:;\d{1,3})*m|\d{0,3}K(?!\]))")
_TYPOGRAPHIC = ((b"\xc2\xa0", b" "), (b"\xe2\x80\x98", b"'"), (b"\xe2\x80\x99", b"'"), (b"\xe2\x80\x9c", b'"'),
                (b"\xe2\x80\x9d", b'"'))  # no-break space; curled single and double quotes


# HTML's and XML's character references: a log kept in a JUnit XML report (pytest --junitxml: '&lt;module&gt;',
# '&quot;'), or copied from a page's source
_ENTITY = re.compile(rb"&(?:lt|gt|amp|quot|apos|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")


def _character(reference: re.Match[bytes]) -> bytes:
    """The character REFERENCE stands for (a line end as a space, so that every line keeps its number)."""
    text = html.unescape(reference.group().decode("ascii"))
    return b" " if text in ("\n", "\r") else text.encode("utf-8", "surrogatepass")


def _typographic(data: bytes) -> bytes:
    for old, new in _TYPOGRAPHIC:
        data = data.replace(old, new)
    return data


# What pasting did to characters, undone in this order, each with what the report says of it; none moves a line.
_CHARACTERS: tuple[tuple[Callable[[bytes], bytes], str], ...] = (
    (lambda data: _LOST_ESCAPES.sub(b"", data), "colour codes without their escape removed"),
    (_typographic, "no-break spaces and curled quotes made plain"),
    (lambda data: _ENTITY.sub(_character, data), "HTML and XML character references decoded"),
)


@dataclass(frozen=True)
class Repaired:
    """A paste with what pasting did undone: how many wrapped lines were joined (SOFT of them by their words, not cut
    at a width), and what else was undone."""

    data: bytes
    joined: int
    soft: int
    undone: tuple[str, ...]


def repaired(data: bytes) -> Repaired:
    """DATA with what a paste did undone."""
    undone = []
    for undo, what in _CHARACTERS:
        changed = undo(data)
        if changed != data:
            undone.append(what)
            data = changed
    # joined before the stamps go: a console wrapped the lines with their stamps
    joined_data, joined, soft = unwrapped(data)
    plain = unstamped(joined_data)
    if plain != joined_data:
        undone.append("log collectors' time stamps before each line taken off")
    return Repaired(plain, joined, soft, tuple(undone))


def unwrapped(data: bytes) -> tuple[bytes, int, int]:
    """DATA with each wrapped line joined to the line before it, how many were joined (0: DATA unchanged), and how
    many of them by their words (a lower-case rest after a long line), not cut at a width."""
    lines = _lines(data)
    width, margin = _hard_width(lines), _margin(lines)
    out: list[bytes] = []
    head, last = -1, b""  # the index in OUT of the line the next continuation would join; its last piece as printed
    joined = soft = 0
    for line in lines:
        body = unprefixed(line).strip()
        previous = out[head] if head >= 0 else b""
        lower = bool(_LOWER.match(body))
        # cut at the width, maybe inside a word: joined as it was cut (also at a console's usual width alone)
        hard = len(last) >= MIN_WIDTH and (len(last) == width or len(last) in _WIDTHS)
        # a line that starts where and as the one before it did is the next record of a program's output, not its
        # rest (an indented one is a hanging indent: pip's wrapped list of versions); so is a line that starts as log
        # records do, and a rule of dashes is no line to continue
        record = (not unprefixed(line)[:1].isspace() and (line[:12] == last[:12]
                                                           or body[:12] == unprefixed(last).strip()[:12])
                  or bool(_RECORD.match(body)) or bool(_RULE.match(previous)))
        # a console cuts its lines at its width only: where the paste has one, a shorter line was not wrapped
        if body and not _START.match(body) and not record and (
                hard or not width and lower and not _STATEMENT.match(body) and not _PROGRAM.match(body)
                and len(last.rstrip()) >= MIN_WIDTH
                and not _FRAME.match(unprefixed(previous)) and not _WARNING.search(last)
                and not last.rstrip().endswith((b".", b"!", b"?"))):
            rest = line[len(margin):] if line.startswith(margin) else line  # a Markdown block's indent is no text
            out[head] = previous + unprefixed(rest).lstrip(b"\t") if hard else previous.rstrip() + b" " + body
            out.append(b"")
            joined += 1
            soft += not hard
            last = line
            continue
        out.append(line)
        head, last = len(out) - 1, line
    return (b"\n".join(out), joined, soft) if joined else (data, 0, 0)


def has_width(data: bytes) -> bool:
    """Whether DATA looks cut at a fixed width (several lines exactly as long as its longest), cheaply: before it is
    read again."""
    return _hard_width(_lines(data)) > 0


def _lines(data: bytes) -> list[bytes]:
    """DATA's lines, a CRLF line end as LF (a paste saved on Windows)."""
    return data.replace(b"\r\n", b"\n").split(b"\n")


def _margin(lines: list[bytes]) -> bytes:
    """The indentation every non-blank line starts with (a Markdown code block's four spaces), b"" when none."""
    filled = [line for line in lines if line.strip()]
    if not filled:
        return b""
    common = min(len(line) - len(line.lstrip(b" ")) for line in filled)
    return b" " * common


def _hard_width(lines: list[bytes]) -> int:
    """The width a paste was hard-wrapped at: the longest line's length when at least three lines of different starts
    have it, or two and it is a console's usual width (0 when none is). Records of one kind as long as each other
    (a trainer's loss lines, a logger's lines padded to the console) are no wrap: their starts are alike."""
    width = max((len(line) for line in lines), default=0)
    starts = {line[:12] for line in lines if len(line) == width}
    return width if width >= MIN_WIDTH and (len(starts) >= 3 or len(starts) == 2 and width in _WIDTHS) else 0
