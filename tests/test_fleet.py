"""fleet's pure parts: host lists and hostfiles, the cross-node diff, NCCL_SOCKET_IFNAME rules, the node script's
marker, node outcomes, the renderers (64 nodes fit a terminal), and the shipped envcheck.pyz."""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from envcheck.errors import UsageError
from envcheck.fleet import diff, hosts
from envcheck.fleet.collect import judge, to_result
from envcheck.fleet.model import NodeOutput, NodeResult
from envcheck.fleet.remote import MARKER, RemotePlan, parse, payload, script
from envcheck.fleet.render import render_markdown, render_text, to_json
from envcheck.snapshot import Snapshot, load_snapshot

BASE = REPO / "tests" / "assets" / "healthy" / "llamafactory-0.9.1-py311-cu121-h200.json"


def base() -> Snapshot:
    return load_snapshot(str(BASE))


def with_packages(snapshot: Snapshot, **changes: str | None) -> Snapshot:
    packages = dict(snapshot.python.packages)  # type: ignore[union-attr]
    for name, version in changes.items():
        name = name.replace("_", "-")
        if version is None:
            packages.pop(name, None)
        else:
            packages[name] = version
    return dataclasses.replace(snapshot, python=dataclasses.replace(snapshot.python, packages=packages))


def fleet(n: int, **overrides: Snapshot) -> dict[str, Snapshot]:
    nodes = {f"node{i}": base() for i in range(1, n + 1)}
    nodes.update(overrides)
    return nodes


# --- hosts ---

def test_expand_and_compress_are_inverse() -> None:
    assert hosts.expand("node[1-3,7],gpu01") == ("node1", "node2", "node3", "node7", "gpu01")
    assert hosts.expand("n[01-03]") == ("n01", "n02", "n03")
    assert hosts.compress(["node3", "node1", "node2", "node7", "gpu01"]) == "gpu01,node[1-3,7]"
    assert hosts.compress(hosts.expand("n[01-03,07]")) == "n[01-03,07]"
    assert hosts.compress(hosts.expand("node[1-64]")) == "node[1-64]"
    with pytest.raises(UsageError, match="cannot read the host range"):
        hosts.expand("node[a-b]")


def test_deepspeed_hostfile(tmp_path: Path) -> None:
    good = tmp_path / "hostfile"
    good.write_text("# DeepSpeed\nworker-1 slots=8\n\nworker-2 slots=8  # second\nworker-1 slots=8\n")
    assert hosts.read_hostfile(str(good)) == ("worker-1", "worker-2")
    bad = tmp_path / "bad"
    bad.write_text("worker-1 gpus=8\n")
    with pytest.raises(UsageError, match="line 1: expected 'hostname slots=N'"):
        hosts.read_hostfile(str(bad))
    with pytest.raises(UsageError, match="cannot read"):
        hosts.read_hostfile(str(tmp_path / "missing"))


# --- the diff: a pure function of snapshots ---

def test_identical_nodes_have_no_differences() -> None:
    nodes = fleet(4)
    assert diff.differences(nodes) == ()
    assert diff.findings((), nodes) == ()


def test_outlier_packages_are_named_against_the_majority() -> None:
    nodes = fleet(8, node5=with_packages(base(), torch="2.5.1", numpy="2.0.1", extra_pkg="1.0"))
    found = {d.fact: d for d in diff.differences(nodes)}
    numpy = found["python.packages.numpy"]
    assert numpy.majority == base().python.packages["numpy"] and numpy.outliers == ("node5",)  # type: ignore[union-attr]
    assert found["python.packages.extra-pkg"].groups[0].value == diff.NOT_INSTALLED
    findings = {f.id: f for f in diff.findings(diff.differences(nodes), nodes)}
    assert "node5 against the majority" in findings["EC715"].title
    assert "numpy:" in findings["EC715"].detail and "2.0.1 on node5" in findings["EC715"].detail
    assert findings["EC715"].fixes[0].commands == (
        f"python -m pip install 'numpy=={numpy.majority}' 'torch=={base().python.packages['torch']}'",)  # type: ignore[union-attr]


def test_two_nodes_without_a_majority_name_both() -> None:
    nodes = {"node1": with_packages(base(), demo="1.0"), "node2": with_packages(base(), demo="2.0")}
    (only,) = diff.findings(diff.differences(nodes), nodes)
    assert only.id == "EC715" and "node[1-2] against each other (no majority)" in only.title
    assert "demo: 1.0 on node1; 2.0 on node2" in only.detail


def test_driver_gpus_torch_nccl_cudnn_env_ib_shm_memory() -> None:
    b = base()
    odd = dataclasses.replace(
        b, nvidia=dataclasses.replace(b.nvidia, driver_version="535.104.05", gpus=b.nvidia.gpus[:4]),  # type: ignore[union-attr]
        torch=dataclasses.replace(b.torch, cuda="12.4"),  # type: ignore[arg-type]
        env={**b.env, "NCCL_IB_DISABLE": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "CUDA_VISIBLE_DEVICES": "0,1"},
        host=dataclasses.replace(b.host, shm_bytes=64 * 2**20, mem_total_bytes=b.host.mem_total_bytes // 2,  # type: ignore[union-attr]
                                 infiniband_devices=("mlx5_0",)))
    odd = with_packages(odd, nvidia_nccl_cu12="2.21.5")
    nodes = fleet(5, node3=odd)
    for node in ("node1", "node2", "node4", "node5"):
        nodes[node] = dataclasses.replace(nodes[node], host=dataclasses.replace(nodes[node].host,
                                                                                infiniband_devices=()))
    ids = {f.id: f for f in diff.findings(diff.differences(nodes), nodes)}
    assert {"EC710", "EC711", "EC712", "EC713", "EC715", "EC718", "EC719", "EC721", "EC722", "EC723"} <= set(ids)
    assert all(f.title.endswith("node3 against the majority") for f in ids.values())
    assert ids["EC713"].severity.label == "error" and "nvidia-nccl-cu12 2.21.5 on node3" in ids["EC713"].detail


def test_memory_within_tolerance_is_the_same() -> None:
    b = base()
    close = dataclasses.replace(b, host=dataclasses.replace(b.host, mem_total_bytes=int(b.host.mem_total_bytes * 0.99)))  # type: ignore[union-attr, operator]
    assert diff.differences(fleet(3, node2=close)) == ()


def test_facts_that_were_not_probed_do_not_decide() -> None:
    b = base()
    blind = dataclasses.replace(b, nvidia=None, host=None, torch=None, python=None, libraries=())
    assert diff.differences(fleet(3, node3=blind)) == ()


@pytest.mark.parametrize("spec, interfaces, expected", [
    ("eth", ("eth0", "lo"), ("eth0",)),
    ("ib0", ("eth0", "lo"), ()),
    ("=eth", ("eth0",), ()),
    ("=eth0,ib0", ("eth0", "ib0"), ("eth0", "ib0")),
    ("^docker,lo", ("docker0", "lo", "enp1s0"), ("enp1s0",)),
    ("^eth", ("eth0", "lo"), ()),
])
def test_nccl_socket_ifname_rules(spec: str, interfaces: tuple[str, ...], expected: tuple[str, ...]) -> None:
    assert diff.ifname_matches(spec, interfaces) == expected


def test_socket_ifname_missing_on_a_node_and_unknown_on_another() -> None:
    b = base()
    def node(ifaces: tuple[str, ...] | None) -> Snapshot:
        return dataclasses.replace(b, env={**b.env, "NCCL_SOCKET_IFNAME": "ens"},
                                   host=dataclasses.replace(b.host, net_interfaces=ifaces))  # type: ignore[arg-type]
    nodes = {"a1": node(("ens5", "lo")), "a2": node(("eth0", "lo")), "a3": node(None)}
    ids = {f.id: f for f in diff.findings(diff.differences(nodes), nodes)}
    assert ids["EC720"].title == "NCCL_SOCKET_IFNAME names no interface on a2" and ids["EC720"].severity.label == "error"
    assert ids["EC724"].severity.label == "info" and "a3" in ids["EC724"].title


# --- the node script and the node outcomes ---

def test_marker_parse_and_script_shapes() -> None:
    body = '{"a": 1}\n'
    parsed = parse(body + f"\n{MARKER} node=node7 rc=0 how=installed\n")
    assert (parsed.body.strip(), parsed.node, parsed.exit_code, parsed.how) == ('{"a": 1}', "node7", 0, "installed")
    assert parse("ssh: connect to host x").exit_code is None
    plan = RemotePlan(exe="/opt/venv/bin/python", python="/envs/$SLURMD_NODENAME/bin/python")
    text = script(plan, shipping=False)
    assert '--python "/envs/$SLURMD_NODENAME/bin/python"' in text and "base64" not in text and "rc=97" in text
    assert "base64 -d" in script(plan, shipping=True)
    assert "replay %h probe --json" in script(RemotePlan(exe="x", command="replay %h"), shipping=False)


def _marked(snapshot: Snapshot, rc: int = 0, how: str = "installed") -> str:
    return json.dumps(snapshot.to_dict()) + f"\n{MARKER} node=n rc={rc} how={how}\n"


def test_node_outcomes() -> None:
    assert to_result(NodeOutput("n", _marked(base()))).status == "ok"
    late = to_result(NodeOutput("n", "", "", None, timed_out=True))
    assert late.status == "timeout"
    gone = to_result(NodeOutput("n", "", "ssh: Could not resolve hostname n: Name or service not known", 255))
    assert gone.status == "unreachable" and "Could not resolve" in (gone.detail or "")
    assert to_result(NodeOutput("n", f"{MARKER} node=n rc=97 how=missing\n")).status == "no_envcheck"
    bad = to_result(NodeOutput("n", f"not json\n{MARKER} node=n rc=2 how=installed\n", "--python x: no such file"))
    assert bad.status == "bad_output" and "exited with 2" in (bad.detail or "")


def _report(n: int = 64):  # type: ignore[no-untyped-def]
    results = [NodeResult(f"node{i}", "ok", base(), "installed") for i in range(1, n + 1)]
    results[16] = NodeResult("node17", "ok", with_packages(base(), numpy="2.0.1"), "installed")
    results[40] = NodeResult("node41", "unreachable", detail="ssh: connect to host node41 port 22: No route to host")
    results[50] = NodeResult("node51", "timeout", detail="no answer within the time limit")
    return judge(tuple(results), "pdsh", None, None, 0.0)


def test_reports_fit_a_terminal_and_an_issue() -> None:
    report = _report()
    ids = [f.id for f in report.fleet_findings]
    assert ids[:2] == ["EC701", "EC702"] and "EC715" in ids and report.fails(report.worst())  # type: ignore[arg-type]
    text = render_text(report)
    assert len(text.splitlines()) < 50 and max(len(line) for line in text.splitlines()) <= 120
    assert "node[1-16,18-40,42-50,52-64]" in text and "node41" in text and "2.0.1 on node17" in text
    markdown = render_markdown(report)
    assert markdown.startswith("### envcheck fleet: 64 nodes via pdsh") and "| `node41` | 1 | **unreachable**" in markdown
    data = json.loads(json.dumps(to_json(report)))
    assert data["summary"] == {"nodes": 64, "ok": 62, "unreachable": 1, "timeout": 1, "bad_output": 0,
                               "no_envcheck": 0, "worst": "error"}
    assert {d["fact"] for d in data["differences"]} == {"python.packages.numpy"}
    assert data["nodes"][40]["snapshot"] is None and data["nodes"][0]["snapshot"]["schema_version"] == 1


def test_the_shipped_archive_runs_without_site_packages(tmp_path: Path) -> None:
    archive = tmp_path / "envcheck.pyz"
    archive.write_bytes(base64.decodebytes(payload()))
    done = subprocess.run([sys.executable, "-S", str(archive), "probe", "--json", "--no-deep"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["host"]["net_interfaces"]


def test_usage_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.delenv("SLURM_NODELIST", raising=False)
    for argv, message in ((["--slurm"], "SLURM_JOB_NODELIST is not set"),
                          (["--hosts", "a", "--via", "ssh", "--rcmd", "exec"], "--rcmd is pdsh's -R")):
        done = subprocess.run([sys.executable, "-m", "envcheck", "fleet", *argv], capture_output=True, text=True,
                              timeout=60, env={k: v for k, v in __import__("os").environ.items()
                                               if not k.startswith("SLURM_")})
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr
