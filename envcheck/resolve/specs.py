"""Specifier helpers the solver needs and `packaging` lacks: overlap of two ranges, a release line against a range."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envcheck.errors import UsageError


def parse_spec(text: str, what: str) -> SpecifierSet:
    """'2.4' means the 2.4 release line (==2.4.*); anything else is a PEP 440 specifier set."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)*", text):
        text = f"=={text}.*" if text.count(".") < 2 else f"=={text}"
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise UsageError(f"{what}: {text!r} is not a version or a version range such as '2.4' or '>=2.4,<2.6'") from None


def _probes(spec: SpecifierSet) -> list[Version]:
    """Versions at and just beside each bound of a specifier set: enough to find an overlap of two ranges."""
    found: list[Version] = []
    for item in spec:
        text = item.version.rstrip(".*")
        try:
            base = Version(text)
        except InvalidVersion:
            continue
        parts = list(base.release) + [0] * (3 - len(base.release))
        for micro in (0, 1, 99):
            found.append(Version(".".join(str(p) for p in (parts[0], parts[1], micro))))
        found.append(base)
        if len(base.release) >= 2:
            found.append(Version(f"{parts[0]}.{parts[1] + 1}.0"))
            if parts[1] > 0:
                found.append(Version(f"{parts[0]}.{parts[1] - 1}.99"))
    return found


def overlaps(*specs: SpecifierSet) -> bool:
    """Whether some version satisfies every set (tested at the sets' own bounds)."""
    combined = SpecifierSet(",".join(str(s) for s in specs if str(s)))
    if not str(combined):
        return True
    candidates = [v for s in specs for v in _probes(s)]
    return any(combined.contains(v, prereleases=True) for v in candidates)


def line_matches(line: str, spec: SpecifierSet | str) -> bool:
    """Whether some patch release of the release line 'X.Y' satisfies the spec."""
    spec = SpecifierSet(spec) if isinstance(spec, str) else spec
    return overlaps(spec, SpecifierSet(f"=={line}.*"))


def line_all(line: str, spec: SpecifierSet | str) -> bool:
    """Whether every patch release of 'X.Y' satisfies the spec (tested at .0, .1 and .99)."""
    spec = SpecifierSet(spec) if isinstance(spec, str) else spec
    return all(spec.contains(Version(f"{line}.{p}"), prereleases=True) for p in (0, 1, 99))


def combine(*specs: SpecifierSet | str) -> str:
    """One specifier string without redundant bounds (the tightest lower and upper bound), sorted."""
    items = {p for s in specs for p in SpecifierSet(str(s))}
    lower = [p for p in items if p.operator in (">=", ">")]
    upper = [p for p in items if p.operator in ("<", "<=")]
    keep = {p for p in items if p not in lower and p not in upper}
    if lower:
        keep.add(max(lower, key=lambda p: (Version(p.version), p.operator == ">")))
    if upper:
        keep.add(min(upper, key=lambda p: (Version(p.version), p.operator == "<=")))
    for line in [p.version[:-2] for p in keep if p.operator == "==" and p.version.endswith(".*")]:
        keep = {p for p in keep if p.operator not in (">=", ">", "<", "<=") or not line_all(line, str(p))}
    return ",".join(sorted(str(p) for p in keep))
