"""One streaming pass over a log: every signature of the matrix, in bounded memory, at disk speed.

Why it is fast: the log is read in large binary chunks; one regular expression made of the signatures' literal
anchors (see `literals`, `matcher`) finds the few candidate lines, and only those lines meet the full patterns. Lines are
never decoded unless they match. Why it is bounded: a chunk, the unfinished last line (cut at MAX_LINE) and a few
kept hits per signature are all that is held.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from envcheck.diagnose import headless
from envcheck.diagnose.chunks import Progress, read_blocks
from envcheck.diagnose.matcher import TRACEBACK, Matcher
from envcheck.diagnose.model import ScanResult, SignatureHits
from envcheck.diagnose.prefixes import unprefixed
from envcheck.diagnose.source import OpenedLog
from envcheck.diagnose.stamps import LogStamps
from envcheck.diagnose.structure.events import WITH_NEXT
from envcheck.diagnose.structure.model import Line
from envcheck.diagnose.structure.risk import ERROR_WORDS
from envcheck.diagnose.tally import BLOCKS, Tally, text

CHUNK = 8 * 1024 * 1024
_PROBE_LINES = 400
# The head: where anchors common in this log are looked for (and the log's first stamp and pids), and what the
# anchors' keys are chosen from. (The stamp regex has no literal: an unstamped log's first MiB would cost 0.1 s.)
_SAMPLE = 64 * 1024
# Where logs name the run's process ids: torchrun's `(pid: 2610)` and `received by PID 2610`, `pid=2610`, the
# DeepSpeed launcher's `Killing subprocess 2610`, elastic's `Sending process 2610 closing signal`, a pasted
# `Killed process 2610`, a shell's `line 1:  2610 Killed`. Searched in the first _SAMPLE and the last RECENT bytes
# of each log only (where a run starts and where its death is reported): anchors as common as "pid" in the
# prefilter would halve the scan's speed on step logs.
RECENT = 256 * 1024
STAMP_WINDOW = 64 * 1024  # the end of each block in which its last stamp is looked for
_PIDS = re.compile(rb"(?:\b(?:pid|PID)\s*[:=]?\s*|\b(?:sub)?process\s+)(\d{2,9})(?!\d)"
                   rb"|:\s+(\d{2,9})\s+(?:Killed|Segmentation fault|Bus error|Aborted)\b")
MAX_PIDS = 512
TAIL_LINES = 2  # each log's last non-blank lines, kept whatever they hold
LATE_ERRORS = 64  # lines that say error, failed or fatal, kept from each log's last RECENT bytes
_ERRORISH = re.compile(ERROR_WORDS.encode(), re.I)
BLOCK_FRAMES = 48  # lines of one traceback's frames kept (the innermost)
BLOCK_TAIL = 4  # lines kept after a traceback's exception line (a message wrapped over lines)

class _Scanner:
    def __init__(self, matcher: Matcher, name: str, tally: Tally) -> None:
        self.m, self.name, self.tally = matcher, name, tally
        self.line = 1  # number of the first line of the next block
        self.started = False
        self.prefilter: re.Pattern[bytes] | None = None
        self.prefilter_rest: re.Pattern[bytes] | None = None
        self.stamps = LogStamps()
        self.recent = b""  # the log's last RECENT bytes
        self.common: tuple[bytes, ...] = ()  # structure anchors looked for at the head and the tail only
        self.head_lines = 0  # lines of the head, which were matched with every anchor
        self.tail, self.tail_line = b"", 1  # the last block's last RECENT bytes (from a line start), its first line
        self.skipped = -1  # where in the block being matched the first traceback past the first BLOCKS starts

    def block(self, data: bytes, complete: bool, lo: int = 0, hi: int | None = None) -> None:
        """Match DATA[LO:HI], which ends at a line end (or is a segment of an over-long line when not complete).

        Bounds instead of slices: a read chunk is matched where it lies, without an 8 MiB copy per chunk (each
        fresh copy costs a memcpy and its page faults, a quarter of the scan)."""
        m = self.m
        hi = len(data) if hi is None else hi
        # the head's end and its prefilters (every anchor; every anchor but the traceback header)
        head: tuple[int, re.Pattern[bytes], re.Pattern[bytes] | None] | None = None
        if not self.started:
            self.started = True
            if data.startswith(b"\xef\xbb\xbf", lo):  # a UTF-8 byte-order mark (Windows editors) is no text
                lo += 3
            sample = data[lo:lo + _SAMPLE]
            self.common = m.common(sample)
            keep = tuple(a for a in m.anchors if a not in self.common)
            if m.fast is None:  # with Hyperscan the `re` alternations are never used: do not compile them
                self.prefilter = m.prefilter(sample, keep)
                self.prefilter_rest = m.prefilter(sample, tuple(a for a in keep if a != TRACEBACK))
            self.stamps.head(sample)
            self.pids(sample)
            if self.common:  # the head meets every anchor
                head_end = max(data.rfind(b"\n", lo, lo + _SAMPLE) + 1 if hi - lo > _SAMPLE else hi, lo)
                self.head_lines = data.count(b"\n", lo, head_end)
                head = (head_end, m.prefilter(sample), m.prefilter(sample, m.rest) if m.fast is None else None)
            self._headless(data, lo, hi)
        lines = data.count(b"\n", lo, hi) if complete else 0
        if complete:
            self.stamps.tail(data[max(lo, hi - STAMP_WINDOW):hi])
            self.recent = (self.recent + data[max(lo, hi - RECENT):hi])[-RECENT:]
            if self.common:
                self._keep_tail(data, lo, hi)
        # up to CUT the first BLOCKS tracebacks are still kept from the front; after it only the last ones can be,
        # found from the block's end, and traceback lines are no candidates (a log dense in tracebacks stays linear)
        cut, self.skipped = self._kept_until(data, lo, hi), -1
        begin = lo
        if head is not None:  # the head: every anchor, the common ones too
            begin, head_prefilter, head_prefilter_rest = head
            self._part(data, lo, lo, begin, cut, head_prefilter, m.fast, head_prefilter_rest, m.fast_rest)
        self._part(data, lo, begin, hi, cut, self.prefilter, m.fast, self.prefilter_rest, m.fast_rest)
        if cut < hi or self.skipped >= 0:
            self._last_tracebacks(data, self.skipped if self.skipped >= 0 else cut, hi, lines)
        for rule in m.unanchored:
            for found in rule.regex.finditer(data, lo, hi):
                start = max(data.rfind(b"\n", lo, found.start()) + 1, lo)
                end = data.find(b"\n", found.end(), hi)
                number = self.line + data.count(b"\n", lo, start)
                self.tally.add(rule.id, self.name, number, data[start:hi if end < 0 else end])
        if complete:
            self.line += lines

    def _keep_tail(self, data: bytes, lo: int, hi: int) -> None:
        """The log's last RECENT bytes from a line start, across blocks (a held-back traceback is a block of its own
        at the end), and the number of their first line: what finish() meets with the common anchors."""
        cut = max(data.find(b"\n", max(lo, hi - RECENT) - 1, hi) + 1, lo) if hi - lo > RECENT else lo
        part, part_line = data[cut:hi], self.line + data.count(b"\n", lo, cut)
        if cut > lo or not self.tail:
            self.tail, self.tail_line = part, part_line
            return
        joined = self.tail + part
        if len(joined) > RECENT:  # keep a line start
            start = joined.find(b"\n", len(joined) - RECENT) + 1
            start = start or len(self.tail)
            self.tail_line += joined.count(b"\n", 0, start)
            joined = joined[start:]
        self.tail = joined

    def _part(self, data: bytes, block_lo: int, lo: int, hi: int, cut: int,  # type: ignore[no-untyped-def]
              prefilter, fast, prefilter_rest, fast_rest) -> None:
        """Match DATA[LO:HI] (LO a line start of the block that starts at BLOCK_LO), tracebacks read before CUT
        only."""
        first = self.line + data.count(b"\n", block_lo, lo)
        if lo < min(hi, cut):
            self._match(data, lo, min(hi, cut), first, prefilter, fast, False)
        if max(lo, cut) < hi:
            start = max(lo, cut)
            self._match(data, start, hi, first + data.count(b"\n", lo, start), prefilter_rest, fast_rest, True)

    def _kept_until(self, data: bytes, begin: int, hi: int) -> int:
        """Where in DATA[BEGIN:HI] the traceback after the first BLOCKS ones starts (a line start); HI when there is
        none. (A line with two headers is one traceback: the scanner's check in _candidate covers a miscount.)"""
        room, pos = BLOCKS - len(self.tally.blocks), begin
        if room <= 0:
            return begin
        for _ in range(room + 1):
            pos = data.find(TRACEBACK, pos, hi)
            if pos < 0:
                return hi
            pos += len(TRACEBACK)
        return max(data.rfind(b"\n", begin, pos - len(TRACEBACK)) + 1, begin)

    def finish(self) -> None:
        """The tail meets the common anchors the streaming pass left out (lines the head covered, or that another
        anchor already brought in, are not taken twice)."""
        if not self.common or not self.tail:
            return
        pattern = self.m._compiled(set(self.common))
        skip = tuple(a for a in self.m.anchors if a not in self.common)
        inline = tuple(a for a in self.common if not a.endswith(b"\n"))
        at_eol = tuple(a for a in self.common if a.endswith(b"\n"))
        data, last_start = self.tail, -1
        for found in pattern.finditer(data):
            start = data.rfind(b"\n", 0, found.start()) + 1
            if start == last_start:
                continue
            last_start = start
            number = self.tail_line + data.count(b"\n", 0, start)
            end = data.find(b"\n", max(found.start(), found.end() - 1))
            line = data[start:len(data) if end < 0 else end]
            if number > self.head_lines and not any(a in line for a in skip):
                present = _held(data, start, end, line, inline, at_eol)
                if not self.m.structure.isdisjoint(present):
                    self._note(data, end if end >= 0 else len(data), number, line)
                self._rules(present, number, line)

    def _match(self, data: bytes, lo: int, hi: int, first_line: int, prefilter: re.Pattern[bytes], fast,  # type: ignore[no-untyped-def]
               dense: bool) -> None:
        """Every candidate line of DATA[LO:HI] (LO a line start, numbered FIRST_LINE) meets the rules."""
        cursor, cursor_line = lo, first_line
        if fast is None:  # re: (start, end, None); the anchors present are then read from the line
            matches: Iterable[tuple[int, int, bytes | None]] = (
                (f.start(), f.end(), None) for f in prefilter.finditer(data, lo, hi))
        elif lo == 0 and hi == len(data):
            matches = fast(data)
        else:
            matches = ((a + lo, b + lo, key) for a, b, key in fast(memoryview(data)[lo:hi]))  # type: ignore[arg-type]
        line_start, line_end, keys = -1, -1, []  # the line being gathered and the anchors Hyperscan found in it
        for found_start, found_end, key in matches:
            if line_start <= found_start < line_end or found_start == line_end == line_start:
                keys.append(key)  # another anchor of the same line
                continue
            if line_start >= 0:
                self._candidate(data, line_start, line_end, cursor_line, keys, hi, dense)
            line_start = max(data.rfind(b"\n", lo, found_start) + 1, lo)
            line_end = data.find(b"\n", max(found_start, found_end - 1), hi)  # an anchor may end in the newline
            line_end = hi if line_end < 0 else line_end
            cursor_line += data.count(b"\n", cursor, line_start)
            cursor, keys = line_start, [key]
        if line_start >= 0:
            self._candidate(data, line_start, line_end, cursor_line, keys, hi, dense)

    def _candidate(self, data: bytes, start: int, end: int, number: int, keys: list[bytes | None], hi: int,
                   dense: bool) -> None:
        """One candidate line: its traceback, its structure note, its rules. KEYS are the anchors Hyperscan found in
        it (exact); with the `re` prefilter ([None]) they are read from the line."""
        m, line = self.m, data[start:end]
        if keys[0] is not None:
            present = list(dict.fromkeys(keys))  # type: ignore[arg-type]
        else:
            present = _held(data, start, end, line, m.inline, m.at_eol)
        if TRACEBACK in line:
            if not dense and len(self.tally.blocks) < BLOCKS:
                self._traceback(data, start, end, number, hi)
            elif not dense and self.skipped < 0:
                self.skipped = start
        elif not m.structure.isdisjoint(present):
            self._note(data, end, number, line, hi)
        self._rules(present, number, line)  # type: ignore[arg-type]

    def _rules(self, present: list[bytes], number: int, line: bytes) -> None:
        """The rules of the anchors PRESENT in LINE meet their full pattern."""
        matched: set[str] = set()
        bare: bytes | None = None  # the line without launchers' prefixes and indentation (a Markdown code block's four
        # spaces, pip's indented build output), for the rules anchored at its start
        for literal in present:
            for rule in self.m.by_anchor.get(literal, ()):
                if rule.id in matched:
                    continue
                found = rule.regex.search(line)
                if not found and rule.id in self.m.at_start:
                    bare = unprefixed(line).lstrip(b" \t") if bare is None else bare
                    found = bare is not line and rule.regex.search(bare)
                if found:
                    matched.add(rule.id)
                    self.tally.add(rule.id, self.name, number, line)

    def _note(self, data: bytes, end: int, number: int, line: bytes, hi: int | None = None) -> None:
        """Keep a structure line; a question whose answer is the next line (WITH_NEXT) keeps that line too."""
        hi = len(data) if hi is None else hi
        self.tally.note(self.name, number, line)
        if any(a in line for a in WITH_NEXT) and end < hi:
            after = data.find(b"\n", end + 1, hi)
            self.tally.note(self.name, number + 1, data[end + 1:hi if after < 0 else after])

    def _last_tracebacks(self, data: bytes, lo: int, hi: int, lines: int) -> None:
        """The last BLOCKS // 4 tracebacks of DATA[LO:HI] (LINES lines), numbered by counting from the end."""
        starts, pos = [], hi
        while len(starts) < BLOCKS // 4:
            pos = data.rfind(TRACEBACK, lo, pos)
            if pos < 0:
                break
            starts.append(max(data.rfind(b"\n", lo, pos) + 1, lo))
        if not starts:
            return
        starts.reverse()
        number, counted = self.line + lines - data.count(b"\n", starts[0], hi), starts[0]
        for start in starts:
            number += data.count(b"\n", counted, start)
            counted = start
            end = data.find(b"\n", start, hi)
            self._traceback(data, start, hi if end < 0 else end, number, hi)

    def pids(self, data: bytes) -> None:
        for a, b in _PIDS.findall(data):
            if len(self.tally.pids) >= MAX_PIDS:
                return
            self.tally.pids.add(int(a or b))

    def _headless(self, data: bytes, lo: int, hi: int) -> None:
        """A paste that starts inside a traceback (headless.py): read from its first frame."""
        first = headless.first_frame(data, lo, hi)
        if first is not None:
            start, end, prefix = first
            self._traceback(data, start, end, self.line + data.count(b"\n", lo, start), hi, prefix)

    def _traceback(self, data: bytes, start: int, end: int, line: int, hi: int | None = None,
                   frame_prefix: bytes | None = None) -> None:
        """Keep this traceback's block (header, frames, the exception line and BLOCK_TAIL lines after it) and its
        exception line: the next line, under the header's prefix, that is not indented (torchrun prefixes every
        line of a rank with '[rankN]: '). A new header under the same prefix ends the search, so a log of
        tracebacks is read in linear time (each line belongs to one traceback of its prefix)."""
        hi = len(data) if hi is None else hi
        header = data[start:end]
        prefix = header[:header.find(TRACEBACK)] if frame_prefix is None else frame_prefix  # a frame as its header
        if prefix.endswith((b"^C", b"^\\")):  # the terminal's echo of Ctrl-C (Ctrl-\) before Python's traceback
            prefix = prefix[:-2]
        kept = [Line(self.name, line, text(header))]
        pos, exception_at = end, 0
        for offset in range(1, _PROBE_LINES):
            if pos >= hi:
                break
            nxt = data.find(b"\n", pos + 1, hi)
            nxt = hi if nxt < 0 else nxt
            candidate = data[pos + 1:nxt]
            pos = nxt
            if not candidate.startswith(prefix):
                continue
            body = candidate[len(prefix):]
            if body.startswith(TRACEBACK):
                break
            if exception_at:
                if not body.strip() or offset > exception_at + BLOCK_TAIL:
                    break
                kept.append(Line(self.name, line + offset, text(candidate)))
                continue
            if frame_prefix is not None and body and body[:1] not in b" \t" and not headless.EXCEPTION.match(body):
                if body.strip() in headless.ELIDED:
                    continue
                break  # frames without a header and without an exception after them: a printed stack
            if len(kept) > BLOCK_FRAMES:  # a deep stack: the header and the innermost frames are what tell
                del kept[1]
            kept.append(Line(self.name, line + offset, text(candidate)))
            if body and body[:1] not in b" \t":
                if not body.startswith((b"During handling", b"The above exception")):
                    self.tally.exception(self.name, line + offset, candidate)
                    exception_at = offset
        self.tally.block(kept, len(prefix.decode("utf-8", errors="replace")))


def _held(data: bytes, start: int, end: int, line: bytes, inline: tuple[bytes, ...],
          at_eol: tuple[bytes, ...]) -> list[bytes]:
    """The anchors LINE (DATA[START:END]) holds; AT_EOL ones end in the line's own newline (NCCL's ' -> 2\\n')."""
    present = [a for a in inline if a in line]
    if at_eol:
        whole = data[start:end + 1]
        present += [a for a in at_eol if a in whole]
    return present


def scan(logs: Iterable[OpenedLog], matcher: Matcher, progress: Progress | None = None) -> ScanResult:
    """Scan every log in turn; line numbers are per file."""
    tally, names, total_bytes, total_lines = Tally(), [], 0, 0
    firsts, lasts, ends, tails, late_errors = [], [], [], [], []
    for log in logs:
        names.append(log.name)
        scanner = _Scanner(matcher, log.name, tally)
        total_bytes += read_blocks(log, scanner, progress, CHUNK)
        scanner.finish()
        total_lines += scanner.line - 1
        # trailing blank lines are no part of what was printed (a log of blank lines alone ends at 0; blank lines
        # beyond the last RECENT bytes are not counted off)
        printed = scanner.recent.rstrip()
        tail = scanner.recent[len(printed):]
        ends.append((log.name, 0 if not printed and scanner.line - 1 <= tail.count(b"\n")
                     else max(0, scanner.line - 1 - max(0, tail.count(b"\n") - 1))))
        tails += _last_lines(log.name, printed, ends[-1][1])
        late_errors += _late_errors(log.name, printed, ends[-1][1])
        scanner.pids(scanner.recent)
        first, last = scanner.stamps.bounds()
        firsts += [first] if first else []
        lasts += [last] if last else []
    by_signature = {
        rule_id: SignatureHits(rule_id, count, tuple(tally.kept[rule_id])) for rule_id, count in tally.counts.items()
    }
    order = {name: i for i, name in enumerate(names)}
    excerpt = sorted((*tally.excerpt, *tally.excerpt_tail), key=lambda line: (order.get(line.file, 0), line.number))
    return ScanResult(tuple(names), total_bytes, total_lines, by_signature, tuple(tally.exceptions),
                      min(firsts) if firsts else None, max(lasts) if lasts else None, frozenset(tally.pids),
                      tuple(excerpt), (*tally.blocks, *tally.blocks_tail), tuple(ends), tuple(tails),
                      tuple(late_errors))


def _late_errors(name: str, printed: bytes, end: int) -> list[Line]:
    """The last LATE_ERRORS lines of PRINTED (the log's last RECENT bytes, trailing blank lines left out; its last
    line is number END) that say error, failed or fatal, whatever anchor they hold or not: whether a run failed
    near its end (structure/risk.py), without making such lines candidates (a log dense in 'ERROR' would fill the
    excerpt)."""
    if not _ERRORISH.search(printed):
        return []
    return _from_end(name, printed.split(b"\n"), end, _ERRORISH.search, LATE_ERRORS)


def _last_lines(name: str, printed: bytes, end: int) -> list[Line]:
    """The last TAIL_LINES non-blank lines of PRINTED (the log's last bytes, trailing blank lines left out), whose
    last line is number END: where a paste ends, whatever its lines hold (structure/risk.py)."""
    return _from_end(name, printed.split(b"\n")[-4 * TAIL_LINES:], end, bytes.strip, TAIL_LINES)


def _from_end(name: str, lines: list[bytes], end: int, keep: Callable[[bytes], object], most: int) -> list[Line]:
    """Up to MOST of LINES (the last of them is line END) that KEEP holds true for, the last ones, in log order."""
    kept: list[Line] = []
    for back, raw in enumerate(reversed(lines)):
        if end - back < 1 or len(kept) == most:
            break
        if keep(raw):
            kept.append(Line(name, end - back, text(raw)))
    return kept[::-1]
