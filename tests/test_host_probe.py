"""Host readers against recorded file trees (cgroup v1/v2 layouts as the kernel writes them) and this machine."""

from __future__ import annotations

from pathlib import Path

from envcheck.probes import host


def tree(root: Path, files: dict[str, str]) -> str:
    for relative, content in files.items():
        path = root / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return str(root)


MEMINFO = "MemTotal:       65536000 kB\nMemFree:         1000000 kB\nMemAvailable:   32768000 kB\nSwapTotal:             0 kB\n"


def test_meminfo_in_bytes(tmp_path: Path) -> None:
    root = tree(tmp_path, {"/proc/meminfo": MEMINFO})
    values = host.meminfo(root)
    assert values["MemTotal"] == 65536000 * 1024 and values["SwapTotal"] == 0


def test_cgroup_v2_limit_of_own_cgroup(tmp_path: Path) -> None:
    root = tree(tmp_path, {
        "/proc/self/cgroup": "0::/kubepods/pod1/ctr\n",
        "/sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
        "/sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "68719476736\n",
    })
    assert host.cgroup_memory_limit(root) == (2, 68719476736)


def test_cgroup_v2_without_limit(tmp_path: Path) -> None:
    root = tree(tmp_path, {"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cgroup.controllers": "memory\n",
                           "/sys/fs/cgroup/memory.max": "max\n"})
    assert host.cgroup_memory_limit(root) == (2, None)


def test_cgroup_v1_unlimited_and_limited(tmp_path: Path) -> None:
    unlimited = tree(tmp_path / "a", {"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"})
    assert host.cgroup_memory_limit(unlimited) == (1, None)
    limited = tree(tmp_path / "b", {"/sys/fs/cgroup/memory/memory.limit_in_bytes": "17179869184\n"})
    assert host.cgroup_memory_limit(limited) == (1, 17179869184)


def test_container_detection(tmp_path: Path) -> None:
    assert host.container_kind(tree(tmp_path / "d", {"/.dockerenv": ""}), environ={}) == "docker"
    assert host.container_kind(tree(tmp_path / "p", {"/run/.containerenv": ""}), environ={}) == "podman"
    assert host.container_kind(str(tmp_path / "k"), environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) == "kubernetes"
    assert host.container_kind(tree(tmp_path / "n", {"/proc/1/cgroup": "0::/init.scope\n"}), environ={}) is None


def test_os_release(tmp_path: Path) -> None:
    root = tree(tmp_path, {"/etc/os-release": 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n'})
    assert host.os_release(root) == "Ubuntu 22.04.4 LTS"


def test_missing_files_give_none_and_a_skip(tmp_path: Path) -> None:
    found, skipped = host.probe_host(str(tmp_path))
    assert found.mem_total_bytes is None and found.os is None
    assert {s.probe for s in skipped} == {"host.memory", "host.shm"}


def test_this_machine() -> None:
    found, _ = host.probe_host()
    assert found.mem_total_bytes and found.mem_total_bytes > 0
    assert found.glibc and found.glibc.startswith("2.")
    assert found.cpu_count and found.cpu_count >= 1
    assert found.core_ulimit is not None
