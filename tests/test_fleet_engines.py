"""fleet against real engines on this machine: a two-node Slurm cluster (munged, slurmctld, two slurmd started
here with their own slurm.conf and stopped afterwards) whose nodes use different Python environments; pdsh -R exec
with a DeepSpeed hostfile (simulated nodes, each replaying a recorded snapshot via %h, or running the real probe);
an unreachable node; a timeout. Skips with the reason where an engine or root is missing, unless
ENVCHECK_FLEET_ENGINES=required (CI), where that is a failure. Without loopback (unshare -n), Slurm skips."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from conftest import REPO

REQUIRED = os.environ.get("ENVCHECK_FLEET_ENGINES") == "required"
BASE = REPO / "tests" / "assets" / "healthy" / "llamafactory-0.9.1-py311-cu121-h200.json"


def need(ok: bool, reason: str) -> None:
    if not ok:
        (pytest.fail if REQUIRED else pytest.skip)(reason)


def fleet(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    done = subprocess.run([sys.executable, "-m", "envcheck", "fleet", *args, "--json"], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def ids(report: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {f["id"]: f for f in report["findings"]}


# --- pdsh ---

@pytest.fixture()
def replay(tmp_path: Path) -> Path:
    """Recorded snapshots per simulated node, and a stand-in for envcheck that prints the one %h names."""
    need(shutil.which("pdsh") is not None, "pdsh is not installed (apt-get install pdsh)")
    snapshot = json.loads(BASE.read_text())
    for i in range(1, 4):
        data = json.loads(json.dumps(snapshot))
        if i == 3:
            data["torch"]["version"] = "2.5.1"
            data["python"]["packages"]["torch"] = "2.5.1"
            data["python"]["packages"]["nvidia-nccl-cu12"] = "2.21.5"
        (tmp_path / f"worker-{i}.json").write_text(json.dumps(data))
    stand_in = tmp_path / "replay"
    stand_in.write_text(f"""#!/bin/sh
case "$1" in
  down) echo "ssh: connect to host down port 22: No route to host" >&2; kill -KILL $PPID; exit 255;;
  slow) sleep 30;;
esac
exec cat "{tmp_path}/$1.json"
""")
    stand_in.chmod(0o755)
    return tmp_path


def test_pdsh_deepspeed_hostfile_names_the_outlier(replay: Path) -> None:
    hostfile = replay / "hostfile"
    hostfile.write_text("worker-1 slots=8\nworker-2 slots=8\nworker-3 slots=8\n")
    rc, report, _ = fleet("--hostfile", str(hostfile), "--via", "pdsh", "--rcmd", "exec",
                          "--envcheck-command", f"{replay}/replay %h", "--timeout", "20")
    found = ids(report)
    assert rc == 1 and report["summary"]["ok"] == 3 and report["engine"] == "pdsh"
    assert found["EC712"]["title"].startswith("torch or its CUDA differs across nodes: worker-3 against the majority")
    assert "nvidia-nccl-cu12 2.21.5 on worker-3" in found["EC713"]["detail"]
    assert {n["how"] for n in report["nodes"]} == {"command"}


def test_pdsh_real_probe_on_simulated_nodes_uses_the_shared_path() -> None:
    need(shutil.which("pdsh") is not None, "pdsh is not installed (apt-get install pdsh)")
    rc, report, _ = fleet("--hosts", "sim[1-3]", "--via", "pdsh", "--rcmd", "exec", "--timeout", "60")
    assert report["summary"]["ok"] == 3 and {n["how"] for n in report["nodes"]} == {"installed"}
    assert report["differences"] == [] and not [f for f in report["findings"] if f["id"].startswith("EC7")]
    assert report["nodes"][0]["snapshot"]["host"]["net_interfaces"]


def test_pdsh_unreachable_and_timed_out_nodes_are_findings(replay: Path) -> None:
    began = time.monotonic()
    rc, report, _ = fleet("--hosts", "worker-1,worker-2,down,slow", "--via", "pdsh", "--rcmd", "exec",
                          "--envcheck-command", f"{replay}/replay %h", "--timeout", "2")
    assert time.monotonic() - began < 20
    status = {n["node"]: n["status"] for n in report["nodes"]}
    assert status == {"worker-1": "ok", "worker-2": "ok", "down": "unreachable", "slow": "timeout"}
    found = ids(report)
    assert rc == 1 and found["EC701"]["title"] == "1 node(s) could not be reached: down"
    assert "No route to host" in found["EC701"]["detail"]
    assert found["EC702"]["title"] == "1 node(s) did not answer within the time limit: slow"


def test_ssh_to_a_host_that_does_not_resolve_is_unreachable() -> None:
    need(shutil.which("ssh") is not None, "ssh is not installed (apt-get install openssh-client)")
    rc, report, _ = fleet("--hosts", "nosuchnode.invalid", "--via", "ssh", "--timeout", "20")
    assert rc == 1 and report["nodes"][0]["status"] == "unreachable"
    assert "EC701" in ids(report)


# --- Slurm: two nodes on this host ---

def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _loopback_works() -> bool:
    try:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            with socket.create_connection(server.getsockname(), timeout=2):
                return True
    except OSError:
        return False


def _stop(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tools = ("munged", "slurmctld", "slurmd", "srun", "salloc", "scontrol", "sinfo")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    need(not missing, f"Slurm/munge not installed ({', '.join(missing)}; apt-get install slurm-wlm munge)")
    need(os.geteuid() == 0, "starting slurmd needs root")
    if not _loopback_works():
        pytest.skip("no working loopback (a network namespace such as unshare -n): Slurm needs 127.0.0.1")
    d = tmp_path_factory.mktemp("slurm")
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = d / "munge.socket"
    subprocess.run(["munged", "--force", f"--socket={sock}", f"--key-file={key}", f"--pid-file={d}/munged.pid",
                    f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"], check=True, timeout=30)
    ctld, node1, node2 = _free_ports(3)
    conf = d / "slurm.conf"
    conf.write_text(f"""ClusterName=envcheck
SlurmctldHost=localhost
SlurmctldPort={ctld}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SlurmUser=root
ReturnToService=2
MpiDefault=none
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmdSpoolDir={d}/spool-%n
StateSaveLocation={d}/state
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
NodeName=node1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node1} CPUs=2 RealMemory=1000
NodeName=node2 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node2} CPUs=2 RealMemory=1000
PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
""")
    (d / "state").mkdir()
    env = {**os.environ, "SLURM_CONF": str(conf)}
    env = {k: v for k, v in env.items() if not k.startswith("SLURM_") or k == "SLURM_CONF"}
    try:
        subprocess.run(["slurmctld"], env=env, check=True, timeout=30)
        for node in ("node1", "node2"):
            subprocess.run(["slurmd", "-N", node], env=env, check=True, timeout=30)
        for _ in range(100):
            done = subprocess.run(["sinfo", "-h", "-o", "%D %t"], env=env, capture_output=True, text=True, timeout=10)
            if done.stdout.split() == ["2", "idle"]:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the two Slurm nodes did not come up: {done.stdout} {done.stderr}")
        yield env
    finally:
        for pidfile in ("slurmd-node1.pid", "slurmd-node2.pid", "slurmctld.pid", "munged.pid"):
            _stop(d / pidfile)


def _venv(root: Path, name: str, dists: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / name)], check=True, timeout=60)
    site = next((root / name / "lib").glob("python*/site-packages"))
    for dist, version in dists.items():
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


def test_slurm_two_nodes_with_different_environments(slurm: dict[str, str], tmp_path: Path) -> None:
    envs = tmp_path / "envs"
    _venv(envs, "node1", {"demo-lib": "1.0"})
    _venv(envs, "node2", {"demo-lib": "2.0", "only-on-node2": "0.1"})
    base = ["salloc", "-N2", "-Q", sys.executable, "-m", "envcheck", "fleet", "--slurm",
            "--python", f"{envs}/$SLURMD_NODENAME/bin/python", "--timeout", "60", "--fail-on", "warning", "--json"]
    done = subprocess.run(base, env=slurm, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["engine"] == "srun" and [n["node"] for n in report["nodes"]] == ["node1", "node2"]
    assert {n["status"] for n in report["nodes"]} == {"ok"} and {n["how"] for n in report["nodes"]} == {"installed"}
    assert report["nodes"][1]["snapshot"]["python"]["prefix"].endswith("envs/node2")
    packages = ids(report)["EC715"]
    assert "node[1-2] against each other" in packages["title"]
    assert "demo-lib: 1.0 on node1; 2.0 on node2" in packages["detail"]
    assert "only-on-node2: (not installed) on node1; 0.1 on node2" in packages["detail"]
    assert "EC717" in ids(report)  # and the environment prefixes differ

    shipped = subprocess.run(base + ["--ship", "always"], env=slurm, capture_output=True, text=True, timeout=120,
                             cwd=REPO)
    report = json.loads(shipped.stdout)
    assert {n["how"] for n in report["nodes"]} == {"shipped"}, shipped.stderr
    assert "EC715" in ids(report)
