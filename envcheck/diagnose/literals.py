"""The literal text a signature's regular expression cannot match without: the scan's cheap prefilter.

A signature whose pattern has no usable literal (or is case-insensitive) is matched against every block instead.
"""

from __future__ import annotations

import re

try:  # the parser behind `re`, private but stable in shape since Python 3.0
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

MIN_ANCHOR = 4


def anchor(pattern: str) -> str | None:
    """The longest run of literal characters at the top level of PATTERN, or None when under MIN_ANCHOR."""
    try:
        parsed = _sre_parse.parse(pattern)
    except (re.error, AttributeError, TypeError):  # pragma: no cover - validated patterns compile
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    literal = getattr(_sre_parse, "LITERAL", None)
    best, run = "", []
    for op, value in list(parsed):
        if op is literal:
            run.append(chr(value))
            continue
        best = max(best, "".join(run), key=len)
        run = []
    best = max(best, "".join(run), key=len)
    return best if len(best) >= MIN_ANCHOR else None
