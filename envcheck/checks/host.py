"""Host checks: the causes of -7 (bus error in /dev/shm), -9 (OOM killer) and crashes that leave no core."""

from __future__ import annotations

from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.snapshot import Snapshot
from envcheck.units import GIB, MIB, human_bytes

SHM_WARN_BYTES = 1 * GIB
SHM_ERROR_BYTES = 512 * MIB  # DeepSpeed's ds_report warns below 512 MB
LOW_HEADROOM_FRACTION = 0.25
NCCL_SHM_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#sharing-data"


@check("EC101")
def shm_too_small(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    host = snapshot.host
    if host is None or host.shm_bytes is None or host.shm_bytes >= SHM_WARN_BYTES:
        return
    severity = Severity.ERROR if host.shm_bytes < SHM_ERROR_BYTES else Severity.WARNING
    in_container = host.container in ("docker", "podman")
    fixes = [Fix("Run the container with the host's IPC namespace, or a larger /dev/shm",
                  ("docker run --gpus all --ipc=host ...", "docker run --gpus all --shm-size=16g ..."))]
    if host.container == "kubernetes":
        fixes = [Fix("Mount a memory-backed emptyDir at /dev/shm in the pod spec",
                     ("volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]",))]
    elif not in_container:
        fixes = [Fix("Enlarge the tmpfs (as root)", ("mount -o remount,size=16G /dev/shm",))]
    yield Finding(
        id="EC101",
        severity=severity,
        category="shm_too_small",
        title=f"/dev/shm is only {human_bytes(host.shm_bytes)}",
        detail=(
            "NCCL and DataLoader workers pass data through /dev/shm; when it fills, the process dies with a bus "
            "error (exit code -7, SIGBUS) or NCCL fails. Docker's default is 64 MB."
        ),
        evidence=(Evidence("host.shm_bytes", human_bytes(host.shm_bytes), f">= {human_bytes(SHM_WARN_BYTES)}"),
                  Evidence("host.container", host.container)),
        fixes=tuple(fixes),
        refs=(NCCL_SHM_DOC,),
    )


def _memory_limit(snapshot: Snapshot) -> tuple[int | None, str]:
    host = snapshot.host
    assert host is not None
    if host.cgroup_mem_limit_bytes is not None and (
        host.mem_total_bytes is None or host.cgroup_mem_limit_bytes < host.mem_total_bytes
    ):
        return host.cgroup_mem_limit_bytes, "host.cgroup_mem_limit_bytes"
    return host.mem_total_bytes, "host.mem_total_bytes"


@check("EC102")
def no_swap_low_headroom(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    host = snapshot.host
    if host is None or host.swap_total_bytes is None or host.mem_available_bytes is None:
        return
    limit, limit_key = _memory_limit(snapshot)
    if host.swap_total_bytes > 0 or not limit:
        return
    available = min(host.mem_available_bytes, limit)
    if available >= LOW_HEADROOM_FRACTION * limit:
        return
    yield Finding(
        id="EC102",
        severity=Severity.WARNING,
        category="host_oom",
        title=f"no swap and only {human_bytes(available)} of {human_bytes(limit)} memory available",
        detail=(
            "Loading a checkpoint (one copy per rank) or gathering ZeRO-2 weights to save one can need several "
            "times the model size in host RAM; with no swap the kernel's OOM killer ends the run (exit code -9)."
        ),
        evidence=(Evidence("host.mem_available_bytes", human_bytes(host.mem_available_bytes)),
                  Evidence(limit_key, human_bytes(limit)),
                  Evidence("host.swap_total_bytes", "0", "> 0, or more free memory")),
        fixes=(Fix("Free memory, add swap, or plan the run's host memory first",
                   ("envcheck plan MODEL --host-mem GIB",
                    "fallocate -l 64G /swapfile && chmod 600 /swapfile && mkswap /swapfile && swapon /swapfile")),),
    )


@check("EC103")
def cgroup_limit_below_ram(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    host = snapshot.host
    if host is None or host.cgroup_mem_limit_bytes is None or host.mem_total_bytes is None:
        return
    if host.cgroup_mem_limit_bytes >= 0.9 * host.mem_total_bytes:
        return
    yield Finding(
        id="EC103",
        severity=Severity.INFO,
        category="host_oom",
        title=f"this cgroup may use {human_bytes(host.cgroup_mem_limit_bytes)} of the host's {human_bytes(host.mem_total_bytes)}",
        detail="The OOM killer acts at the cgroup limit, not at the host's RAM: plan host memory against the limit.",
        evidence=(Evidence("host.cgroup_mem_limit_bytes", human_bytes(host.cgroup_mem_limit_bytes)),
                  Evidence("host.mem_total_bytes", human_bytes(host.mem_total_bytes))),
        fixes=(Fix("Raise the container's memory limit, or plan for it",
                   ("docker run --memory=... ...", "envcheck plan MODEL --host-mem GIB")),),
    )


@check("EC104")
def core_dumps_disabled(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    host = snapshot.host
    if host is None or host.core_ulimit != "0":
        return
    yield Finding(
        id="EC104",
        severity=Severity.INFO,
        category="other",
        title="core dumps are disabled (ulimit -c is 0)",
        detail="A segfault (exit code -11) will leave no core file, so `envcheck diagnose --core` cannot name the "
               "library that crashed.",
        evidence=(Evidence("host.core_ulimit", host.core_ulimit, "unlimited"),
                  Evidence("host.core_pattern", host.core_pattern)),
        fixes=(Fix("Enable core dumps in the shell that starts training", ("ulimit -c unlimited",)),),
    )
