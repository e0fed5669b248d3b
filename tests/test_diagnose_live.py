"""Real failures produced during the test: a segfault with a real core analysed by real gdb, a real
undefined-symbol import, and (as root with a cgroup v1 memory controller) a real OOM kill."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import memory_cgroup

from envcheck.cli import main

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _allow_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


@needs_gcc
@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_real_core_names_the_crashing_library(tmp_path: Path, capsys) -> None:
    (tmp_path / "libcrash.c").write_text("int crash_here(int *p) { return *p + 1; }\n")
    (tmp_path / "main.c").write_text("int crash_here(int *);\nint main(void) { return crash_here(0); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libcrash.so", "libcrash.c"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-o", "crasher", "main.c", "-L.", "-lcrash", "-Wl,-rpath,$ORIGIN"], cwd=tmp_path,
                   check=True)
    try:
        limit = resource.getrlimit(resource.RLIMIT_CORE)[1]
    except ValueError:
        limit = 0
    if limit == 0:
        pytest.skip("core dumps are forbidden by the hard limit")
    done = subprocess.run(["./crasher"], cwd=tmp_path, preexec_fn=_allow_core)
    assert done.returncode == -11
    cores = [p for p in tmp_path.iterdir() if p.name.startswith("core")]
    if not cores:
        pytest.skip("core_pattern does not write a core into the working directory here")
    code = main(["diagnose", "--offline", "--json", "--exit-code", "-11", "--core", str(cores[0])])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["signal"] == "SIGSEGV"
    first = doc["causes"][0]
    assert first["cause"] == "segfault_other"
    core_lines = [e["text"] for e in first["evidence"] if e["source"] == "core"]
    assert core_lines and "libcrash.so" in core_lines[0]


@needs_gcc
def test_real_undefined_symbol_import_names_library_and_symbol(tmp_path: Path, capsys) -> None:
    (tmp_path / "ext.c").write_text(
        "extern void _ZN3c104cuda9SetDeviceEi(int);\n"
        "void *PyInit_flash_attn_2_cuda(void) { _ZN3c104cuda9SetDeviceEi(0); return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "flash_attn_2_cuda.so", "ext.c"], cwd=tmp_path, check=True)
    done = subprocess.run([sys.executable, "-c", "import flash_attn_2_cuda"], cwd=tmp_path, capture_output=True)
    log = tmp_path / "train.log"
    log.write_bytes(done.stderr)
    code = main(["diagnose", "--offline", "--json", str(log)])
    first = json.loads(capsys.readouterr().out)["causes"][0]
    assert code == 1 and first["cause"] == "segfault_abi_mismatch"
    assert "flash_attn_2_cuda.so" in first["explanation"] and "_ZN3c104cuda9SetDeviceEi" in first["evidence"][0]["text"]


def test_real_oom_kill_in_a_memory_cgroup(tmp_path: Path, capsys) -> None:
    group = memory_cgroup("envcheck-test")
    if group is None:
        pytest.skip("needs root and a cgroup v1 memory controller")
    hog = "import os\nprint('pid', os.getpid(), flush=True)\nb = []\nwhile True: b.append(bytearray(8 << 20))\n"
    try:
        done = subprocess.run(["bash", "-c", f"echo $$ > {group}/cgroup.procs; {sys.executable} -c \"$0\"; true",
                               hog], capture_output=True, timeout=120)
    finally:
        try:
            group.rmdir()
        except OSError:
            pass
    log = tmp_path / "run.log"
    log.write_bytes(done.stdout + done.stderr)
    assert b"Killed" in done.stderr
    argv = ["diagnose", "--json", str(log)]
    dmesg = subprocess.run(["dmesg"], capture_output=True)
    if dmesg.returncode == 0:
        kern = tmp_path / "kern.log"
        kern.write_bytes(dmesg.stdout)
        argv += ["--kernel-log", str(kern)]
    else:
        argv.insert(1, "--offline")
    main(argv)
    doc = json.loads(capsys.readouterr().out)
    assert doc["signal"] == "SIGKILL" and doc["causes"][0]["cause"] == "host_oom"
    if dmesg.returncode == 0:
        pid = int(done.stdout.split()[1])
        assert any(e["source"] == "kernel" and f"Killed process {pid}" in e["text"]
                   for e in doc["causes"][0]["evidence"])
