"""The kernel's record of a crash: OOM-killer kills (process, RSS, cgroup limit) and segfaults (faulting library).

Formats, from the kernel sources: mm/oom_kill.c `__oom_kill_process` prints
"<reason>: Killed process <pid> (<comm>) total-vm:<kB>kB, anon-rss:<kB>kB, file-rss:<kB>kB, shmem-rss:<kB>kB, ...";
mm/oom_kill.c `dump_oom_summary` prints "oom-kill:constraint=...,oom_memcg=...,task=...,pid=...";
mm/memcontrol.c (cgroup v1) prints "memory: usage <kB>kB, limit <kB>kB, failcnt <n>";
arch/x86/mm/fault.c `show_signal_msg` prints "<comm>[<pid>]: segfault at <addr> ip <ip> sp <sp> error <n> in <lib>[...]".
Each record keeps its wall time (see `stamps.kernel_stamp` for the shapes), so the run's window can judge it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from envcheck import proc
from envcheck.diagnose.model import Skipped
from envcheck.diagnose.stamps import boot_time, kernel_stamp

_KILLED = re.compile(
    r"(?P<reason>[A-Za-z ]*[Oo]ut of memory(?: \([^)]*\))?): Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)"
    r"(?:.*?total-vm:(?P<vm>\d+)kB, anon-rss:(?P<anon>\d+)kB, file-rss:(?P<file>\d+)kB(?:, shmem-rss:(?P<shmem>\d+)kB)?)?")
_LIMIT = re.compile(r"memory: usage (?P<usage>\d+)kB, limit (?P<limit>\d+)kB")
_SEGFAULT = re.compile(
    r"(?P<comm>\S+)\[(?P<pid>\d+)\]: segfault at (?P<addr>[0-9a-f]+) ip (?P<ip>[0-9a-f]+) sp [0-9a-f]+ error (?P<error>\d+)"
    r"(?: in (?P<lib>[^\[\s]+)\[)?")
_TRAP = re.compile(r"traps: (?P<comm>\S+)\[(?P<pid>\d+)\] (?P<what>general protection fault|trap [^ ]+).*?(?: in (?P<lib>[^\[\s]+)\[)?$")
MAX_RECORDS = 50


@dataclass(frozen=True)
class OomKill:
    pid: int
    comm: str
    reason: str  # "Out of memory" (whole host) or "Memory cgroup out of memory"
    anon_rss_kb: int | None
    file_rss_kb: int | None
    shmem_rss_kb: int | None
    constraint: str | None  # CONSTRAINT_NONE (host) or CONSTRAINT_MEMCG (a cgroup limit)
    memcg: str | None
    limit_kb: int | None
    line: int
    text: str
    time: datetime | None = None

    def describe(self) -> str:
        parts = [f"the kernel's OOM killer killed {self.comm} (pid {self.pid})"]
        if self.anon_rss_kb is not None:
            parts.append(f"it held {_gib(self.anon_rss_kb)} of anonymous memory (RSS)")
        if self.limit_kb is not None:
            parts.append(f"the cgroup {self.memcg or ''} limit was {_gib(self.limit_kb)}".replace("  ", " "))
        elif self.constraint == "CONSTRAINT_NONE" or "cgroup" not in self.reason.lower():
            parts.append("the whole host ran out of RAM and swap")
        return "; ".join(parts)


@dataclass(frozen=True)
class Segfault:
    pid: int
    comm: str
    library: str | None
    line: int
    text: str
    time: datetime | None = None

    def describe(self) -> str:
        where = f" in {self.library}" if self.library else ""
        return f"the kernel recorded a segfault of {self.comm} (pid {self.pid}){where}"


@dataclass(frozen=True)
class KernelEvents:
    source: str  # the file, or "dmesg" / "journalctl -k"
    oom_kills: tuple[OomKill, ...] = ()
    segfaults: tuple[Segfault, ...] = ()
    clock: str | None = None  # "wall", "monotonic" (seconds since boot) or None (records without stamps)
    boot: datetime | None = None  # the boot time monotonic stamps were converted with, when known
    timed: bool = False  # the run's time window was applied: the records that have a time are inside it


def _gib(kb: int) -> str:
    return f"{kb / 1024 / 1024:.2f} GiB" if kb >= 1024 * 1024 else f"{kb / 1024:.0f} MiB"


def parse(lines: Iterable[str], source: str, boot: datetime | None = None,
          reference: datetime | None = None) -> KernelEvents:
    """Collect OOM kills (joined with the cgroup limit and summary printed just before them) and segfaults, each
    with its wall time; monotonic stamps are converted with BOOT when it is known. REFERENCE dates year-less
    syslog stamps."""
    clocks: set[str] = set()

    def when(text: str) -> datetime | None:
        moment, clock = kernel_stamp(text, boot, reference)
        if clock:
            clocks.add(clock)
        return moment

    kills: list[OomKill] = []
    segfaults: list[Segfault] = []
    limit: int | None = None
    summary: dict[str, str] = {}
    for number, text in enumerate(lines, 1):
        if "memory: usage" in text:
            found = _LIMIT.search(text)
            if found:
                limit = int(found.group("limit"))
        elif "oom-kill:" in text:
            fields = (item.partition("=") for item in text.split("oom-kill:", 1)[1].strip().split(","))
            summary = {key: value for key, _, value in fields if value}
        elif "Kill" in text and "process" in text:
            found = _KILLED.search(text)
            if found:
                pid = int(found.group("pid"))
                same = summary.get("pid") == str(pid)
                kills.append(OomKill(
                    pid, found.group("comm"), found.group("reason").strip(), _int(found.group("anon")),
                    _int(found.group("file")), _int(found.group("shmem")),
                    summary.get("constraint") if same else None, summary.get("oom_memcg") if same else None,
                    limit if "cgroup" in found.group("reason").lower() else None, number, text.strip(), when(text)))
                limit, summary = None, {}
        elif "segfault at" in text or "traps:" in text:
            found = _SEGFAULT.search(text) or _TRAP.search(text)
            if found:
                segfaults.append(Segfault(int(found.group("pid")), found.group("comm"), found.group("lib"), number,
                                          text.strip(), when(text)))
    clock = "monotonic" if "monotonic" in clocks else "wall" if clocks else None
    return KernelEvents(source, tuple(kills[-MAX_RECORDS:]), tuple(segfaults[-MAX_RECORDS:]), clock,
                        boot if clock == "monotonic" else None)


def _int(text: str | None) -> int | None:
    return int(text) if text else None


def read_file(path: str, boot: datetime | None = None, reference: datetime | None = None) -> KernelEvents:
    """A saved kernel log (`dmesg > kern.txt`, /var/log/kern.log, `journalctl -k`), streamed line by line. Its
    seconds-since-boot stamps are wall times only when BOOT (of the machine it came from) is given."""
    from envcheck.diagnose.source import open_log

    with open_log(path) as log:
        return parse(_lines(log.chunks(1 << 20)), path, boot, reference)


def _lines(chunks: Iterable[bytes]) -> Iterable[str]:
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        cut = data.rfind(b"\n") + 1
        for raw in data[:cut].splitlines():
            yield raw.decode("utf-8", errors="replace")
        carry = data[cut:][-65536:]
    if carry:
        yield carry.decode("utf-8", errors="replace")


def read_system(timeout: float = 10.0,
                reference: datetime | None = None) -> tuple[KernelEvents | None, Skipped | None]:
    """This machine's kernel log with wall times: `dmesg --time-format iso` (util-linux), else plain `dmesg` with
    its seconds since boot converted by the boot time, else `journalctl -k -o short-iso`; a reason when none is
    allowed."""
    reasons = []
    attempts = ((["dmesg", "--time-format", "iso"], "dmesg"), (["dmesg"], "dmesg"),
                (["journalctl", "-k", "--no-pager", "-q", "-o", "short-iso"], "journalctl -k"))
    for argv, name in attempts:
        result = proc.run(argv, timeout=timeout)
        if result.ok and result.stdout.strip():
            boot = boot_time() if len(argv) == 1 else None
            return parse(result.stdout.splitlines(), name, boot, reference), None
        reason = result.describe_failure() or f"{' '.join(argv)} printed nothing"
        if reason not in reasons:
            reasons.append(reason)
    return None, Skipped("kernel", "; ".join(reasons) + " (pass a saved kernel log with --kernel-log)")
