"""The structure layer on real logs of the corpus's dev half (tests/assets/diagnose/corpus/labels.toml; the test
half is never read here), the honest unknown, and linear time on a traceback-dense log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.diagnose.scan import Matcher, scan
from envcheck.diagnose.source import open_log
from envcheck.matrix import load_matrix
from diagnose_support import DEV, causes, primary, primary_of


# (dev log, cause, library or None): one per class of miss issue 17 lists, and an Xid line
CASES = [
    ("c010", "missing_cuda_library", "libcurand"),  # ld: cannot find -lcurand while DeepSpeed builds cpu_adam
    ("c002", "shm_too_small", None),  # NCCL shmutils.cc: failed to extend /dev/shm/nccl-*
    ("c008", "cuda_arch_unsupported", None),  # nvcc fatal: Unsupported gpu architecture 'compute_86'
    ("c012", "disk_full", None),  # OSError: [Errno 28] No space left on device saving a checkpoint
    ("c050", "disk_full", None),  # a container layer: "no space left on device"
    ("c003", "numpy_abi", "numpy"),  # `np.NaN` was removed in the NumPy 2.0 release
    ("c040", "version_conflict", "transformers"),  # ImportError: cannot import name ... from 'transformers...'
    ("c068", "gpu_xid", None),  # NVRM: Xid lines in the kernel log
    ("c112", "gpu_xid", None),  # NVRM: Reset required / GSP failures, no Xid number
    ("c015", "segfault_abi_mismatch", "flash_attn_2_cuda"),  # undefined symbol in flash_attn_2_cuda.*.so
    ("c061", "nccl_error", "nccl"),  # NCCL's error trace (transport/net.cc:515 -> 2)
    ("c124", "nccl_error", "nccl"),  # NCCL error in: ... invalid usage; Duplicate GPU detected
    ("c120", "nccl_timeout", "nccl"),  # [Rank 6] Watchdog caught collective ... (the line cut where the user cut it)
    ("c139", "host_oom", None),  # the kernel's "Kill process ... or sacrifice child" lines pasted into the log
    ("c142", "version_conflict", "transformers"),  # check_min_version: requires a source install of Transformers
    # second round (corpus grown to 217 logs; dev half only)
    ("c129", "shm_too_small", None),  # ENOSPC writing </torch_739_...>: torch's shm file, not the disk
    ("c130", "shm_too_small", None),  # unable to write to file </torch_18693_...> (THAllocator)
    ("c105", "deepspeed_build_failure", "transformer_inference"),  # nvcc error in csrc/transformer/inference, Windows
    ("c137", "deepspeed_build_failure", "cpu_adam"),  # command 'x86_64-linux-gnu-gcc' failed; ...=cpu_adam_op
    ("c154", "gpu_xid", None),  # CUDA_ERROR_ECC_UNCORRECTABLE
    ("c164", "gpu_xid", None),  # nvidia-smi: Unable to determine the device handle for GPU...: Unknown Error
    ("c229", "host_oom", None),  # "Killed" printed right after a tqdm bar
    ("c236", "disk_full", None),  # torch.save's zip writer: unexpected pos N vs M
    ("c251", "torch_cpu_only", "torch"),  # >>> print(torch.version.cuda) answered None (Windows)
    ("c258", "numpy_abi", "numpy"),  # ValueError: numpy.dtype size changed, may indicate binary incompatibility
    ("c180", "nccl_error", "nccl"),  # NET/IB : Got completion from peer ... with error 4
    ("c178", "nccl_timeout", "nccl"),  # ALLTOALL_BASE watchdog timeout
    # third round (244 logs; dev half only)
    ("c268", "deepspeed_build_failure", "transformer_inference"),  # MSVC error C2398 in csrc/transformer/inference
    ("c270", "deepspeed_build_failure", "cpu_adam"),  # JIT "Building extension module cpu_adam", _run_ninja_build
    ("c271", "deepspeed_build_failure", "fused_adam"),  # nvcc fatal: Value 'c++17' is not defined for option 'std'
    ("c272", "deepspeed_build_failure", "fused_lamb"),  # csrc/lamb/fused_lamb_cuda_kernel.cu: fatal error: type_shim.h
    ("c291", "nccl_error", "nccl"),  # nccl-tests: Test NCCL failure common.cu:959 'internal error ...'
    ("c319", "missing_cuda_library", "cudnn_ops_infer64_8.dll"),  # cuDNN: Could not load library ... Error code 126
    ("c321", "missing_cuda_library", "libcuda"),  # Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so
    ("c329", "missing_cuda_library", "cublas64_12.dll"),  # CTranslate2: Library cublas64_12.dll is not found
    # fourth round (278 logs; dev half only)
    ("c363", "nccl_error", "nccl"),  # old nccl-tests: NCCL failure all_reduce.cu:95 'unhandled cuda error'
    ("c364", "nccl_error", "nccl"),  # Horovod: ncclCommInitRank failed: unhandled cuda error
    ("c368", "nccl_error", "nccl"),  # Failed to bind NVLink SHARP (NVLS) Multicast memory (Fabric Manager)
    ("c425", "cuda_arch_unsupported", None),  # Triton's ptxas: Value 'sm_121a' is not defined for option 'gpu-name'
    ("c431", "host_oom", None),  # torch.multiprocessing.spawn: process 0 terminated with signal SIGKILL
    # the library named (fifth session)
    ("c102", "version_conflict", "xformers"),  # pip: xformers 0.0.20.dev526 requires torch==2.0.0, but you have ...
    ("c203", "cuda_arch_unsupported", "vllm"),  # Building wheel for vllm (pyproject.toml) ... error; nvcc fatal
    ("c430", "cuda_toolkit_mismatch", "detectron2"),  # pip: Encountered error while trying to install ╰─> detectron2
    # fifth round (332 logs; dev half only)
    ("c498", "nccl_error", "nccl"),  # include/socket.h:344 WARN Socket creation failed : Address family not supported
    ("c570", "driver_too_old", None),  # torch's cudaGetDeviceCount warning: Error 803
    ("c611", "shm_too_small", None),  # unable to write to file </torch_ (the paste ends there)
    ("c612", "shm_too_small", "ray"),  # Ray: the configured object store size exceeds the capacity of /dev/shm
    ("c542", "segfault_other", "torch"),  # gdb: #0 ... in at::cuda::getCurrentCUDABlasHandle() () from .../torch/lib
    ("c650", "deepspeed_build_failure", "deepspeed"),  # pip: Getting requirements to build wheel ... error (Windows)
    ("c719", "nccl_error", "nccl"),  # Paddle: (External) Nccl error, unhandled cuda error
    # seventh round (dev half only)
    ("c761", "driver_too_old", None),  # nvidia-container-cli: requirement error: unsatisfied condition: cuda >= 9.2
    ("c763", "driver_too_old", None),  # CuPy: cudaErrorCompatNotSupportedOnDevice
    ("c764", "driver_too_old", None),  # Ollama: your nvidia driver is too old or missing
    ("c769", "driver_too_old", None),  # XLA: kernel version 515.48.7 does not match DSO version 510.73.5
    ("c780", "missing_cuda_library", "libcuda"),  # Triton's build: /usr/bin/ld: cannot find -lcuda
    ("c785", "missing_cuda_library", None),  # Paddle: Cannot load cudnn shared library
    ("c840", "cuda_arch_unsupported", "fused_adam"),  # nvcc fatal: compute_89 while DeepSpeed JIT-builds fused_adam
    ("c841", "deepspeed_build_failure", "fused_adam"),  # FAILED: fused_adam_frontend.o, then fused_adam.so missing
    ("c920", "gpu_oom", None),  # TensorFlow 1.x: OOM when allocating tensor with shape[...] (no device on the line)
    ("c927", "host_oom", None),  # Loading checkpoint shards ... Killed
    ("c900", "nccl_error", "nccl"),  # NCCL WARN XML Import Channel (its INFO line about libnccl-net.so is no error)
    ("c903", "nccl_error", None),  # nccl-tests: Test CUDA failure ... 'system not yet initialized' (Fabric Manager)
    ("c941", "numpy_abi", "numpy"),  # ComfyUI on Windows: Numpy is not available
    ("c949", "shm_too_small", "mxnet"),  # MXNet DataLoader: Worker timed out ... Insufficient shared_memory
    ("c962", "cuda_toolkit_mismatch", "flash_attn"),  # FlashAttention is only supported on CUDA 11.6 and above
]


@pytest.mark.parametrize("name,cause,library", CASES, ids=[c[0] for c in CASES])
def test_dev_logs_get_the_right_cause(capsys, match_engine: str, name: str, cause: str, library: str | None) -> None:
    first = primary(capsys, DEV / f"{name}.log")
    assert first["cause"] == cause
    if library:
        assert first["library"] == library


def test_xid_79_names_the_catalog_meaning(tmp_path: Path, capsys) -> None:
    # The driver's own format (open-gpu-kernel-modules nvrm), as the dev logs show it, for Xid 79.
    log = tmp_path / "kern.log"
    log.write_text("[Sun Jan 11 09:52:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=2610, name=python, "
                   "GPU has fallen off the bus.\n")
    first = primary(capsys, log)
    assert first["cause"] == "gpu_xid" and "Xid 79" in first["title"] and "fallen off the bus" in first["title"]
    assert "docs.nvidia.com/deploy/xid-errors" in first["explanation"]


def test_honest_unknown_shows_the_first_real_exception_and_exit_status(tmp_path: Path, capsys) -> None:
    log = tmp_path / "run.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
                   "KeyError: 'labels'\n"
                   "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n")
    assert main(["diagnose", "--offline", str(log), "--exit-code", "1"]) == 0
    out = capsys.readouterr().out
    assert "nothing in the log matched a known cause" in out and "KeyError: 'labels'" in out and "exit status 1" in out
    main(["diagnose", "--offline", "--json", str(log)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["causes"] == [] and doc["first_exception"]["text"] == "KeyError: 'labels'"


def _lines_visited(tmp_path: Path, headers: int, monkeypatch) -> int:
    import envcheck.diagnose.scan as scan_mod

    calls = {"n": 0}
    real = scan_mod._Scanner._traceback  # noqa: SLF001

    def counting(self, *args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return real(self, *args)

    monkeypatch.setattr(scan_mod._Scanner, "_traceback", counting)  # noqa: SLF001
    path = tmp_path / f"tb{headers}.log"
    path.write_bytes(b"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n" * headers)
    with open_log(str(path)) as log:
        scan([log], Matcher(load_matrix().signatures))
    return calls["n"]


def test_traceback_dense_log_is_linear(tmp_path: Path, monkeypatch) -> None:
    """Tracebacks parsed do not grow with the log once the kept ones are full (and each reads its own lines)."""
    small, large = _lines_visited(tmp_path, 5_000, monkeypatch), _lines_visited(tmp_path, 50_000, monkeypatch)
    assert large <= small * 2


def test_common_anchors_are_still_found_where_a_run_dies(tmp_path: Path, capsys, match_engine: str) -> None:
    """In a long step log the bytes of 'Error: ' are everywhere, so the re engine looks for it only in the head
    and the tail; the error that ends the run is in the tail and must still be shown."""
    log = tmp_path / "train.log"
    step = "[INFO|trainer.py:2345] Epoch 0.42 Eval: {'loss': 1.2345, 'error_rate': 0.01, 'Err': 0, 'root': 1}\n"
    with log.open("w") as out:
        out.write(step * 60_000)  # about 5 MB: past the head (64 KiB) and the tail (256 KiB)
        out.write("ValueError: the dataset column 'text' is missing\n")
    main(["diagnose", "--offline", "--json", str(log)])
    report = json.loads(capsys.readouterr().out)
    assert report["causes"] == []
    assert "the dataset column 'text' is missing" in (report["first_exception"] or {}).get("text", "")


def test_every_signature_has_a_literal_anchor() -> None:
    """A signature without one is matched against every block with its full regex: 8 s instead of 0.3 s on a
    100 MB log (a top-level alternation needs a literal in each branch)."""
    matcher = Matcher(load_matrix(only=frozenset({"signatures.toml"})).signatures)
    assert [rule.id for rule in matcher.unanchored] == []


def test_windows_commit_limit_is_not_also_a_missing_dll(tmp_path: Path, capsys) -> None:
    log = tmp_path / "win.log"
    log.write_text("OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
                   "\"C:\\Python310\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll\" or one of its "
                   "dependencies.\n", encoding="utf-8")
    assert [c["cause"] for c in causes(capsys, log)] == ["host_oom"]


def test_nccls_shm_failure_other_than_full_says_so(tmp_path: Path, capsys) -> None:
    """mkstemp in /dev/shm failing for permissions is not a full /dev/shm (NCCL prints the errno)."""
    denied = primary_of(capsys, tmp_path, "gpu1:1:2 [0] misc/shmutils.cc:73 NCCL WARN Error: failed to create shared "
                        "memory file /dev/shm/nccl-XXXXXX, error Permission denied (13)\n")
    assert denied["cause"] == "shm_too_small" and "not writable" in denied["explanation"]
    full = primary_of(capsys, tmp_path, "gpu1:1:2 [0] os/linux.cc:842 NCCL WARN Error while creating shared memory "
                      "segment /dev/shm/nccl-abc (size 123), error: No space left on device (28)\n")
    assert "no space left" in full["explanation"] and full["confidence"] > denied["confidence"]


def test_an_alternation_with_a_common_prefix_keeps_an_anchor_per_branch() -> None:
    from envcheck.diagnose.literals import anchors

    # `re` parses 'NCCL Error|NCCL error' as 'NCCL ' + a branch: the anchor must not shrink to the common 'NCCL '
    assert anchors(r"NCCL Error \d+: |NCCL error: (unhandled|internal)") == ("NCCL Error ", "NCCL error: ")
    assert anchors(r"ab|cd") is None  # a branch under MIN_ANCHOR: matched against every block instead


def test_a_faulthandler_dump_names_the_extension_and_the_launcher_is_a_symptom(tmp_path: Path, capsys) -> None:
    """Issue 17: on a faulthandler dump whose stack is in flash_attn, the report named a generic segfault, advised
    enabling faulthandler (which the log shows) and listed ChildFailedError as the first exception. The dump is laid
    out as CPython's faulthandler writes it (Python 3.11: frames, then 'Extension modules: ... (total: N)')."""
    log = tmp_path / "rank0.log"
    log.write_text(
        "[rank0]: Fatal Python error: Segmentation fault\n[rank0]: \n"
        "[rank0]: Current thread 0x00007f3c8b7fe740 (most recent call first):\n"
        '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py", line 96 in '
        "_flash_attn_forward\n"
        '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py", line 432 in forward\n'
        '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/torch/autograd/function.py", line 553 in apply\n'
        "[rank0]: \n[rank0]: Extension modules: numpy.core._multiarray_umath, torch._C, flash_attn_2_cuda (total: 3)\n"
        "E1130 12:34:56.789000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -11) "
        "local_rank: 0 (pid: 4243) of binary: /opt/venv/bin/python\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n", encoding="utf-8")
    main(["diagnose", "--offline", "--json", str(log)])
    doc = json.loads(capsys.readouterr().out)
    first = doc["causes"][0]
    assert first["cause"] == "segfault_abi_mismatch" and "flash_attn" in (first["library"] or "")
    assert first["library"] == "flash_attn_2_cuda"
    advice = " ".join(f["summary"] + " " + " ".join(f["commands"]) for c in doc["causes"] for f in c["fixes"])
    assert "faulthandler" not in advice and "Reinstall flash_attn " in advice
    assert doc["first_exception"]["text"] == "[rank0]: Fatal Python error: Segmentation fault"


def test_a_gdb_frame_outside_site_packages_names_the_shared_library(tmp_path: Path, capsys) -> None:
    log = tmp_path / "gdb.log"
    log.write_text("Program terminated with signal SIGSEGV, Segmentation fault.\n"
                   "#0  0x00007f3a1c2b4e10 in ncclCommInitRank () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n",
                   encoding="utf-8")
    first = primary(capsys, log)
    assert (first["cause"], first["library"]) == ("segfault_other", "libnccl")


def test_a_cuda_out_of_memory_under_an_nccl_error_is_the_gpu_running_out(tmp_path: Path, capsys) -> None:
    """torch prints NCCL's 'Last error' after its own reading: the out-of-memory explains the NCCL error."""
    assert primary_of(capsys, tmp_path,
                      "[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
                      "c10d/ProcessGroupNCCL.cpp:3356, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
                      "NCCL version 2.26.2\n"
                      "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
                      "[rank1]: Last error:\n"
                      "[rank1]: Cuda failure 2 'out of memory'\n")["cause"] == "gpu_oom"
    # TensorFlow running out of host memory is not the GPU: it is host memory (SIG494)
    assert primary_of(capsys, tmp_path, "ResourceExhaustedError: OOM when allocating tensor with shape[1024,1024,1024] "
                      "and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n",
                      "cpu.log")["cause"] == "host_oom"


def test_terminal_colours_saved_with_the_log_do_not_hide_a_message(tmp_path: Path, capsys, match_engine: str) -> None:
    """`cmd | tee run.log` keeps the colour codes; DeepSpeed's setup.py prints its errors in red."""
    log = tmp_path / "run.log"
    log.write_bytes(b"step 1 loss 0.9\n"
                    b"\x1b[31m [ERROR] \x1b[0m Unable to pre-compile async_io\n"
                    b"\x1b[1;31mRuntimeError\x1b[0m: CUDA error: out \x1b[1mof memory\x1b[0m\n")
    report = primary(capsys, log)
    assert report["cause"] == "gpu_oom"
    assert "\x1b" not in report["evidence"][0]["text"]


def test_nccls_optional_plugin_probe_is_not_a_missing_library(tmp_path: Path, capsys) -> None:
    """NCCL logs at INFO that it found no libnccl-net.so plugin and uses its own transport: not a failure."""
    log = tmp_path / "run.log"
    log.write_text("gpu1:73025:73025 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object "
                   "file: No such file or directory No plugin found (libnccl-net.so), using internal implementation\n"
                   "step 10 loss 1.2\n", encoding="utf-8")
    assert primary(capsys, log)["cause"] is None
    real = tmp_path / "real.log"
    real.write_text("ImportError: libnccl.so.2: cannot open shared object file: No such file or directory\n",
                    encoding="utf-8")
    assert primary(capsys, real)["cause"] == "missing_cuda_library"


def test_a_colour_code_cut_by_a_chunk_end_and_a_hyperlink_are_removed(tmp_path: Path, capsys,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from envcheck.diagnose import scan as scan_mod

    monkeypatch.setattr(scan_mod, "CHUNK", 4096)
    head = b"step 1 loss 0.9\n" * 254  # 4064 bytes: the 4096-byte chunk ends between ESC [ and 1;31m
    log = tmp_path / "run.log"
    log.write_bytes(head + b"RuntimeError: CUDA error: out \x1b[1;31mof memory\x1b[0m\n"
                    b"see \x1b]8;;https://example.org/oom\x07the docs\x1b]8;;\x07\n")
    report = primary(capsys, log)
    assert report["cause"] == "gpu_oom"
    assert "\x1b" not in report["evidence"][0]["text"]


def test_a_numpy_abi_failure_blames_the_module_compiled_against_numpy_1(tmp_path: Path, capsys) -> None:
    """NumPy 2's warning names NumPy; the import traceback after it names the compiled module (a Cython module's
    'init' frame, or the innermost package that is not NumPy): that one is to blame."""
    warning = ("A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash. To support "
               "both 1.x and 2.x\n\n")
    cython = (warning + "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
              "  File \"fastremap.pyx\", line 1, in init fastremap\nImportError: numpy.core.multiarray failed to "
              "import\n")
    assert primary_of(capsys, tmp_path, cython)["library"] == "fastremap"
    package = (warning + "Traceback (most recent call last):\n  File \"/env/lib/python3.10/site-packages/pandas/"
               "__init__.py\", line 22, in <module>\n  File \"/env/lib/python3.10/site-packages/numpy/core/"
               "_multiarray_umath.py\", line 44, in __getattr__\nImportError: numpy.core.multiarray failed to import\n")
    assert primary_of(capsys, tmp_path, package)["library"] == "pandas"
    assert primary_of(capsys, tmp_path, warning)["library"] == "numpy"  # nothing else named


@pytest.mark.parametrize(("text", "library"), [
    ("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!", "cudnn_ops64_9.dll"),
    ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
     "libcudnn_ops"),
    ("NotImplementedError: Unsloth: No NVIDIA GPU found? Unsloth currently only supports GPUs!", "unsloth"),
])
def test_the_library_a_line_names(tmp_path: Path, capsys, text: str, library: str) -> None:
    assert primary_of(capsys, tmp_path, text + "\n")["library"] == library


def test_a_dotted_cython_module_is_blamed_by_its_distribution(tmp_path: Path, capsys) -> None:
    log = ("Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
           "  File \"pyarrow/lib.pyx\", line 36, in init pyarrow.lib\nImportError: numpy.core.multiarray failed to import\n")
    assert primary_of(capsys, tmp_path, log)["library"] == "pyarrow"


def test_torchs_numpy_warning_blames_torch(tmp_path: Path, capsys) -> None:
    line = ("/env/lib/python3.10/site-packages/torch/nn/modules/transformer.py:20: UserWarning: Failed to initialize "
            "NumPy: _ARRAY_API not found (Triggered internally at ../torch/csrc/utils/tensor_numpy.cpp:84.)\n")
    first = primary_of(capsys, tmp_path, line)
    assert (first["cause"], first["library"]) == ("numpy_abi", "torch")


def test_the_library_a_loader_names_loses_the_parenthesis_around_it(tmp_path: Path, capsys) -> None:
    """CuPy's and onnxruntime's messages quote the loader's error in parentheses: the library is libcudnn."""
    text = "RuntimeError: Failed to load cuDNN: ImportError (libcudnn.so.8: cannot open shared object file: No such " \
           "file or directory)\n"
    assert primary_of(capsys, tmp_path, text)["library"] == "libcudnn"


def test_every_structure_anchor_is_long_enough_for_the_prefilter() -> None:
    """The `re` prefilter keys each anchor by MIN_KEY bytes or more: a shorter one cannot be keyed."""
    from envcheck.diagnose.matcher import MIN_KEY
    from envcheck.diagnose.structure.events import ANCHORS

    assert [a for a in ANCHORS if len(a) < MIN_KEY] == []


def test_a_rocm_torch_only_being_installed_keeps_a_cpu_build_error(tmp_path: Path, capsys) -> None:
    """A ROCm build drops any torch_cpu_only only when the log reports it installed, not when pip fetches it."""
    text = ("torch 2.3.1+cu121 (from the environment report)\n"
            "Collecting torch==2.3.1+rocm6.0\n"
            "AssertionError: Torch not compiled with CUDA enabled\n")
    assert primary_of(capsys, tmp_path, text)["cause"] == "torch_cpu_only"
