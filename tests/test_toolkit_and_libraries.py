"""nvcc discovery and CUDA library discovery, with real executables and real files in temporary trees."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from envcheck.probes.cuda_toolkit import parse_nvcc_version, probe_cuda_toolkits
from envcheck.probes.libraries import parse_ldconfig, probe_libraries, version_from_filename

NVCC_13 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""  # printed by the nvcc of this development machine's CUDA 13.0 toolkit


def fake_toolkit(root: Path, version: str, with_json: bool = True) -> Path:
    nvcc = root / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    major_minor = ".".join(version.split(".")[:2])
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {major_minor}, V{version}'\n")
    nvcc.chmod(0o755)
    if with_json:
        (root / "version.json").write_text(json.dumps({"cuda": {"version": version}, "cuda_nvcc": {"version": version}}))
    return nvcc


def test_parse_real_nvcc_output() -> None:
    assert parse_nvcc_version(NVCC_13) == "13.0.88"
    assert parse_nvcc_version("Cuda compilation tools, release 10.2") == "10.2"
    assert parse_nvcc_version("garbage") is None


def test_path_and_cuda_home_toolkits(tmp_path: Path) -> None:
    old = fake_toolkit(tmp_path / "cuda-11.8", "11.8.89", with_json=False)
    fake_toolkit(tmp_path / "cuda-12.4", "12.4.131")
    environ = {"PATH": f"{old.parent}:/usr/bin", "CUDA_HOME": str(tmp_path / "cuda-12.4")}
    kits, skipped = probe_cuda_toolkits(environ)
    by_root = {k.path: k for k in kits}
    first = by_root[str(tmp_path / "cuda-11.8")]
    home = by_root[str(tmp_path / "cuda-12.4")]
    assert first.nvcc_version == "11.8.89" and first.first_on_path and first.found_via[0] == "PATH"
    assert home.nvcc_version == "12.4.131" and not home.on_path and "CUDA_HOME" in home.found_via
    assert not skipped


def test_symlinked_toolkit_is_listed_once(tmp_path: Path) -> None:
    fake_toolkit(tmp_path / "cuda-12.4", "12.4.131")
    os.symlink(tmp_path / "cuda-12.4", tmp_path / "cuda")
    environ = {"PATH": f"{tmp_path / 'cuda' / 'bin'}", "CUDA_HOME": str(tmp_path / "cuda-12.4")}
    kits, _ = probe_cuda_toolkits(environ)
    mine = [k for k in kits if str(tmp_path) in k.path]
    assert len(mine) == 1 and set(mine[0].found_via) >= {"PATH", "CUDA_HOME"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on this machine")
def test_this_machines_nvcc_has_a_version() -> None:
    kits, _ = probe_cuda_toolkits()
    assert any(k.first_on_path and k.nvcc_version for k in kits)


def test_version_from_filename_follows_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "libnccl.so.2.18.1"
    real.write_text("")
    os.symlink(real.name, tmp_path / "libnccl.so.2")
    assert version_from_filename(str(tmp_path / "libnccl.so.2")) == "2.18.1"
    assert version_from_filename(str(tmp_path / "libcudart.so")) is None


def test_parse_ldconfig_lines() -> None:
    text = ("1234 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
            "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/lib64/libcudart.so.12\n"
            "\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9\n"
            "\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n")
    assert parse_ldconfig(text) == [("libnccl", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"),
                                    ("libcudart", "/usr/local/cuda-12.4/lib64/libcudart.so.12"),
                                    ("libcudnn_ops", "/usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9")]


def test_stale_nccl_on_ld_library_path_is_listed_before_the_wheels(tmp_path: Path) -> None:
    stale = tmp_path / "old-nccl"
    stale.mkdir()
    (stale / "libnccl.so.2.10.3").write_text("")
    os.symlink("libnccl.so.2.10.3", stale / "libnccl.so.2")
    wheel_lib = tmp_path / "site/nvidia/nccl/lib/libnccl.so.2"
    wheel_lib.parent.mkdir(parents=True)
    wheel_lib.write_text("")
    libraries, _ = probe_libraries({str(wheel_lib): "2.21.5"}, {"LD_LIBRARY_PATH": str(stale)})
    nccl = [lib for lib in libraries if lib.name == "libnccl"]
    assert [(lib.origin, lib.version) for lib in nccl][0] == ("LD_LIBRARY_PATH", "2.10.3")
    assert ("wheel", "2.21.5") in [(lib.origin, lib.version) for lib in nccl]
    assert len([lib for lib in nccl if lib.origin == "LD_LIBRARY_PATH"]) == 1  # .so.2 and .so.2.10.3 are one file
