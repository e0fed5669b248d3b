"""Cheap samplers: each reads a few /proc, cgroup or NVML values and never raises. A sampler that cannot run
records why (once) and the others go on.

Cost: a sample reads /proc/*/stat (to find the command's process tree: this kernel may lack
/proc/PID/task/TID/children), statm of the tree, a handful of small files, two statvfs and NVML. PSS
(/proc/PID/smaps_rollup makes the kernel walk the page tables) is read only every `pss_every` samples and given up
when one reading takes longer than PSS_BUDGET_S.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from envcheck.guard.model import Gpu, GpuProc, ProcMem, Sample, Xid

PAGE = os.sysconf("SC_PAGE_SIZE")
NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as a huge number (PAGE_COUNTER_MAX * page size)
PSS_BUDGET_S = 0.05
_RANK_VARS = (b"LOCAL_RANK=", b"RANK=")


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def parse_stat(text: str) -> tuple[str, str, int, int | None] | None:
    """(comm, state, ppid, exit_code) from /proc/PID/stat; comm may hold spaces and parentheses."""
    left, _, right = text.rpartition(")")
    if not left:
        return None
    comm = left.partition("(")[2]
    fields = right.split()
    try:
        exit_code = int(fields[49]) if len(fields) > 49 else None  # field 52 (Linux 3.5+)
        return comm, fields[0], int(fields[1]), exit_code
    except (IndexError, ValueError):
        return None


class ProcTree:
    """The command's process tree, found from the ppid of every process; remembers each pid it has seen."""

    def __init__(self, root: int, pss_every: int = 6) -> None:
        self.root = root
        self.pss_every = pss_every
        self.pss_off: str | None = None
        self.count = 0
        self.seen: dict[int, dict[str, Any]] = {}  # pid -> {comm, ppid, rank, first, last, state, exit_code}
        self.ranks_alive: set[int] = set()

    def _rank(self, pid: int, ppid: int) -> str | None:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                env = handle.read().split(b"\0")
        except OSError:
            return None
        for var in _RANK_VARS:
            for item in env:
                if item.startswith(var):
                    parent = self.seen.get(ppid)
                    if parent is not None and parent.get("has_rank"):
                        return "" # a dataloader worker inherits its rank's environment: not a rank itself
                    return item[len(var):].decode("ascii", "replace")
        return None

    def sample(self, now: float) -> tuple[tuple[ProcMem, ...], int, int | None, tuple[int, ...]]:
        self.count += 1
        stats: dict[int, tuple[str, str, int, int | None]] = {}
        children: dict[int, list[int]] = {}
        try:
            names = os.listdir("/proc")
        except OSError:
            names = []
        for name in names:
            if not name.isdigit():
                continue
            text = _read(f"/proc/{name}/stat")
            parsed = parse_stat(text) if text else None
            if parsed:
                pid = int(name)
                stats[pid] = parsed
                children.setdefault(parsed[2], []).append(pid)
        tree: list[int] = []
        todo = [self.root] if self.root in stats else []
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, ()))
        read_pss = self.pss_off is None and (self.count - 1) % self.pss_every == 0
        procs: list[ProcMem] = []
        total, pss_total = 0, 0 if read_pss else None
        for pid in sorted(tree):
            comm, state, ppid, exit_code = stats[pid]
            known = self.seen.get(pid)
            if known is None:
                rank = self._rank(pid, ppid)
                known = {"comm": comm, "ppid": ppid, "first": now, "has_rank": rank is not None,
                         "rank": rank or None}
                self.seen[pid] = known
                if known["rank"] is not None:
                    self.ranks_alive.add(pid)
            known.update(last=now, state=state, comm=comm, exit_code=exit_code if state == "Z" else None)
            statm = _read(f"/proc/{pid}/statm")
            rss = int(statm.split()[1]) * PAGE if statm and len(statm.split()) > 1 else 0
            total += rss
            pss = None
            if read_pss and pss_total is not None:
                pss = self._pss(pid)
                pss_total = pss_total + pss if pss is not None else None
            procs.append(ProcMem(pid, ppid, comm, state, rss, pss, known["rank"],
                                 exit_code if state == "Z" else None))
        alive = {p.pid for p in procs if p.state != "Z"}
        gone = tuple(sorted(p for p in self.ranks_alive if p not in alive))
        self.ranks_alive -= set(gone)
        return tuple(procs), total, pss_total, gone

    def _pss(self, pid: int) -> int | None:
        began = time.perf_counter()
        text = _read(f"/proc/{pid}/smaps_rollup")
        if time.perf_counter() - began > PSS_BUDGET_S:
            self.pss_off = f"smaps_rollup took {time.perf_counter() - began:.3f} s: PSS is no longer read"
        if not text:
            return None
        for line in text.splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
        return None


_ROOT_CGROUPS = ("/sys/fs/cgroup/memory", "/sys/fs/cgroup")


def memory_cgroup(pid: int) -> tuple[str, str] | None:
    """(version, directory) of PID's memory cgroup: v1 under /sys/fs/cgroup/memory, v2 under /sys/fs/cgroup."""
    text = _read(f"/proc/{pid}/cgroup")
    if not text:
        return None
    v2 = None
    for line in text.splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in controllers.split(","):
            return "v1", "/sys/fs/cgroup/memory" + path.rstrip("/")
        if controllers == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            v2 = "/sys/fs/cgroup" + path.rstrip("/")
    return ("v2", v2) if v2 else None


def read_cgroup(version: str, directory: str) -> tuple[int | None, int | None, int | None]:
    """(usage, limit or None, oom_kill count) of a memory cgroup directory."""
    if version == "v1":
        usage = _int(_read(f"{directory}/memory.usage_in_bytes"))
        limit = _int(_read(f"{directory}/memory.limit_in_bytes"))
        events = _read(f"{directory}/memory.oom_control")
    else:
        usage = _int(_read(f"{directory}/memory.current"))
        raw = _read(f"{directory}/memory.max")
        limit = None if raw is None or raw.strip() == "max" else _int(raw)
        events = _read(f"{directory}/memory.events")
    kills = None
    for line in (events or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            kills = _int(value)
    return usage, None if limit is None or limit >= NO_LIMIT else limit, kills


def meminfo() -> dict[str, int]:
    found: dict[str, int] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree"):
            found[key] = int(rest.split()[0]) * 1024
    return found


def vmstat_oom_kills() -> int | None:
    for line in (_read("/proc/vmstat") or "").splitlines():
        if line.startswith("oom_kill "):
            return _int(line.split()[1])
    return None


def fs_use(path: str) -> tuple[int | None, int | None]:
    """(used, total) bytes of the filesystem holding PATH."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    total = st.f_blocks * st.f_frsize
    return total - st.f_bavail * st.f_frsize, total


class Nvml:
    """GPU memory per GPU and per process, and Xid events, through NVML (the `pynvml` module of nvidia-ml-py).
    `module` lets tests hand in a stand-in for the driver's library."""

    def __init__(self, module: Any = None) -> None:
        self.nvml: Any = None
        self.why: str | None = None
        self.handles: list[Any] = []
        self.events: Any = None
        try:
            nvml = module
            if nvml is None:
                import pynvml as nvml  # type: ignore[no-redef]
            nvml.nvmlInit()
            self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
            self.nvml = nvml
        except Exception as error:  # no driver, no library: data, not a crash
            self.why = f"nvml: {type(error).__name__}: {error}".strip()
            return
        try:
            self.events = nvml.nvmlEventSetCreate()
            for handle in self.handles:
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, self.events)
        except Exception as error:
            self.events = None
            self.why = f"nvml xid events: {type(error).__name__}: {error}"

    def sample(self, now: float) -> tuple[tuple[Gpu, ...], tuple[Xid, ...]]:
        if self.nvml is None:
            return (), ()
        nvml, gpus = self.nvml, []
        for index, handle in enumerate(self.handles):
            try:
                info = nvml.nvmlDeviceGetMemoryInfo(handle)
            except Exception:
                continue
            procs: tuple[GpuProc, ...] = ()
            try:
                procs = tuple(GpuProc(int(p.pid), _int(str(p.usedGpuMemory)) if p.usedGpuMemory is not None else None)
                              for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle))
            except Exception:
                pass
            gpus.append(Gpu(index, int(info.used), int(info.total), procs))
        xids: list[Xid] = []
        while self.events is not None and len(xids) < 64:
            try:
                data = nvml.nvmlEventSetWait(self.events, 0)
            except Exception:  # NVMLError_Timeout: no event waiting
                break
            index = next((i for i, h in enumerate(self.handles) if h == data.device), -1)
            xids.append(Xid(index, int(data.eventData), now))
        return tuple(gpus), tuple(xids)


class Sampler:
    """All samplers for one run: `sample()` returns one Sample."""

    def __init__(self, root: int, out_dir: str, started: float, nvml: Nvml | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.tree = ProcTree(root)
        self.root, self.out_dir, self.started, self.clock = root, out_dir, started, clock
        self.nvml = nvml if nvml is not None else Nvml()
        self.cgroup: tuple[str, str] | None = None
        self.reported: set[str] = set()
        self.shm: tuple[int | None, int | None] | None = None

    def sample(self) -> Sample:
        now = self.clock()
        why: list[str] = []
        procs, rss, pss, gone = self.tree.sample(now)
        found = memory_cgroup(self.root)
        # kept after the command is gone (the counter is read once more at the end); an OOM-killed process shows the
        # root cgroup while it exits (cgroup v1), which must not replace the one it was killed in
        if found is not None and not (self.cgroup is not None and found[1] in _ROOT_CGROUPS):
            self.cgroup = found
        usage = limit = kills = None
        if self.cgroup is not None:
            usage, limit, kills = read_cgroup(*self.cgroup)
        else:
            why.append("cgroup: no memory cgroup found for the command")
        info = meminfo()
        shm_path = f"/proc/{self.root}/root/dev/shm"  # the command's own /dev/shm (its mount namespace)
        if os.path.exists(shm_path):
            self.shm = fs_use(shm_path)
        elif self.shm is None:
            self.shm = fs_use("/dev/shm")
        shm_used, shm_total = self.shm  # once the command is gone, its /dev/shm as last seen
        disk_used, disk_total = fs_use(self.out_dir)
        gpus, xids = self.nvml.sample(now)
        if self.nvml.why:
            why.append(self.nvml.why)
        if self.tree.pss_off:
            why.append(f"pss: {self.tree.pss_off}")
        fresh = tuple(w for w in why if w not in self.reported)
        self.reported.update(fresh)
        return Sample(now, round(now - self.started, 3), rss, pss, procs,
                      self.cgroup[1] if self.cgroup else None, usage, limit, kills, vmstat_oom_kills(),
                      info.get("MemTotal"), info.get("MemAvailable"), info.get("SwapTotal"), info.get("SwapFree"),
                      shm_used, shm_total, disk_used, disk_total, gpus, xids, gone, fresh)
