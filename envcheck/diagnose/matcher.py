"""The compiled signatures for the scan: each signature's literal anchors, one prefilter over all of them (Hyperscan,
else a `re` alternation of short keys chosen for this log's byte statistics), and the full patterns behind it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from envcheck.diagnose import literals as literal_extractor
from envcheck.diagnose.literals import anchors
from envcheck.diagnose.multimatch import hyperscan_finder
from envcheck.diagnose.structure.events import ANCHORS as STRUCTURE

TRACEBACK = b"Traceback (most recent call last):"
KEY = 8  # bytes of each anchor the prefilter looks for (at least MIN_KEY)
MIN_KEY = 4
KEY_TRIES = 8  # starts tried per anchor for a key that is rare in the log's first 64 KiB (scan._SAMPLE)
FREQUENT_KEY = 8  # occurrences in that MiB above which a key is too frequent
COMMON_SHARE = 0.002  # a key whose first byte is more than this share of a log's bytes slows `re`'s alternation


@dataclass(frozen=True)
class _Rule:
    id: str
    pattern: bytes
    anchors: tuple[bytes, ...]  # one of them is in every line the regex matches; () = match every block

    @property
    def regex(self) -> re.Pattern[bytes]:
        """Compiled when a candidate line first meets it (re caches it): most signatures never see one."""
        return re.compile(self.pattern)


class Matcher:
    """The compiled signatures: a prefilter of literal anchors and the full patterns behind it."""

    def __init__(self, signatures: Iterable[object]) -> None:
        from envcheck.matrix.cache import memo

        signatures = tuple(signatures)
        patterns = tuple(sig.pattern for sig in signatures)  # type: ignore[attr-defined]
        # parsing 100 patterns for their literals is a tenth of a short run: keep the result per user
        # keyed by the extractor's own code too: a changed literals.py must not reuse anchors it would not find
        found = memo("anchors", repr(patterns).encode(), lambda: tuple(anchors(p) or () for p in patterns),
                     code=(literal_extractor.__file__,))
        rules = []
        for sig, literals in zip(signatures, found):
            rules.append(_Rule(sig.id, sig.pattern.encode("utf-8"),  # type: ignore[attr-defined]
                               tuple(a.encode("utf-8") for a in literals)))
        self.rules = tuple(rules)
        self.anchored = tuple(r for r in rules if r.anchors)
        self.unanchored = tuple(r for r in rules if not r.anchors)
        # Only the rules of the anchors a candidate line holds meet their full pattern (Hyperscan reports those
        # anchors; the re fallback tests the line against every one).
        by_anchor: dict[bytes, list[_Rule]] = {}
        for rule in self.anchored:
            for literal in rule.anchors:
                by_anchor.setdefault(literal, []).append(rule)
        self.by_anchor = {a: tuple(rules) for a, rules in by_anchor.items()}
        # rules anchored at a line's start ('^' outside a bracket), tried again on a line without launchers' prefixes
        self.at_start = frozenset(r.id for r in rules if re.search(rb"(?<!\[)(?<!\\)\^", r.pattern))
        self.structure = frozenset(STRUCTURE)
        self.anchors = tuple(sorted({a for r in self.anchored for a in r.anchors} | {TRACEBACK} | set(STRUCTURE)))
        self.inline = tuple(a for a in self.anchors if not a.endswith(b"\n"))
        self.at_eol = tuple(a for a in self.anchors if a.endswith(b"\n"))
        self._cache: dict[tuple[bytes, ...], re.Pattern[bytes]] = {}
        self.fast = hyperscan_finder(self.anchors)  # every anchor whole, when Hyperscan is installed
        # Without the traceback header: once BLOCKS tracebacks are kept, a block's headers are found with
        # bytes.rfind (only its last BLOCKS // 4 can still be kept), so a log dense in tracebacks is read at the
        # speed of any other.
        self.rest = tuple(a for a in self.anchors if a != TRACEBACK)
        self.fast_rest = hyperscan_finder(self.rest)

    def _keys(self, sample: bytes, anchors: tuple[bytes, ...]) -> dict[bytes, tuple[bytes, float]]:
        """anchor -> (its key: MIN_KEY..KEY bytes starting at the byte rarest in SAMPLE, that byte's share)."""
        freq = {b: sample.count(bytes((b,))) for b in {c for a in anchors for c in a}}
        size = max(len(sample), 1)
        keys = {}
        for text in anchors:
            start = min(range(len(text) - MIN_KEY + 1), key=lambda i: (freq[text[i]], -len(text[i:i + KEY])))
            keys[text] = (text[start:start + KEY], freq[text[start]] / size)
        return keys

    def _compiled(self, keys: set[bytes]) -> re.Pattern[bytes]:
        ordered = tuple(sorted(keys))
        if ordered not in self._cache:
            self._cache[ordered] = re.compile(b"|".join(re.escape(k) for k in ordered) or b"(?!)")
        return self._cache[ordered]

    def prefilter(self, sample: bytes, anchors: tuple[bytes, ...] | None = None) -> re.Pattern[bytes]:
        """A regex of one short key per anchor, each starting at the byte that is rarest in SAMPLE.

        Why: `re` scans for an alternation by testing each position against the set of first bytes; when those
        bytes are rare in this log, almost every position is skipped in C and the scan runs near memory speed.
        """
        anchors = self.anchors if anchors is None else anchors
        freq = {b: sample.count(bytes((b,))) for b in {c for a in anchors for c in a}}
        chosen: set[int] = set()  # first bytes already in the alternation: reusing one costs nothing
        keys = set()
        # Hardest anchors first (those whose rarest byte is still common), then each takes the start whose first
        # byte adds least to the set `re` tests every position against.
        for text in sorted(anchors, key=lambda a: -min(freq[c] for c in a[:len(a) - MIN_KEY + 1])):
            starts = sorted(range(len(text) - MIN_KEY + 1),
                            key=lambda i: (0 if text[i] in chosen else freq[text[i]], -len(text[i:i + KEY])))
            # A key that is itself frequent in this log ('ProcessG' of 'ProcessGroupNCCL::WorkNCCL::...' in a log
            # of ProcessGroupNCCL lines) makes every such line a candidate: take the next start that is rare.
            start = next((i for i in starts[:KEY_TRIES] if sample.count(text[i:i + KEY]) <= FREQUENT_KEY), starts[0])
            chosen.add(text[start])
            keys.add(text[start:start + KEY])
        return self._compiled(keys)

    def common(self, sample: bytes) -> tuple[bytes, ...]:
        """Anchors whose every key starts with a byte common in this log ('Error: ', '+cpu', ' -> 1', '_cpu_0'):
        in `re`'s alternation they would test nearly every position, so the streaming pass leaves them out and
        they are looked for where a run starts and where it dies (the first _SAMPLE and last RECENT bytes): the
        `re` fallback's trade-off (a line of only such anchors in the middle of a long log is not seen); the
        traceback header is never left out; with Hyperscan nothing is."""
        if self.fast is not None:
            return ()
        keys = self._keys(sample, self.anchors)
        return tuple(sorted(a for a, (_key, share) in keys.items() if share > COMMON_SHARE and a != TRACEBACK))
