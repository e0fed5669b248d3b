"""Source builds: DeepSpeed op builds (JIT and pre-build), pip building a package, ninja, compilers and linkers, and
the builds that are not DeepSpeed's."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose_support import DEV, causes, causes_of, primary, primary_of


@pytest.mark.parametrize("target", ["utils.o", "dc.o", "main.o", "flash_api.o",
                                    "CMakeFiles/ctranslate2.dir/src/layers/transformer.cc.o",
                                    "src/CMakeFiles/mylib.dir/quantizer.cpp.o",
                                    "/src/mylib/build/temp.linux-x86_64-cpython-310/csrc/ops/utils.o"])
def test_a_failed_object_of_another_build_is_not_read_as_a_deepspeed_op(tmp_path: Path, capsys, target: str) -> None:
    """DeepSpeed's op names ('utils', 'dc', 'transformer', 'quantizer') are ordinary file names: only a bare object of
    torch's JIT build file (cpu_adam.o) names an op; ninja failing on another project's says nothing of DeepSpeed."""
    assert primary_of(capsys, tmp_path, f"FAILED: {target}\nninja: build stopped: subcommand failed.\n")["cause"] is None


def test_a_compiler_killed_for_memory_comes_before_the_build_it_stopped(capsys) -> None:
    """Recorded: DeepSpeed's cpu_adam JIT build with the compiler in a 100 MiB memory cgroup (the kernel's OOM killer
    stopped cc1plus twice, dmesg-after-ds-jit-build-oom.txt). With a compiler's own error beside the kill, that error
    comes first: more memory would not fix it."""
    found = causes(capsys, DEV.parent.parent / "recorded" / "ds-jit-build-oom.log")
    assert [c["cause"] for c in found[:2]] == ["host_oom", "deepspeed_build_failure"]
    assert found[1]["library"] == "cpu_adam"
    assert "Killed signal terminated program cc1plus" in found[0]["evidence"][0]["text"]


@pytest.mark.parametrize("kill", [
    "c++: fatal error: Killed signal terminated program cc1plus",  # gcc's driver
    "nvcc error   : 'cicc' died due to signal 9 (Kill signal)",  # CUDA 13.0 nvcc's strings
    "collect2: fatal error: ld terminated with signal 9 [Killed]",  # gcc 12.2's collect2
])
def test_a_compilers_own_error_comes_before_another_jobs_kill(tmp_path: Path, capsys, kill: str) -> None:
    """One job of the build hit a compile error, another's compiler was OOM-killed: more memory would not fix it.
    Each of the three ways a compiler driver reports the kill (SIG152) gives the compiler's error first."""
    mixed = ("Building extension module fused_adam...\nFAILED: multi_tensor_adam.cuda.o\n/venv/lib/python3.10/site-packages/"
             "deepspeed/ops/csrc/includes/type_shim.h(42): error: identifier \"__nv_bfloat16\" is undefined\n"
             f"FAILED: fused_adam_frontend.o\n{kill}\nninja: build stopped: subcommand failed.\n")
    assert [c["cause"] for c in causes_of(capsys, tmp_path, mixed)][:2] == ["deepspeed_build_failure", "host_oom"]


def test_a_jit_build_of_another_extension_is_not_a_deepspeed_build_failure(tmp_path: Path, capsys) -> None:
    """torch's ninja traceback names no extension; the log's 'Building extension module' does: mamba's is not
    DeepSpeed's. Without any name, a JIT build in a training log is read as a DeepSpeed op's, from its compiler line."""
    tail = ("/usr/local/cuda/include/crt/host_config.h:132:2: error: #error -- unsupported GNU version! gcc versions "
            "later than 12 are not supported!\nninja: build stopped: subcommand failed.\nTraceback (most recent call "
            "last):\n  File \"/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py\", line 2100, in "
            "_run_ninja_build\nsubprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n")
    assert primary_of(capsys, tmp_path, "Building extension module selective_scan...\n" + tail)["cause"] is None
    unnamed = primary_of(capsys, tmp_path, tail)
    assert unnamed["cause"] == "deepspeed_build_failure"
    assert "unsupported GNU version" in unnamed["evidence"][0]["text"]


def test_a_compiler_error_is_a_deepspeed_build_failure_only_in_a_deepspeed_op_build(tmp_path: Path, capsys) -> None:
    ds = tmp_path / "ds.log"
    ds.write_text(
        "Building extension module cpu_adam...\n"
        "[1/3] c++ -MMD -MF cpu_adam_impl.o.d -DTORCH_EXTENSION_NAME=cpu_adam -c "
        "/opt/venv/lib/python3.10/site-packages/deepspeed/ops/csrc/adam/cpu_adam_impl.cpp -o cpu_adam_impl.o\n"
        "/opt/venv/lib/python3.10/site-packages/deepspeed/ops/csrc/adam/cpu_adam_impl.cpp:12:10: error: "
        "'__m512' was not declared in this scope\n", encoding="utf-8")
    first = primary(capsys, ds)
    assert first["cause"] == "deepspeed_build_failure" and first["library"] == "cpu_adam"
    other = tmp_path / "flash.log"
    other.write_text(
        "Building wheel for flash-attn (setup.py) ... \n"
        "csrc/flash_attn/src/flash_fwd_kernel.h:7:10: fatal error: cute/tensor.hpp: No such file or directory\n",
        encoding="utf-8")
    assert primary(capsys, other)["cause"] is None


def test_a_pip_prebuild_of_deepspeed_ops_that_fails_to_compile(tmp_path: Path, capsys) -> None:
    """setuptools names the extension it builds; torch's BuildExtension ends a failed compile with 'Error compiling
    objects for extension' (torch/utils/cpp_extension.py). Only DeepSpeed's own extension makes it a DeepSpeed
    build failure."""
    ds = tmp_path / "pip.log"
    ds.write_text("  Building wheel for deepspeed (setup.py): started\n"
                  "  building 'deepspeed.ops.adam.cpu_adam_op' extension\n"
                  "  RuntimeError: Error compiling objects for extension\n", encoding="utf-8")
    assert primary(capsys, ds)["cause"] == "deepspeed_build_failure"
    other = tmp_path / "flash.log"
    other.write_text("  Building wheel for flash-attn (setup.py): started\n"
                     "  RuntimeError: Error compiling objects for extension\n", encoding="utf-8")
    assert primary(capsys, other)["cause"] is None


@pytest.mark.parametrize("text,package", [
    ("  Building wheel for vllm (pyproject.toml) ... error", "vllm"),
    ("  ERROR: Failed building wheel for flash-attn", "flash-attn"),
    ("ERROR: Failed to build installable wheels for some pyproject.toml based projects (mmcv)", "mmcv"),
    ("Failed to build flash-attn", "flash-attn"),
    ("Failed to build the model: missing config.json", None),  # prose, not pip's line
    ("  Building wheel for vllm (pyproject.toml): started", None),  # not failed (yet)
])
def test_the_package_pip_failed_to_build(text: str, package: str | None) -> None:
    from envcheck.diagnose.structure.installer import built_package
    from envcheck.diagnose.structure.model import Line
    found = built_package([Line("run.log", 1, text)])
    assert (found.library if found else None) == package


def test_torch_names_the_extension_it_failed_to_build(tmp_path: Path, capsys) -> None:
    """torch/utils/cpp_extension.py: "Error building extension '{name}'"; the name is the op to blame."""
    log = tmp_path / "run.log"
    log.write_text("step 1\nRuntimeError: Error building extension 'fused_adam'\n", encoding="utf-8")
    first = primary(capsys, log)
    assert (first["cause"], first["library"]) == ("deepspeed_build_failure", "fused_adam")


def test_a_failed_pip_build_step_is_deepspeeds_only_when_pip_installs_deepspeed(tmp_path: Path, capsys) -> None:
    step = ("  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n\n"
            "  × Getting requirements to build wheel did not run successfully.\n")
    ds = tmp_path / "ds.log"
    ds.write_text("Collecting deepspeed==0.6.3\n  Downloading deepspeed-0.6.3.tar.gz (554 kB)\n" + step, encoding="utf-8")
    assert primary(capsys, ds)["cause"] == "deepspeed_build_failure"
    other = tmp_path / "flash.log"
    other.write_text("Collecting deepspeed\n  Using cached deepspeed-0.16.0-py3-none-any.whl\nCollecting flash-attn\n"
                     "  Downloading flash_attn-2.6.3.tar.gz (2.6 MB)\n" + step, encoding="utf-8")
    assert primary(capsys, other)["cause"] is None


def test_a_gcc_outside_cudas_bounds_stops_a_deepspeed_op_build(tmp_path: Path, capsys) -> None:
    """torch's _check_cuda_version raises before any compiler runs; the traceback through op_builder and the op's
    torch_extensions folder say it was DeepSpeed's op."""
    log = tmp_path / "run.log"
    log.write_text(
        "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
        "Creating extension directory /root/.cache/torch_extensions/py310_cu121/fused_adam...\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 524, in jit_load\n'
        "    op_module = load(name=self.name,\n"
        "RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version by "
        "CUDA 12.1. Please make sure to use an adequate version of g++ (>=6.0.0, <13.0).\n", encoding="utf-8")
    first = primary(capsys, log)
    assert first["cause"] == "deepspeed_build_failure" and first["library"] == "fused_adam"
    assert "g++ 13.2.0 is outside what CUDA 12.1 supports" in first["title"]
    other = tmp_path / "flash.log"  # the same check in another package's source build is not DeepSpeed's
    other.write_text(
        "Building wheel for flash-attn (setup.py) ... error\n"
        "RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version by "
        "CUDA 12.1. Please make sure to use an adequate version of g++ (>=6.0.0, <13.0).\n", encoding="utf-8")
    assert primary(capsys, other)["cause"] is None


@pytest.mark.parametrize("step", [
    "  × python setup.py egg_info did not run successfully.",  # newer pip (InstallationSubprocessError)
    "ERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.",
])
def test_pip_failing_to_read_deepspeeds_setup_py_is_a_deepspeed_build_failure(tmp_path: Path, capsys, step: str) -> None:
    log = tmp_path / "pip.log"
    log.write_text("Collecting deepspeed\n  Downloading deepspeed-0.14.0.tar.gz (1.3 MB)\n"
                   "  error: subprocess-exited-with-error\n" + step + "\n", encoding="utf-8")
    first = primary(capsys, log)
    assert first["cause"] == "deepspeed_build_failure" and first["library"] == "deepspeed"
    other = tmp_path / "other.log"  # the same step of another package's install is not DeepSpeed's
    other.write_text("Collecting deepspeed\n  Using cached deepspeed-0.14.0.tar.gz\nCollecting mpi4py\n"
                     "  Downloading mpi4py-3.1.5.tar.gz (2.5 MB)\n" + step + "\n", encoding="utf-8")
    assert (primary(capsys, other) or {}).get("cause") != "deepspeed_build_failure"


def test_a_compiler_that_is_not_installed_stops_a_deepspeed_pre_build(tmp_path: Path, capsys) -> None:
    """distutils spawn: "error: command 'c++' failed: No such file or directory" while building DeepSpeed's ops."""
    log = tmp_path / "pip.log"
    log.write_text("  building 'deepspeed.ops.adam.cpu_adam_op' extension\n"
                   "  error: command 'c++' failed: No such file or directory\n", encoding="utf-8")
    assert primary(capsys, log)["cause"] == "deepspeed_build_failure"


def test_a_deepspeed_op_that_loaded_is_not_blamed_for_a_later_error(tmp_path: Path, capsys) -> None:
    """The launcher's CalledProcessError ends every failed run; after 'Time to load fused_adam op' the build is done."""
    assert primary_of(capsys, tmp_path,
                      "Creating extension directory /root/.cache/torch_extensions/py310_cu121/fused_adam...\n"
                      "Building extension module fused_adam...\n"
                      "Loading extension module fused_adam...\n"
                      "Time to load fused_adam op: 21.3 seconds\n"
                      "Traceback (most recent call last):\n"
                      '  File "train.py", line 10, in <module>\n'
                      "KeyError: 'labels'\n"
                      "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' returned non-zero "
                      "exit status 1.\n")["cause"] is None


_SETUP_TB = ("      Traceback (most recent call last):\n"
             "        File \"<string>\", line 2, in <module>\n"
             "        File \"/tmp/pip-install-1a2b/deepspeed_0f9e/setup.py\", line 195, in <module>\n"
             "          builder.hipify_extension()\n"
             "        File \"/tmp/pip-install-1a2b/deepspeed_0f9e/op_builder/builder.py\", line 750, in hipify_extension\n"
             "          header_include_dirs=self.include_paths(),\n"
             "      {exc}\n")


@pytest.mark.parametrize(("exc", "cause"), [
    ("TypeError: expected str, bytes or os.PathLike object, not NoneType", "deepspeed_build_failure"),
    ("ModuleNotFoundError: No module named 'torch'", "deepspeed_build_failure"),
    # an import error inside DeepSpeed's setup.py is its install failing, ahead of the version conflict it shows
    ("ImportError: cannot import name 'packaging' from 'pkg_resources' (/env/lib/python3.10/site-packages/"
     "pkg_resources/__init__.py)", "deepspeed_build_failure"),
    # causes of their own keep their rule
    ("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
     "missing_cuda_library"),
])
def test_an_exception_in_deepspeeds_setup_is_an_install_failure(tmp_path: Path, capsys, exc: str, cause: str) -> None:
    """pip installing DeepSpeed from source runs its setup.py and op_builder/: whatever they raise stops the install."""
    assert primary_of(capsys, tmp_path, _SETUP_TB.format(exc=exc))["cause"] == cause


def test_the_installed_op_builder_at_training_time_is_not_an_install(tmp_path: Path, capsys) -> None:
    """deepspeed/ops/op_builder/ runs when a training run loads an op: a setup.py of the user's own beside it is not
    DeepSpeed's install, and its exception names no install failure."""
    tb = ("Traceback (most recent call last):\n  File \"/work/setup.py\", line 3, in <module>\n"
          "  File \"/env/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py\", line 480, in load\n"
          "ValueError: bad config key 'stage'\n")
    assert primary_of(capsys, tmp_path, tb)["cause"] is None


_JIT_TB = ("Traceback (most recent call last):\n"
           "  File \"/env/lib/python3.8/site-packages/deepspeed/ops/adam/fused_adam.py\", line 72, in __init__\n"
           "    fused_adam_cuda = FusedAdamBuilder().load()\n"
           "  File \"/env/lib/python3.8/site-packages/deepspeed/ops/op_builder/builder.py\", line 174, in load\n"
           "    return self.jit_load(verbose)\n"
           "  File \"/env/lib/python3.8/site-packages/deepspeed/ops/op_builder/builder.py\", line 210, in jit_load\n"
           "    cxx_args = self.strip_empty_entries(self.cxx_args())\n"
           "{exc}\n")


@pytest.mark.parametrize(("exc", "cause"), [
    ("TypeError: object of type 'NoneType' has no len()", "deepspeed_build_failure"),
    # torch's own check of CUDA_HOME stops the op's build (no toolkit); an op built for another torch keeps its rule
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
     "deepspeed_build_failure"),
    ("ImportError: /root/.cache/torch_extensions/py38_cu117/fused_adam/fused_adam.so: undefined symbol: "
     "_ZN3c104cuda9SetDeviceEi", "segfault_abi_mismatch"),
])
def test_an_exception_in_deepspeeds_jit_load_is_an_op_build_failure(tmp_path: Path, capsys, exc: str,
                                                                     cause: str) -> None:
    first = primary_of(capsys, tmp_path, _JIT_TB.format(exc=exc))
    assert first["cause"] == cause
    if cause == "deepspeed_build_failure":
        assert first["library"] == "fused_adam"


def test_no_nvcc_where_a_deepspeed_op_build_runs_it(tmp_path: Path, capsys) -> None:
    """Older DeepSpeed ran CUDA_HOME/bin/nvcc -V bare: subprocess's FileNotFoundError is the build's reason."""
    tail = ("  File \"/env/lib/python3.8/site-packages/deepspeed/ops/op_builder/builder.py\", line 174, in load\n"
            "    return self.jit_load(verbose)\n"
            "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'\n")
    first = primary_of(capsys, tmp_path, tail)
    assert first["cause"] == "deepspeed_build_failure" and "nvcc is not installed" in first["title"]


_JIT_LOAD_TAIL = ("  File \"/env/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py\", line 480, in "
                  "jit_load\n    op_module = load(name=self.name,\n")
# pip pre-building DeepSpeed's ops (DS_BUILD_OPS=1): torch 2.13's BuildExtension.build_extensions runs
# _check_cuda_version, which raises CUDA_NOT_FOUND_MESSAGE without a toolkit
_SETUP_TAIL = ("  Building wheel for deepspeed (setup.py) ... error\n      DS_BUILD_OPS=1\n"
               "      File \"/tmp/pip-install-x/deepspeed_1/setup.py\", line 320, in <module>\n"
               "      File \"/env/lib/python3.10/site-packages/torch/utils/cpp_extension.py\", line 817, in "
               "build_extensions\n")


@pytest.mark.parametrize("tail", [
    _JIT_LOAD_TAIL + "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
    _SETUP_TAIL + "    RuntimeError: CUDA was not found on the system, please set the CUDA_HOME or the "
    "CUDA_PATHenvironment variable or add NVCC to your system PATH. The extension compilation will fail.",
])
def test_no_cuda_toolkit_where_a_deepspeed_op_build_needs_one(tmp_path: Path, capsys, tail: str) -> None:
    """torch's cpp_extension finding no toolkit in DeepSpeed's jit_load or setup.py is a DeepSpeed op build failure
    (the label rule: any other failure to build a DeepSpeed op) that names the missing toolkit; outside a DeepSpeed
    build the same lines stay SIG051's."""
    first = primary_of(capsys, tmp_path, tail + "\n")
    assert first["cause"] == "deepspeed_build_failure" and "no CUDA toolkit" in first["title"]
    for alone in ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
                  "RuntimeError: CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATHenvironment "
                  "variable or add NVCC to your system PATH. The extension compilation will fail."):
        assert primary_of(capsys, tmp_path, alone + "\n")["cause"] == "cuda_toolkit_mismatch"


def test_no_cuda_toolkit_beside_a_cpu_build_of_torch_is_the_cpu_build(tmp_path: Path, capsys) -> None:
    """cpp_extension looks for CUDA_HOME only in a CUDA build of torch: with a +cpu torch in the log, the CPU build
    is the cause, not a missing toolkit."""
    text = ("Successfully installed deepspeed-0.19.8 torch-2.13.0+cpu\n" + _JIT_LOAD_TAIL
            + "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.\n")
    assert primary_of(capsys, tmp_path, text)["cause"] == "torch_cpu_only"


def test_no_ninja_for_a_jit_build(tmp_path: Path, capsys) -> None:
    """torch's verify_ninja_availability: an unnamed JIT build (a training run's, usually a DeepSpeed op) without
    ninja names the missing tool in its title and fix."""
    tb = ("Traceback (most recent call last):\n"
          "  File \"/env/lib/python3.10/site-packages/torch/utils/cpp_extension.py\", line 1850, in "
          "verify_ninja_availability\n    raise RuntimeError(\"Ninja is required to load C++ extensions\")\n"
          "RuntimeError: Ninja is required to load C++ extensions\n")
    first = primary_of(capsys, tmp_path, tb)
    assert first["cause"] == "deepspeed_build_failure" and "ninja is not installed" in first["title"]
    assert "pip install ninja" in first["fixes"][0]["summary"]


def test_an_install_failure_names_the_op_whose_builder_raised(tmp_path: Path, capsys) -> None:
    """setup.py runs each op's builder (op_builder/async_io.py); the innermost one on the stack is the op to blame."""
    tb = ("Traceback (most recent call last):\n  File \"setup.py\", line 37, in <module>\n"
          "  File \"/src/DeepSpeed/op_builder/__init__.py\", line 48, in <module>\n"
          "  File \"/src/DeepSpeed/op_builder/async_io.py\", line 8, in <module>\n"
          "    import torch\nModuleNotFoundError: No module named 'torch'\n")
    first = primary_of(capsys, tmp_path, tb)
    assert (first["cause"], first["library"]) == ("deepspeed_build_failure", "async_io")
    ds_opt = primary_of(capsys, tmp_path, "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n")
    assert (ds_opt["cause"], ds_opt["library"]) == ("deepspeed_build_failure", "cpu_adam")


def test_another_projects_setup_py_is_not_deepspeeds(tmp_path: Path, capsys) -> None:
    """Megatron-DeepSpeed, DeepSpeed-MII and DeepSpeed-Chat have setup.py files of their own: an error in one of them
    is not DeepSpeed's install failing."""
    tb = ("      Traceback (most recent call last):\n        File \"<string>\", line 2, in <module>\n"
          "        File \"/home/u/Megatron-DeepSpeed/setup.py\", line 27, in <module>\n"
          "          with open(\"megatron/core/README.md\", \"r\", encoding='utf-8') as fh:\n"
          "      FileNotFoundError: [Errno 2] No such file or directory: 'megatron/core/README.md'\n")
    assert primary_of(capsys, tmp_path, tb)["cause"] is None
    sdist = _SETUP_TB.format(exc="ModuleNotFoundError: No module named 'torch'").replace(
        "/tmp/pip-install-1a2b/deepspeed_0f9e/", "/src/deepspeed-0.14.0/")
    assert primary_of(capsys, tmp_path, sdist)["cause"] == "deepspeed_build_failure"


@pytest.mark.parametrize("exc", ["KeyboardInterrupt",
                                 "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4121 got "
                                 "signal: 15"])
def test_an_interrupt_while_waiting_for_a_build_lock_is_no_build_failure(tmp_path: Path, capsys, exc: str) -> None:
    """A rank that waits in jit_load for another's build (torch's FileBaton) and is stopped names no build failure."""
    tb = _JIT_TB.replace("    cxx_args = self.strip_empty_entries(self.cxx_args())\n",
                         "  File \"/env/lib/python3.8/site-packages/torch/utils/file_baton.py\", line 42, in wait\n"
                         "    time.sleep(self.wait_seconds)\n").format(exc=exc)
    assert primary_of(capsys, tmp_path, tb)["cause"] is None


def test_an_op_deepspeed_finds_incompatible_keeps_its_own_title(tmp_path: Path, capsys) -> None:
    """jit_load raising 'not being compatible' (libaio missing for async_io) is SIG109's, with its own fix."""
    tb = _JIT_TB.format(exc="RuntimeError: Unable to JIT load the async_io op due to it not being compatible due to "
                            "hardware/software issue. None")
    first = primary_of(capsys, tmp_path, tb)
    assert first["cause"] == "deepspeed_build_failure" and "could not JIT-build" not in first["title"]


_PROBE = ("[WARNING]  fused_adam compatibility check failed (Unable to run /usr/local/cuda/bin/nvcc, unable to compile "
          "CUDA op(s): [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'), treating the op as not "
          "compatible\n")


def test_deepspeeds_import_time_probe_warning_names_nothing(tmp_path: Path, capsys) -> None:
    """DeepSpeed probes every op at import (probe_is_compatible) and goes on: its warning, quoting nvcc's absence,
    is no build failure, and it gives no reason to another op's build."""
    assert primary_of(capsys, tmp_path, _PROBE + "{'loss': 1.23, 'epoch': 1.0}\n")["cause"] is None
    build = (_PROBE + "Building extension module cpu_adam...\nFAILED: cpu_adam.so\n"
             "/usr/bin/ld: cannot find -lcurand: No such file or directory\n"
             "ninja: build stopped: subcommand failed.\n")
    found = causes_of(capsys, tmp_path, build)
    assert found[0]["library"] == "libcurand" and all("nvcc" not in c["title"] for c in found)


_DEL = ("Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x7f0c2a1b3d00>\nTraceback (most recent call "
        "last):\n  File \"/env/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py\", line 102, in __del__\n"
        "    self.ds_opt_adam.destroy_adam(self.opt_id)\n"
        "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n")


def test_cpu_adams_del_names_the_op_only_when_its_init_failure_is_not_shown(tmp_path: Path, capsys) -> None:
    """__del__ fails after any failure of __init__; when the log shows that failure (an empty parameter list,
    Ctrl-C echoed as ^C while waiting on a build lock), it says what happened."""
    assert primary_of(capsys, tmp_path, _DEL)["library"] == "cpu_adam"
    init = ("Traceback (most recent call last):\n"
            "  File \"/env/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py\", line 94, in __init__\n"
            "    super(DeepSpeedCPUAdam, self).__init__(model_params, default_args)\n"
            "  File \"/env/lib/python3.10/site-packages/torch/optim/optimizer.py\", line 261, in __init__\n"
            "    raise ValueError(\"optimizer got an empty parameter list\")\n"
            "ValueError: optimizer got an empty parameter list\n")
    assert primary_of(capsys, tmp_path, init + _DEL)["cause"] is None
    interrupted = "^C" + init.replace("ValueError: optimizer got an empty parameter list", "KeyboardInterrupt")
    assert primary_of(capsys, tmp_path, interrupted + _DEL)["cause"] is None


def test_an_install_failure_names_the_compilers_reason_when_setup_py_raised_it(tmp_path: Path, capsys) -> None:
    """torch's compiler-bounds check raised inside DeepSpeed's setup.py: the install's title and fix say which g++."""
    exc = ("RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version "
           "by CUDA 11.8. Please make sure to use an adequate version of g++ (>=6.0.0, <12.0).")
    first = primary_of(capsys, tmp_path, _SETUP_TB.format(exc=exc))
    assert first["title"].endswith("g++ 13.2.0 is outside what CUDA 11.8 supports")
    assert "<12.0" in first["fixes"][0]["summary"]


def test_pip_refusing_another_packages_wheel_is_no_deepspeed_failure(tmp_path: Path, capsys) -> None:
    """SIG169 reads pip's refusal of a wheel only for DeepSpeed's own wheel."""
    text = "ERROR: flash_attn-2.5.8-cp311-cp311-win_amd64.whl is not a supported wheel on this platform.\n"
    assert primary_of(capsys, tmp_path, text)["cause"] != "deepspeed_build_failure"



@pytest.mark.parametrize("package", ["flash-attn", "[8 lines of output]"])
def test_pips_install_failure_names_deepspeed_only_for_deepspeed(tmp_path: Path, capsys, package: str) -> None:
    """pip's '╰─> <package>' under 'Encountered error while trying to install package.' (SIG090) is DeepSpeed's
    only when the package is deepspeed; the same arrow also introduces a subprocess's output."""
    text = "× Encountered error while trying to install package.\n╰─> " + package + "\n"
    assert primary_of(capsys, tmp_path, text)["cause"] != "deepspeed_build_failure"


def test_an_ipython_frame_through_run_ninja_build_is_a_jit_build(tmp_path: Path, capsys) -> None:
    """IPython prints a frame as '<file>.py in <func>(<args>)': a paste of its last lines keeps the JIT build."""
    text = ("CalledProcessError                        Traceback (most recent call last)\n"
            "~/.local/lib/python3.6/site-packages/torch/utils/cpp_extension.py in _run_ninja_build(build_directory, "
            "verbose, error_prefix)\n   1672             check=True,\n-> 1673             env=env)\n")
    assert primary_of(capsys, tmp_path, text)["cause"] == "deepspeed_build_failure"


@pytest.mark.parametrize("text", [
    # another project's csrc/quantization tree (llm-awq, vLLM) failing to compile is no DeepSpeed build
    "/usr/local/cuda/bin/nvcc -I/work/llm-awq/awq/kernels/csrc -c csrc/quantization/gemm_cuda_gen.cu -o build/gemm.o\n"
    "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1\n",
    # a DeepSpeed source's compiler warning, then another package's wheel failing
    "csrc/adam/cpu_adam_impl.cpp(148): warning C4244: conversion from 'double' to 'float'\n"
    "error: command 'C:\\BuildTools\\VC\\bin\\cl.exe' failed with exit code 2\nERROR: Failed building wheel for xformers\n",
])
def test_another_projects_build_beside_csrc_lines_is_not_deepspeeds(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, text)["cause"] != "deepspeed_build_failure"


def test_another_extension_that_failed_to_build_is_not_a_deepspeed_op(tmp_path: Path, capsys) -> None:
    """torch's 'Error building extension' names the extension: only DeepSpeed's ops are DeepSpeed build failures."""
    assert primary_of(capsys, tmp_path, "RuntimeError: Error building extension 'fused_adam'\n")["cause"] == \
        "deepspeed_build_failure"
    assert primary_of(capsys, tmp_path, "RuntimeError: Error building extension 'selective_scan_cuda'\n")["cause"] != \
        "deepspeed_build_failure"
