"""What one scan keeps while it reads: per-signature hit counts and the few hits kept verbatim, the structure
layer's lines and traceback blocks (the first ones and the last ones, in bounded memory), exception lines, pids."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from envcheck.diagnose.model import Hit
from envcheck.diagnose.structure.model import Line
from envcheck.diagnose.symbols import unlinked

KEEP = 4  # hits kept verbatim per signature: the first KEEP - 1 and the last
MAX_TEXT = 600  # characters of a matched line kept as evidence
EXCERPT = 4000  # structure lines kept: the first EXCERPT and the last EXCERPT // 4 (bounded memory)
BLOCKS = 200  # traceback blocks kept: the first BLOCKS and the last BLOCKS // 4


@dataclass
class Tally:
    """Mutable accumulator inside one scan; frozen into a ScanResult at the end."""

    counts: dict[str, int] = field(default_factory=dict)
    kept: dict[str, list[Hit]] = field(default_factory=dict)
    exceptions: list[Hit] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)
    excerpt: list[Line] = field(default_factory=list)
    excerpt_tail: deque[Line] = field(default_factory=lambda: deque(maxlen=EXCERPT // 4))
    blocks: list[tuple[list[Line], int]] = field(default_factory=list)
    blocks_tail: deque[tuple[list[Line], int]] = field(default_factory=lambda: deque(maxlen=BLOCKS // 4))

    def note(self, file: str, line: int, raw: bytes) -> None:
        kept = Line(file, line, text(raw))
        (self.excerpt if len(self.excerpt) < EXCERPT else self.excerpt_tail).append(kept)

    def block(self, lines: list[Line], prefix: int) -> None:
        (self.blocks if len(self.blocks) < BLOCKS else self.blocks_tail).append((lines, prefix))

    def add(self, rule_id: str, file: str, line: int, raw: bytes) -> None:
        n = self.counts.get(rule_id, 0) + 1
        self.counts[rule_id] = n
        hit = Hit(rule_id, file, line, text(raw))
        kept = self.kept.setdefault(rule_id, [])
        if len(kept) < KEEP:
            kept.append(hit)
        else:
            kept[-1] = hit  # keep the first KEEP - 1 and the latest

    def exception(self, file: str, line: int, raw: bytes) -> None:
        hit = Hit("traceback", file, line, text(raw))
        if len(self.exceptions) < 2:
            self.exceptions.append(hit)
        else:
            self.exceptions[-1] = hit


def text(raw: bytes) -> str:
    """A kept line as text, with Markdown links of pasted file names put back as the names (symbols.unlinked)."""
    decoded = unlinked(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
    return decoded if len(decoded) <= MAX_TEXT else decoded[:MAX_TEXT] + "..."
