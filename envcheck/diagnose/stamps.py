"""Timestamps: the ones training logs and kernel logs print, and the ones a user gives to --since/--until.

Why here, apart from the scan: the run's time window is what lets diagnose ignore a week-old OOM kill on a shared
machine, and every shape is parsed into an aware datetime (a stamp without an offset is local time), so log times,
kernel times and core mtimes compare directly.
"""

from __future__ import annotations

import re
import time
from datetime import date, datetime, timedelta, timezone

# A stamp counts only near the start of its line (a log prefix), not a date quoted inside a message.
MAX_PREFIX = 48
TAIL_LINES = 256  # lines of a block's end that are looked at for its last stamp, before the log is known stamped

# Log shapes: Python logging and DeepSpeed `2026-11-30 12:34:56,123`, `[2026-11-30 12:34:56,123]`, ISO
# `2026-11-30T12:34:56+00:00`, LLaMA-Factory `[INFO|2026-11-30 12:34:56]`, torch elastic's `2026-11-29_19:46:59`,
# transformers' examples `11/30/2026 12:34:56`, and glog (torch's C++ and elastic logs) `E1129 19:46:59.659000`,
# which has no year.
_LOG = re.compile(
    rb"(?<![\d.:/-])(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)[T _](?P<H>[0-2]\d):(?P<M>[0-5]\d):(?P<S>[0-6]\d)"
    rb"(?:[.,](?P<f>\d{1,9}))?(?P<z>Z|[+-][0-2]\d:?[0-5]\d(?!\d))?"
    rb"|(?<![\d/])(?P<um>[01]\d)/(?P<ud>[0-3]\d)/(?P<uy>(?:19|20)\d\d)[ ,](?P<uH>[0-2]\d):(?P<uM>[0-5]\d):(?P<uS>[0-6]\d)"
    rb"|(?:^|(?<=\]: ))[IWEF](?P<gm>[01]\d)(?P<gd>[0-3]\d) (?P<gH>[0-2]\d):(?P<gM>[0-5]\d):(?P<gS>[0-6]\d)\.\d{6} ",
    re.M)

# H:MM:SS, which every shape above contains: a regex that starts with a digit class, which `re` scans for fast.
_CLOCK = re.compile(rb"\d:[0-5]\d:[0-6]\d")

# Kernel shapes, at the start of a line: `dmesg --time-format iso` (2026-11-30T12:34:56,123456+00:00),
# `journalctl -o short-iso[-precise]` and rsyslog RFC 3339 (2026-11-30T12:34:56.123+0000 host kernel: ...),
# `dmesg -T` ([Sun Nov 29 19:46:59 2026]), syslog / `journalctl -o short` (Nov 30 12:34:56 host kernel: ..., no
# year) and plain `dmesg` ([ 1597.548992], seconds since boot).
_K_ISO = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\s")
_K_CTIME = re.compile(r"^\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]")
_K_SYSLOG = re.compile(r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) ")
_K_MONO = re.compile(r"^\[\s*(\d+)\.(\d+)\]")
_K_MONO_INNER = re.compile(r" kernel: \[\s*(\d+)\.(\d+)\]")  # kern.log keeps dmesg's stamp after syslog's
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}


def local(y: int, m: int, d: int, hh: int = 0, mm: int = 0, ss: int = 0, us: int = 0,
          offset: str | None = None) -> datetime:
    """An aware datetime: with the offset given, else in this machine's local time zone."""
    if offset:
        if offset == "Z":
            tz = timezone.utc
        else:
            digits = offset.replace(":", "")
            delta = timedelta(hours=int(digits[1:3]), minutes=int(digits[3:5]))
            tz = timezone(-delta if digits[0] == "-" else delta)
        return datetime(y, m, d, hh, mm, min(ss, 59), us, tzinfo=tz)
    return datetime(y, m, d, hh, mm, min(ss, 59), us).astimezone()


def _micro(fraction: str | bytes | None) -> int:
    if not fraction:
        return 0
    text = fraction.decode() if isinstance(fraction, bytes) else fraction
    return int((text + "000000")[:6])


def _guess_year(month: int, day: int, reference: datetime | None) -> int:
    """The year of a year-less stamp: the reference's, or the year that does not put it in the future."""
    ref = reference or datetime.now().astimezone()
    year = ref.year
    try:
        if date(year, month, day) > ref.date() + timedelta(days=1):
            year -= 1
    except ValueError:
        pass
    return year


class LogStamps:
    """First and last stamp of one log, fed block by block; dated stamps win over glog's year-less ones."""

    def __init__(self) -> None:
        self.first: datetime | None = None
        self.last: datetime | None = None
        self._first_glog: datetime | None = None
        self._last_glog: datetime | None = None
        self.seen = False

    def head(self, data: bytes) -> None:
        for found in _LOG.finditer(data):
            if _at_line_start(data, found.start()):
                self._add(found)
                if self.first is not None:
                    return

    def tail(self, data: bytes) -> None:
        """The last stamp of DATA, the end of a block (the scan passes its last STAMP_WINDOW bytes): its last
        TAIL_LINES lines, and all of it only for a log known to be stamped (an unstamped log costs a few hundred
        short searches per block)."""
        found = self._last_in(data, 0, TAIL_LINES)
        if found is None and self.seen:
            found = self._last_in(data, 0)
        if found is not None:
            self._add(found)

    @staticmethod
    def _last_in(data: bytes, start: int, lines: int = -1) -> re.Match[bytes] | None:
        """Walk LINES lines (all: -1) back from the end, not before START: the stamp regex has no literal to skip
        by, so scanning forward through a window costs milliseconds per block, while a stamped log has its last
        stamp in one of its last lines."""
        end = len(data)
        while end > start and lines:
            lines -= 1
            line_start = max(data.rfind(b"\n", start, end - 1) + 1, start)
            stop = min(end, line_start + MAX_PREFIX + 64)
            if _CLOCK.search(data, line_start, stop) is not None:  # 1 us; the full stamp regex takes 15
                found = _LOG.search(data, line_start, stop)
                if found is not None and _at_line_start(data, found.start()):
                    return found
            end = line_start
        return None

    def _add(self, found: re.Match[bytes]) -> None:
        stamp, glog = _log_stamp(found)
        if stamp is None:
            return
        self.seen = True
        first, last = ("_first_glog", "_last_glog") if glog else ("first", "last")
        if getattr(self, first) is None:
            setattr(self, first, stamp)
        previous = getattr(self, last)
        setattr(self, last, stamp if previous is None else max(previous, stamp))

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        if self.first is not None:
            return min(self.first, self.last or self.first), self.last
        if self._first_glog is not None:
            return min(self._first_glog, self._last_glog or self._first_glog), self._last_glog
        return None, None


def _at_line_start(data: bytes, pos: int) -> bool:
    return pos - (data.rfind(b"\n", 0, pos) + 1) <= MAX_PREFIX


def _log_stamp(found: re.Match[bytes]) -> tuple[datetime | None, bool]:
    g = found.groupdict()
    try:
        if g["y"]:
            offset = g["z"].decode() if g["z"] else None
            return local(int(g["y"]), int(g["m"]), int(g["d"]), int(g["H"]), int(g["M"]), int(g["S"]),
                         _micro(g["f"]), offset), False
        if g["uy"]:
            return local(int(g["uy"]), int(g["um"]), int(g["ud"]), int(g["uH"]), int(g["uM"]), int(g["uS"])), False
        month, day = int(g["gm"]), int(g["gd"])
        return local(_guess_year(month, day, None), month, day, int(g["gH"]), int(g["gM"]), int(g["gS"])), True
    except (ValueError, OverflowError):  # 2026-13-45: not a date after all
        return None, False


def kernel_stamp(line: str, boot: datetime | None,
                 reference: datetime | None) -> tuple[datetime | None, str | None]:
    """The wall time of a kernel log line and its clock: "wall", "monotonic" (seconds since boot; converted when
    the boot time is known, else the time is None) or None (no stamp)."""
    try:
        found = _K_ISO.match(line)
        if found:
            y, m, d, hh, mm, ss = (int(x) for x in found.groups()[:6])
            return local(y, m, d, hh, mm, ss, _micro(found.group(7)), found.group(8)), "wall"
        found = _K_CTIME.match(line)
        if found and found.group(1) in _MONTHS:
            return local(int(found.group(6)), _MONTHS[found.group(1)], int(found.group(2)), int(found.group(3)),
                         int(found.group(4)), int(found.group(5))), "wall"
        found = _K_SYSLOG.match(line)
        if found and found.group(1) in _MONTHS:
            month, day = _MONTHS[found.group(1)], int(found.group(2))
            return local(_guess_year(month, day, reference), month, day, int(found.group(3)), int(found.group(4)),
                         int(found.group(5))), "wall"
    except (ValueError, OverflowError):
        return None, None
    found = _K_MONO.match(line) or _K_MONO_INNER.search(line)
    if found:
        if boot is None:
            return None, "monotonic"
        return boot + timedelta(seconds=int(found.group(1)), microseconds=_micro(found.group(2))), "monotonic"
    return None, None


def boot_time() -> datetime | None:
    """This machine's boot time (/proc/stat btime), to turn dmesg's seconds since boot into wall time. Time spent
    suspended is not counted by dmesg's clock, so after a suspend the converted times run early."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("btime "):
                    return datetime.fromtimestamp(int(line.split()[1]), timezone.utc).astimezone()
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        return datetime.fromtimestamp(time.time() - uptime, timezone.utc).astimezone()
    except (OSError, ValueError, IndexError):
        return None


_DATE_ONLY = re.compile(r"^\d{4}-\d\d-\d\d$")


def parse_when(text: str, end_of_day: bool = False) -> datetime:
    """A --since/--until value: ISO date or date and time, with an optional offset (else local time). A bare date
    means the start of that day, or its end for --until. ValueError says what was expected."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO date or date and time such as 2026-11-30 or "
                         f"2026-11-30T12:34:56") from None
    if _DATE_ONLY.match(value) and end_of_day:
        parsed = parsed.replace(hour=23, minute=59, second=59, microsecond=999999)
    return parsed if parsed.tzinfo else parsed.astimezone()


def show(moment: datetime | None) -> str | None:
    """A stamp as the report prints it: ISO, seconds, with its offset."""
    return None if moment is None else moment.isoformat(timespec="seconds")
