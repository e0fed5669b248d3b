"""Host facts that decide -9 (OOM killer), -7 (bus error on /dev/shm) and whether a crash leaves a core.

Every reader is a small function that returns None when its file is missing or unreadable (packaging's
`_manylinux` style); `root` lets tests point the readers at a recorded file tree.
"""

from __future__ import annotations

import os
import platform
import resource

from envcheck.snapshot import Host, Skipped

_UNLIMITED_CGROUP_V1 = 1 << 62  # cgroup v1 reports "no limit" as a page-rounded LONG_MAX


def _read(root: str, path: str) -> str | None:
    try:
        with open(os.path.join(root, path.lstrip("/")), encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def os_release(root: str = "/") -> str | None:
    text = _read(root, "/etc/os-release") or _read(root, "/usr/lib/os-release")
    if text is None:
        return None
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"').strip("'")
    return fields.get("PRETTY_NAME") or fields.get("NAME")


def glibc_version() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    if not text or not text.startswith("glibc "):
        return None
    return text.split()[1]


def meminfo(root: str = "/") -> dict[str, int]:
    """/proc/meminfo in bytes, keyed by its field names."""
    text = _read(root, "/proc/meminfo") or ""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
            values[key.strip()] = int(parts[0]) * scale
    return values


def shm_bytes(root: str = "/") -> int | None:
    try:
        stats = os.statvfs(os.path.join(root, "dev/shm"))
    except OSError:
        return None
    return stats.f_blocks * stats.f_frsize


def cgroup_memory_limit(root: str = "/") -> tuple[int | None, int | None]:
    """(cgroup version, memory limit in bytes or None for no limit) of this process's cgroup."""
    own = _read(root, "/proc/self/cgroup") or ""
    if _read(root, "/sys/fs/cgroup/cgroup.controllers") is not None:
        relative = next((line[3:] for line in own.splitlines() if line.startswith("0::")), "/")
        for candidate in (relative, "/"):
            text = _read(root, f"/sys/fs/cgroup/{candidate.strip('/')}/memory.max".replace("//", "/"))
            if text is not None:
                value = text.strip()
                return 2, None if value == "max" or not value.isdigit() else int(value)
        return 2, None
    text = _read(root, "/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if text is None:
        return None, None
    value = text.strip()
    if not value.isdigit() or int(value) >= _UNLIMITED_CGROUP_V1:
        return 1, None
    return 1, int(value)


def core_ulimit() -> str | None:
    """The soft core-size limit in bytes, or "unlimited" (what `ulimit -c` shows, in bytes)."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_CORE)
    except (OSError, ValueError):
        return None
    return "unlimited" if soft == resource.RLIM_INFINITY else str(soft)


def container_kind(root: str = "/", environ: dict[str, str] | None = None) -> str | None:
    environ = os.environ if environ is None else environ
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if os.path.exists(os.path.join(root, ".dockerenv")):
        return "docker"
    if os.path.exists(os.path.join(root, "run/.containerenv")):
        return "podman"
    marker = (environ.get("container") or "").strip()
    if marker:
        return marker  # systemd's convention: "docker", "podman", "lxc", ...
    cgroups = _read(root, "/proc/1/cgroup") or ""
    for needle, kind in (("kubepods", "kubernetes"), ("docker", "docker"), ("lxc", "lxc")):
        if needle in cgroups:
            return kind
    return None


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip()
    return int(value) if value.lstrip("-").isdigit() else None


def class_names(root: str, directory: str) -> tuple[str, ...] | None:
    """The entries of a /sys/class directory (network interfaces, InfiniBand devices), sorted; None if absent."""
    try:
        return tuple(sorted(os.listdir(os.path.join(root, directory.lstrip("/")))))
    except OSError:
        return None


def probe_host(root: str = "/") -> tuple[Host, list[Skipped]]:
    skipped = []
    memory = meminfo(root)
    if not memory:
        skipped.append(Skipped("host.memory", "/proc/meminfo is not readable"))
    cgroup_version, cgroup_limit = cgroup_memory_limit(root)
    shm = shm_bytes(root)
    if shm is None:
        skipped.append(Skipped("host.shm", "/dev/shm is not mounted or not readable"))
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    core_pattern = _read(root, "/proc/sys/kernel/core_pattern")
    host = Host(
        os=os_release(root),
        kernel=platform.release() or None,
        arch=platform.machine() or None,
        glibc=glibc_version(),
        cpu_count=cpus,
        mem_total_bytes=memory.get("MemTotal"),
        mem_available_bytes=memory.get("MemAvailable"),
        swap_total_bytes=memory.get("SwapTotal"),
        shm_bytes=shm,
        cgroup_version=cgroup_version,
        cgroup_mem_limit_bytes=cgroup_limit,
        core_ulimit=core_ulimit(),
        core_pattern=core_pattern.strip() if core_pattern is not None else None,
        overcommit_memory=_int_or_none(_read(root, "/proc/sys/vm/overcommit_memory")),
        container=container_kind(root),
        net_interfaces=class_names(root, "/sys/class/net"),
        infiniband_devices=class_names(root, "/sys/class/infiniband"),
    )
    return host, skipped
