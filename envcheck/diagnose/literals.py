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


def anchors(pattern: str) -> tuple[str, ...] | None:
    """Literal texts one of which every match of PATTERN contains: the longest top-level literal run, or, for a
    pattern that is an alternation at the top (`a|b|c`), the longest run of each branch. None when any is under
    MIN_ANCHOR (the pattern is then matched against every block)."""
    try:
        parsed = _sre_parse.parse(pattern)
    except (re.error, AttributeError, TypeError):  # pragma: no cover - validated patterns compile
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    items = list(parsed)
    branch = getattr(_sre_parse, "BRANCH", None)
    literal = getattr(_sre_parse, "LITERAL", None)
    lead = 0  # `re` factors a prefix common to every branch out of the alternation: 'NCCL (?:Error|error)'
    while lead < len(items) and items[lead][0] is literal:
        lead += 1
    # '^(?!.*NCCL INFO).*A|^(?!.*NCCL INFO).*B': `re` factors the shared '^(?!...).*' out too; it holds no literal
    zero_or_any = {getattr(_sre_parse, name, None) for name in ("AT", "ASSERT", "ASSERT_NOT", "MAX_REPEAT",
                                                                 "MIN_REPEAT")}
    skip = 0
    while lead == 0 and skip < len(items) and items[skip][0] in zero_or_any:
        skip += 1
    if 0 < skip < len(items) and items[skip][0] is branch and all(op is not branch for op, _ in items[skip + 1:]):
        found = tuple(_longest_run(list(sub)) for sub in items[skip][1][1])
    elif lead < len(items) and items[lead][0] is branch and all(op is not branch for op, _ in items[lead + 1:]):
        prefix = "".join(chr(value) for _, value in items[:lead])
        # the prefix with the branch's own start is the more specific literal ('ncclSend' over ' failed: ')
        found = tuple(prefix + _leading_run(list(sub)) if len(prefix + _leading_run(list(sub))) >= 6
                      else max(prefix + _leading_run(list(sub)), _longest_run(list(sub)), key=len)
                      for sub in items[lead][1][1])
    else:
        found = (_longest_run(items),)
    # the scan looks for the UTF-8 bytes: '段错误' is 3 characters but 9 bytes
    return tuple(dict.fromkeys(found)) if all(len(a.encode("utf-8")) >= MIN_ANCHOR for a in found) else None


def anchor(pattern: str) -> str | None:
    """The longest run of literal characters at the top level of PATTERN, or None when under MIN_ANCHOR."""
    found = anchors(pattern)
    return found[0] if found and len(found) == 1 else None


def _longest_run(items: list) -> str:  # type: ignore[type-arg]
    literal = getattr(_sre_parse, "LITERAL", None)
    best, run = "", []
    for op, value in items:
        if op is literal:
            run.append(chr(value))
            continue
        best = max(best, "".join(run), key=len)
        run = []
    return max(best, "".join(run), key=len)


def _leading_run(items: list) -> str:  # type: ignore[type-arg]
    literal = getattr(_sre_parse, "LITERAL", None)
    run = []
    for op, value in items:
        if op is not literal:
            break
        run.append(chr(value))
    return "".join(run)
