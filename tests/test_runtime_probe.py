"""Child-process imports that really segfault, really miss a symbol or a library, and really hang."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import FakeEnv, torch_version_file

from envcheck.probes.python_env import probe_python
from envcheck.probes.runtime import probe_runtime

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def add_torch(env: FakeEnv, init: str) -> None:
    env.add_dist("torch", "2.5.1+cu124", files={"torch/version.py": torch_version_file("2.5.1+cu124", "12.4"),
                                                 "torch/__init__.py": init})


def build_so(directory: Path, name: str, source: str, *link: str) -> Path:
    c_file = directory / f"{name}.c"
    c_file.write_text(source)
    target = directory / f"{name}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(target), str(c_file), *link], check=True)
    return target


def runtime_of(env: FakeEnv, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    found = probe_python(str(env.python))
    return probe_runtime(str(env.python), found.env, found.deepspeed, timeout)


def test_torch_import_that_segfaults_is_recorded_with_the_signal(fake_env: FakeEnv) -> None:
    add_torch(fake_env, "import ctypes\nctypes.string_at(0)\n")  # a real NULL dereference
    result = runtime_of(fake_env)["torch"]
    assert not result.ok
    assert result.signal == "SIGSEGV" and result.exit_code == -11
    assert "Segmentation fault" in (result.error or "")  # faulthandler's report, from the child's stderr


@needs_cc
def test_undefined_symbol_is_recorded_verbatim(fake_env: FakeEnv) -> None:
    add_torch(fake_env, textwrap_torch())
    fake_env.add_dist("flash-attn", "2.7.0.post2", requires=("torch",))
    # The symbol that flash-attn wheels built for another torch miss (c10::cuda::SetDevice(int)).
    build_so(fake_env.site, "flash_attn_2_cuda",
             "extern void _ZN3c104cuda9SetDeviceEi(int);\nvoid call(void) { _ZN3c104cuda9SetDeviceEi(0); }\n")
    results = runtime_of(fake_env)
    assert results["torch"].ok
    flash = results["flash_attn_2_cuda"]
    assert not flash.ok and flash.exit_code == 1 and flash.signal is None
    assert "undefined symbol: _ZN3c104cuda9SetDeviceEi" in flash.error
    assert flash.error.startswith("ImportError: ")


@needs_cc
def test_missing_shared_library_is_recorded(fake_env: FakeEnv, tmp_path: Path) -> None:
    add_torch(fake_env, textwrap_torch())
    fake_env.add_dist("xformers", "0.0.28.post3", requires=("torch==2.5.1",))
    libdir = tmp_path / "libs"
    libdir.mkdir()
    build_so(libdir, "libcudart_envcheck_test", "int cudart_probe(void) { return 1; }\n",
             "-Wl,-soname,libcudart_envcheck_test.so.12")
    package = fake_env.site / "xformers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    build_so(package, "_C", "extern int cudart_probe(void);\nint use(void) { return cudart_probe(); }\n",
             f"-L{libdir}", "-l:libcudart_envcheck_test.so")
    result = runtime_of(fake_env)["xformers._C"]
    assert not result.ok
    assert "libcudart_envcheck_test.so.12: cannot open shared object file" in result.error


def test_hanging_import_is_killed_at_the_timeout(fake_env: FakeEnv) -> None:
    add_torch(fake_env, "import time\ntime.sleep(60)\n")
    started = time.monotonic()
    result = runtime_of(fake_env, timeout=1.0)["torch"]
    assert time.monotonic() - started < 10
    assert result.timed_out and not result.ok and "did not finish" in result.error


def test_facts_of_a_working_import_are_collected(fake_env: FakeEnv) -> None:
    add_torch(fake_env, textwrap_torch())
    result = runtime_of(fake_env)["torch"]
    assert result.ok, result.error
    assert result.facts["version"] == "2.5.1+cu124" and result.facts["cuda_available"] is False
    assert result.facts["arch_list"] == ["sm_80", "sm_90"]


def textwrap_torch() -> str:
    """A stand-in torch package exposing the attributes the child reads (torch itself is not installed here)."""
    return (
        "import types\n__version__ = '2.5.1+cu124'\n"
        "version = types.SimpleNamespace(cuda='12.4')\n"
        "_C = types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=False)\n"
        "class _Cuda:\n"
        "    nccl = types.SimpleNamespace(version=lambda: (2, 21, 5))\n"
        "    @staticmethod\n    def is_available(): return False\n"
        "    @staticmethod\n    def get_arch_list(): return ['sm_80', 'sm_90']\n"
        "    @staticmethod\n    def device_count(): return 0\n"
        "cuda = _Cuda()\n"
        "backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(is_available=lambda: True, version=lambda: 90100))\n"
    )


def test_nothing_to_import_without_torch(fake_env: FakeEnv) -> None:
    assert runtime_of(fake_env) == {}
