"""The interpreter probe runs in the target interpreter and reads metadata and build files without importing."""

from __future__ import annotations

from pathlib import Path

from conftest import ASSETS, FakeEnv, torch_version_file

from envcheck.checks.python_env import unmet_requirements
from envcheck.probes.python_env import literal_assignments, probe_python, read_deepspeed_info, read_torch_version

DS_ASSETS = ASSETS / "nvidia"
PY_ASSETS = ASSETS / "python"


def test_describes_the_target_interpreter_not_envchecks(fake_env: FakeEnv) -> None:
    fake_env.add_dist("torch", "2.5.1+cu124", files={"torch/version.py": torch_version_file("2.5.1+cu124", "12.4")})
    fake_env.add_dist("flash-attn", "2.7.0.post2", requires=("torch", "einops"))
    found = probe_python(str(fake_env.python))
    assert found.env is not None
    assert found.env.prefix == str(fake_env.root)
    assert found.env.kind == "venv"
    assert found.env.packages == {"flash-attn": "2.7.0.post2", "torch": "2.5.1+cu124"}
    assert found.env.requires["flash-attn"] == ("torch", "einops")
    assert found.env.marker_env["python_version"].count(".") == 1
    assert found.torch is not None and found.torch.version == "2.5.1+cu124" and found.torch.cuda == "12.4"


def test_requirements_keep_their_extras_and_markers_and_pip_check_ignores_extras(fake_env: FakeEnv) -> None:
    """An extra's requirement is recorded (so checks can say where a range comes from) but is no requirement of
    the install: an unmet one raises nothing, as `pip check` is silent about it."""
    fake_env.add_dist("accelerate", "1.0.0", requires=("torch>=2.0", "deepspeed>=0.9; extra == 'deepspeed'"))
    fake_env.add_dist("torch", "2.5.1", files={"torch/version.py": torch_version_file("2.5.1", None)})
    found = probe_python(str(fake_env.python))
    assert found.env.requires["accelerate"] == ("torch>=2.0", "deepspeed>=0.9; extra == 'deepspeed'")
    assert list(unmet_requirements(found.env)) == []


def test_egg_info_sections_become_markers(fake_env: FakeEnv) -> None:
    egg = fake_env.site / "oldpkg-1.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: oldpkg\nVersion: 1.0\n")
    (egg / "requires.txt").write_text("numpy>=1.20\n\n[:python_version < \"3.8\"]\nimportlib-metadata\n\n"
                                      "[torch]\ntorch>=2.0\n\n[gpu:sys_platform == \"linux\"]\npynvml\n")
    found = probe_python(str(fake_env.python))
    assert found.env.requires["oldpkg"] == (
        "numpy>=1.20", 'importlib-metadata; (python_version < "3.8")', 'torch>=2.0; extra == "torch"',
        'pynvml; (sys_platform == "linux") and extra == "gpu"')
    assert [str(r) for _, r, _ in unmet_requirements(found.env)] == ["numpy>=1.20"]


def test_real_deepspeed_build_files_are_read(fake_env: FakeEnv) -> None:
    """Recorded git_version_info_installed.py files of real DeepSpeed installs (see assets PROVENANCE)."""
    info = read_deepspeed_info(str(DS_ASSETS / "ds-git_version_info_installed-1.py.txt"))
    assert (info.version, info.compiled_torch, info.compiled_cuda, info.compiled_nccl) == ("0.16.3", "2.3", "12.4", "2.20")
    assert info.installed_ops == () and info.accelerator == "cuda" and info.compiled_hip is None
    cpu = read_deepspeed_info(str(PY_ASSETS / "ds-0.19.8-torch2.13cpu-git_version_info_installed.py.txt"))
    assert (cpu.version, cpu.compiled_torch, cpu.compiled_cuda, cpu.accelerator) == ("0.19.8", "2.13", None, "cpu")
    old = read_deepspeed_info(str(DS_ASSETS / "ds-git_version_info_installed-3.py.txt"))
    assert (old.version, old.compiled_torch, old.compiled_cuda) == ("0.7.3+19d7787", "1.10", "10.2")


def test_real_torch_version_file_is_read() -> None:
    torch = read_torch_version(str(PY_ASSETS / "torch-2.13.0+cpu-version.py.txt"))
    assert (torch.version, torch.cuda, torch.hip) == ("2.13.0+cpu", None, None)
    assert torch.git_version == "cf30153c4c131c8164ee7798e5022d810682e2cb"


def test_literal_assignments_never_execute_code(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    source = tmp_path / "version.py"
    source.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n__version__ = '1.0'\n")
    assert literal_assignments(str(source)) == {"__version__": "1.0"}
    assert not marker.exists()


def test_duplicates_across_site_directories(fake_env: FakeEnv, tmp_path: Path) -> None:
    extra = tmp_path / "extra-site"
    extra.mkdir()
    (fake_env.site / "extra.pth").write_text(str(extra) + "\n")
    fake_env.add_dist("transformers", "4.46.0")
    fake_env.add_dist("transformers", "4.38.2", site=extra)
    found = probe_python(str(fake_env.python))
    assert found.env.packages["transformers"] == "4.46.0"  # sys.path order: the venv's site comes first
    (duplicate,) = found.env.duplicates
    assert duplicate.name == "transformers" and duplicate.versions == ("4.46.0", "4.38.2")
    assert duplicate.locations == (str(fake_env.site), str(extra))


def test_corrupt_metadata_is_recorded_not_fatal(fake_env: FakeEnv) -> None:
    fake_env.add_dist("ok-package", "1.0")
    fake_env.add_dist("no-version", "1.0", metadata="Metadata-Version: 2.1\nName: no-version\n")
    fake_env.add_dist("garbage", "1.0", metadata="\x00\x01\x02 not an email header block \xff")
    empty = fake_env.site / "empty-1.0.dist-info"
    empty.mkdir()
    found = probe_python(str(fake_env.python))
    assert found.env.packages == {"ok-package": "1.0"}
    reasons = "\n".join(found.env.broken)
    assert "no_version-1.0.dist-info: metadata has no Version" in reasons
    assert "empty-1.0.dist-info: metadata unreadable" in reasons
    assert "garbage-1.0.dist-info" in reasons


def test_a_broken_interpreter_is_a_skip_reason(tmp_path: Path) -> None:
    crashing = tmp_path / "python"
    crashing.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    found = probe_python(str(crashing))
    assert found.env is None
    (skip,) = found.skipped
    assert skip.probe == "python" and "SIGSEGV" in skip.reason


def test_nvidia_wheel_libraries_carry_their_distribution_version(fake_env: FakeEnv) -> None:
    fake_env.add_dist("nvidia-nccl-cu12", "2.21.5", files={"nvidia/nccl/lib/libnccl.so.2": "not really ELF"})
    found = probe_python(str(fake_env.python))
    assert found.wheel_libs == {str(fake_env.site / "nvidia/nccl/lib/libnccl.so.2"): "2.21.5"}
