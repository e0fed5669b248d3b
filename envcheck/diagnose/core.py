"""Core dumps: find the newest one (core_pattern or coredumpctl) and ask gdb, in batch mode with a time limit,
which library the crashing thread was in.

The executable is read from the core's own NT_FILE note (the first file mapped), so gdb gets the right binary
and its shared libraries without the user naming them.
"""

from __future__ import annotations

import glob
import os
import re
import struct
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone

from envcheck import proc
from envcheck.diagnose.model import Skipped
from envcheck.errors import UsageError

_NT_FILE = 0x46494C45
_ET_CORE = 4
_SYSTEM_LIBS = re.compile(r"/(libc|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*|libm|libdl)[.-][^/]*$")
_FRAME = re.compile(r"^#(?P<n>\d+)\s+(?:(?P<addr>0x[0-9a-f]+) in )?(?P<func>\S+) \(.*?\)(?: from (?P<lib>\S+)| at (?P<src>\S+))?")
_SIGNAL = re.compile(r"Program terminated with signal (?P<sig>SIG[A-Z0-9]+)")
_SYMBOL_LIB = re.compile(r" in section \S+ of (?P<lib>\S+)")
GDB_TIMEOUT = 60.0


@dataclass(frozen=True)
class Frame:
    number: int
    function: str
    library: str | None


@dataclass(frozen=True)
class CoreReport:
    path: str
    executable: str | None
    signal: str | None
    top_library: str | None  # the library of the innermost frame
    first_non_system: str | None  # the innermost frame outside libc/libstdc++/...: usually the culprit
    frames: tuple[Frame, ...]

    def describe(self) -> str:
        where = self.top_library or "an unknown library"
        text = f"gdb: {self.signal or 'the crash'} in {os.path.basename(where)} ({where})"
        if self.first_non_system and self.first_non_system != self.top_library:
            text += f", called from {self.first_non_system}"
        return text


def is_core(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return False
    return head[:4] == b"\x7fELF" and len(head) == 20 and struct.unpack_from("<H", head, 16)[0] == _ET_CORE


def mapped_files(path: str) -> list[str]:
    """File names of the core's NT_FILE note (ELF64 little-endian cores, as Linux x86_64/aarch64 write)."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[4] != 2 or header[5] != 1:
            return []
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, offset, _, _, filesz = struct.unpack("<IIQQQQ", f.read(40))
            if p_type != 4:  # PT_NOTE
                continue
            f.seek(offset)
            notes = f.read(min(filesz, 64 << 20))
            pos = 0
            while pos + 12 <= len(notes):
                namesz, descsz, kind = struct.unpack_from("<III", notes, pos)
                desc = pos + 12 + ((namesz + 3) & ~3)
                if kind == _NT_FILE:
                    count, _ = struct.unpack_from("<QQ", notes, desc)
                    names = notes[desc + 16 + count * 24:desc + descsz].split(b"\0")
                    return [n.decode("utf-8", "replace") for n in names[:count]]
                pos = desc + ((descsz + 3) & ~3)
    return []


def analyse(path: str, timeout: float = GDB_TIMEOUT) -> CoreReport:
    """Run gdb on the core; a UsageError when the file is not a core, a report (maybe empty) otherwise."""
    if not os.path.isfile(path):
        raise UsageError(f"--core {path}: no such file")
    if not is_core(path):
        raise UsageError(f"--core {path}: not an ELF core file")
    files = mapped_files(path)
    exe = files[0] if files and os.path.exists(files[0]) else None
    argv = ["gdb", "--batch", "-nx", "-ex", "set pagination off", "-ex", "bt 30", "-ex", "info symbol $pc"]
    argv += [exe, path] if exe else ["-c", path]
    result = proc.run(argv, timeout=timeout)
    if result.start_error or result.timed_out:
        raise _GdbFailed(result.describe_failure())
    return parse_gdb(path, exe, result.stdout + "\n" + result.stderr)


class _GdbFailed(Exception):
    pass


def parse_gdb(path: str, exe: str | None, output: str) -> CoreReport:
    by_number: dict[int, Frame] = {}
    for line in output.splitlines():
        found = _FRAME.match(line.strip())
        if found:  # gdb prints frame #0 twice: once after "Program terminated", once in the backtrace
            by_number.setdefault(int(found.group("n")), Frame(int(found.group("n")), found.group("func"), found.group("lib")))
    frames = [by_number[n] for n in sorted(by_number)]
    top = frames[0].library if frames else None
    symbol = _SYMBOL_LIB.search(output)
    if top is None and symbol:
        top = symbol.group("lib")
    if top is None and frames and exe:
        top = exe  # `info symbol` names no file for the main executable
    first = next((f.library for f in frames if f.library and not _SYSTEM_LIBS.search(f.library)), None)
    if first is None and top and not _SYSTEM_LIBS.search(top):
        first = top
    sig = _SIGNAL.search(output)
    return CoreReport(path, exe, sig.group("sig") if sig else None, top, first, tuple(frames))


def find_core(search_dirs: list[str], lower: datetime | None = None, upper: datetime | None = None
              ) -> tuple[str | None, Skipped | None, tuple[datetime, ...]]:
    """The newest core file per /proc/sys/kernel/core_pattern written inside [LOWER, UPPER] (the run's window;
    None is open); coredumpctl when cores go to systemd. Also the mtimes of cores left out as outside the window."""
    try:
        with open("/proc/sys/kernel/core_pattern", encoding="utf-8") as handle:
            pattern = handle.read().strip()
    except OSError as error:
        return None, Skipped("core", f"cannot read core_pattern: {error.strerror}"), ()
    if pattern.startswith("|"):
        if "systemd-coredump" in pattern:
            path, why = _from_coredumpctl(lower, upper)
            return path, why, ()
        return None, Skipped("core", f"cores are piped to {pattern[1:].split()[0]}; pass one with --core"), ()
    glob_pattern = re.sub(r"%.", "*", pattern)
    dirs = [os.path.dirname(glob_pattern)] if os.path.isabs(glob_pattern) else search_dirs
    name = os.path.basename(glob_pattern)
    candidates = {p for d in dirs for p in glob.glob(os.path.join(d, name)) + glob.glob(os.path.join(d, name + ".*"))}
    cores, outside = [], []
    for path in candidates:
        if not is_core(path):
            continue
        written = datetime.fromtimestamp(os.path.getmtime(path), timezone.utc)
        if (lower is not None and written < lower) or (upper is not None and written > upper):
            outside.append(written)
        else:
            cores.append((written, path))
    if not cores:
        where = " inside the run's window" if outside else ""
        return None, Skipped("core", f"no core file matching core_pattern '{pattern}'{where} in {', '.join(dirs)}"), \
            tuple(sorted(outside))
    return max(cores)[1], None, tuple(sorted(outside))


def _from_coredumpctl(lower: datetime | None, upper: datetime | None) -> tuple[str | None, Skipped | None]:
    target = os.path.join(tempfile.mkdtemp(prefix="envcheck-core-"), "core")
    argv = ["coredumpctl", "--no-pager", "-q", "dump", "-o", target]
    for flag, moment in (("--since", lower), ("--until", upper)):
        if moment is not None:  # coredumpctl reads local time
            argv.append(f"{flag}={moment.astimezone().strftime('%Y-%m-%d %H:%M:%S')}")
    result = proc.run(argv, timeout=GDB_TIMEOUT)
    if result.ok and os.path.exists(target):
        return target, None
    return None, Skipped("core", f"coredumpctl: {result.describe_failure() or 'no core'}")
