"""The structure layer on real logs of the corpus's dev half (tests/assets/diagnose/corpus/labels.toml; the test
half is never read here), the honest unknown, and linear time on a traceback-dense log."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from envcheck.cli import main
from envcheck.diagnose.scan import Matcher, scan
from envcheck.diagnose.source import open_log
from envcheck.matrix import load_matrix

DEV = Path(__file__).parent / "assets" / "diagnose" / "corpus" / "dev"


def primary(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    main(["diagnose", "--offline", "--json", str(path)])
    causes = json.loads(capsys.readouterr().out)["causes"]
    return causes[0] if causes else {"cause": None, "library": None}


def primary_of(capsys: pytest.CaptureFixture[str], folder: Path, text: str, name: str = "run.log") -> dict:
    """The primary cause of a log that holds TEXT (written to FOLDER/NAME)."""
    log = folder / name
    log.write_text(text, encoding="utf-8")
    return primary(capsys, log)


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


@pytest.fixture(params=["hyperscan", "re"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both prefilter engines give the same answers: Hyperscan (the `fast` extra) and the `re` fallback."""
    if request.param == "re":
        monkeypatch.setenv("ENVCHECK_NO_HYPERSCAN", "1")
    else:
        pytest.importorskip("hyperscan", reason="no hyperscan wheel (a dependency on Linux x86-64/aarch64 only)")
        monkeypatch.delenv("ENVCHECK_NO_HYPERSCAN", raising=False)
    return request.param


@pytest.mark.parametrize("name,cause,library", CASES, ids=[c[0] for c in CASES])
def test_dev_logs_get_the_right_cause(capsys, engine: str, name: str, cause: str, library: str | None) -> None:
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


def test_common_anchors_are_still_found_where_a_run_dies(tmp_path: Path, capsys, engine: str) -> None:
    """In a long step log the bytes of 'Error: ' are everywhere, so the re engine looks for it only in the head
    and the tail; the error that ends the run is in the tail and must still be shown."""
    log = tmp_path / "train.log"
    step = "[INFO|trainer.py:2345] Epoch 0.42 Eval: {'loss': 1.2345, 'error_rate': 0.01, 'Err': 0, 'root': 1}\n"
    with log.open("w") as out:
        out.write(step * 60_000)  # about 5 MB: past the head (1 MiB) and the tail (256 KiB)
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


# Lines as their programs print them (the format string of each signature's source, filled in), for the rules
# that no dev log of the corpus exercises yet.
PRINTED = [
    ("RuntimeError: DataLoader worker (pid 9833) is killed by signal: Killed.", "host_oom"),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in step 36358.batch cgroup.", "host_oom"),
    ("[2026-09-14T17:14:38.784] error: Detected 2 oom_kill events in StepId=22035606.1. Some of the step tasks "
     "have been OOM Killed.", "host_oom"),
    ("subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status -9.", "host_oom"),
    ("OSError: [Errno 122] Disk quota exceeded: '/home/u/.cache/huggingface/hub/tmpab12'", "disk_full"),
    ("OSError: [WinError 112] There is not enough space on the disk", "disk_full"),
    ("RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf", "numpy_abi"),
    ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
     "missing_cuda_library"),
    ("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!", "missing_cuda_library"),
    ("OSError: [WinError 126] The specified module could not be found. Error loading "
     "\"C:\\Python311\\Lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll\" or one of its dependencies.",
     "missing_cuda_library"),
    ("AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'", "deepspeed_build_failure"),
    ("  ERROR: Failed building wheel for deepspeed", "deepspeed_build_failure"),
    ("FAILED: [code=1] multi_tensor_adam.cuda.o ", "deepspeed_build_failure"),  # ninja 1.13
    ("node1:2213:2290 [0] include/alloc.h:48 NCCL WARN Cuda failure 'peer access is not supported between these "
     "two devices'", "nccl_error"),
    ("[rank0]: RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)", "nccl_error"),
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate memory: you "
     "tried to allocate 2359296 bytes. Error code 12 (Cannot allocate memory)", "host_oom"),
    ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.50 GiB for an array with shape (30000, 31337) "
     "and data type float32", "host_oom"),
    ("terminate called after throwing an instance of 'std::bad_alloc'", "host_oom"),
    ("sqlite3.OperationalError: database or disk is full", "disk_full"),
    ("W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please make sure "
     "the missing libraries mentioned above are installed properly if you would like to use GPU.",
     "missing_cuda_library"),
    ("pytorch                   2.0.1           py3.10_cpu_0    pytorch", "torch_cpu_only"),
    ("ImportError: /root/.cache/torch_extensions/py310_cu121/cpu_adam/cpu_adam.so: cannot open shared object file: "
     "No such file or directory", "deepspeed_build_failure"),
    ("      × Building wheel for deepspeed (setup.py) did not run successfully.", "deepspeed_build_failure"),
    ("gpu7:2213:2290 [0] misc/socket.cc:484 NCCL WARN ncclSocketInit: Socket creation failed : Address family not "
     "supported by protocol", "nccl_error"),
    ("pycuda._driver.LogicError: cuInit failed: system has unsupported display driver / cuda driver combination",
     "driver_too_old"),
    ("ValueError: The configured object store size (15.032385536 GB) exceeds /dev/shm size (4.500000768 GB). This "
     "will harm performance. Consider deleting files in /dev/shm or increasing its size with --shm-size in Docker.",
     "shm_too_small"),
    ("Failed to initialize NVML: Driver/library version mismatch", "driver_too_old"),
    ("[   27.950245] NVRM: API mismatch: the client has the version 415.27, but", "driver_too_old"),
    ("nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown",
     "driver_too_old"),
    ("RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.", "driver_too_old"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non "
     "supported HW", "driver_too_old"),
    # pip < 20.3's conflict line (pip _internal/commands/install.py)
    ("ERROR: k8s 0.11.0 has requirement requests==2.13.0, but you'll have requests 2.22.0 which is incompatible.",
     "version_conflict"),
    ("RuntimeError: Unable to JIT load the async_io op due to it not being compatible due to hardware/software "
     "issue. async_io requires the dev libaio .so object and headers but these were not found.",
     "deepspeed_build_failure"),
    # bash's strsignal in other locales (glibc po/zh_CN.po, de.po)
    ("train.sh: 第 12 行： 48213 已杀死               python train.py", "host_oom"),
    ("./run.sh: Zeile 3: 48213 Getötet                python train.py", "host_oom"),
    ("段错误 (核心已转储)", "segfault_other"),
    ("Speicherzugriffsfehler (Speicherabzug geschrieben)", "segfault_other"),
    ("总线错误 (核心已转储)", "shm_too_small"),
    # DeepSpeed setup.py (assert torch_available; abort in v0.9-v0.12) and op_builder/builder.py
    ("AssertionError: Unable to pre-compile ops without torch installed. Please install torch before attempting to "
     "pre-compile ops.", "deepspeed_build_failure"),
    ("\x1b[31m [ERROR] \x1b[0m Unable to pre-compile async_io", "deepspeed_build_failure"),
    ("RuntimeError: DeepSpeed JIT builder for 'fused_adam' found no CUDA devices. Set TORCH_CUDA_ARCH_LIST or make "
     "GPUs visible.", "deepspeed_build_failure"),
    # libnvidia-container configure.c's warnx("requirement error: %s") under the runtime hook's stderr
    ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6, please update your driver to a "
     "newer version, or use an earlier cuda container: unknown.", "driver_too_old"),
    # XLA cuda_diagnostics.cc LOG(ERROR)
    ("2024-03-27 15:05:43.037502: E external/local_xla/xla/stream_executor/cuda/cuda_diagnostics.cc:262] kernel "
     "version 470.182.3 does not match DSO version 470.223.2 -- cannot find working devices in this configuration",
     "driver_too_old"),
    # numba cuda/cudadrv/driver.py: CudaAPIError(retcode, "Call to %s results in %s" % (fname, errname))
    ("numba.cuda.cudadrv.driver.CudaAPIError: [222] Call to cuModuleLoadDataEx results in "
     "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "driver_too_old"),
    ("AssertionError: libcuda.so cannot found!", "missing_cuda_library"),
    ("time=2024-04-30T15:06:56.218Z level=INFO source=gpu.go:343 msg=\"Unable to load cudart CUDA management library "
     "/tmp/ollama523635885/runners/cuda_v11/libcudart.so.11.0: your nvidia driver is too old or missing, please "
     "upgrade to run ollama\"", "driver_too_old"),
    ("RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is "
     "not configured correctly. (error code is 126)", "missing_cuda_library"),
    ("RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.",
     "missing_cuda_library"),
    # torch's C10_CUDA_CHECK and driver check, CUDA's enum names, NCCL's CUDACHECK
    ("RuntimeError: CUDA error: out of memory", "gpu_oom"),
    ("RuntimeError: CUDA driver error: out of memory", "gpu_oom"),
    ("numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY", "gpu_oom"),
    ("node3:1181:1290 [1] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'", "gpu_oom"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[32,1024,"
     "64,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc", "gpu_oom"),
    ("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so far: 0 bytes).",
     "gpu_oom"),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
     "initializing the engine.", "gpu_oom"),
    ("[rank3]:[E1111 17:10:53.123456 ProcessGroupNCCL.cpp:1285] [PG 0 Rank 3] ProcessGroupNCCL's watchdog got stuck "
     "for 480 seconds without making progress in monitoring enqueued collectives.", "nccl_timeout"),
    ("[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.", "nccl_error"),
    ("OSError: Not enough disk space. Needed: 134.92 GiB (download: 41.97 GiB, generated: 92.95 GiB, post-processed: "
     "Unknown size)", "disk_full"),
    ("ValueError: Unknown CUDA arch (8.9) or GPU not supported", "cuda_arch_unsupported"),
    ("ValueError: Unknown CUDA arch (10.0a) or GPU not supported", "cuda_arch_unsupported"),
    ("AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'", "torch_cpu_only"),
    ("RuntimeError: [enforce fail at C:\\cb\\pytorch_1000000000000\\work\\c10\\core\\impl\\alloc_cpu.cpp:72] data. "
     "DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.", "host_oom"),
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "host_oom"),
    # subprocess.CalledProcessError, torch.multiprocessing.spawn, a shell's 128 + 11, Windows
    ("subprocess.CalledProcessError: Command '['python', 'train.py']' died with <Signals.SIGSEGV: 11>.",
     "segfault_other"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGSEGV", "segfault_other"),
    ("Windows fatal exception: access violation", "segfault_other"),
    ("Process finished with exit code -1073741819 (0xC0000005)", "segfault_other"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGBUS", "shm_too_small"),
    ("RuntimeError: Numpy is not available", "numpy_abi"),
    ("[rank1]: RuntimeError: Numpy is not available", "numpy_abi"),
    ("(RayWorkerWrapper pid=1234) RuntimeError: Numpy is not available", "numpy_abi"),
    ("RuntimeError: Unable to load inference_core_ops op due to no compute capabilities remaining after filtering",
     "deepspeed_build_failure"),
    ("test: Test CUDA failure common.cu:941 'system not yet initialized'", "nccl_error"),
    ("node1:2213:2290 [0] include/alloc.h:103 NCCL WARN Cuda failure 802 'system not yet initialized'", "nccl_error"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized", "nccl_error"),
    ("            - Insufficient shared_memory if `timeout` is large enough.", "shm_too_small"),
    ("RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. PyTorch "
     "has CUDA Version=13.0 and torchvision has CUDA Version=12.8. Please reinstall the torchvision that matches your "
     "PyTorch install.", "version_conflict"),
    ("RuntimeError: operator torchvision::nms does not exist", "version_conflict"),
    ("ValueError: The checkpoint you are trying to load has model type `qwen2` but Transformers does not recognize "
     "this architecture. This could be because of an issue with the checkpoint, or because your version of "
     "Transformers is out of date.", "version_conflict"),
    ("ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.26.0`: Please run `pip install "
     "transformers[torch]` or `pip install 'accelerate>=0.26.0'`", "version_conflict"),
    ("OSError: [WinError 112] Espacio en disco insuficiente: 'C:\\out\\checkpoint-500'", "disk_full"),
    ("    Espacio en disco insuficiente. (os error 112)", "disk_full"),  # a Rust program's io::Error on Windows
    ("RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.12.1.\n  Make sure that libnvrtc-builtins.so.12.1 "
     "is installed correctly.", "missing_cuda_library"),
    ("OSError: cannot load library 'C:\\Users\\u\\miniconda3\\Library\\bin\\cudnn64_8.dll': error 0x7e",
     "missing_cuda_library"),  # cffi on Windows
    # NCCL 2.22+ shmutils.cc: mkstemp in /dev/shm failing (2.22.3 printed the path as a pointer), mmap failing
    ("gpu1:1:2 [0] misc/shmutils.cc:73 NCCL WARN Error: failed to create shared memory file 0x7ffd2a3b1c40, error "
     "Permission denied (13)", "shm_too_small"),
    ("gpu1:1:2 [0] misc/shmutils.cc:98 NCCL WARN Error: Could not map /dev/shm/nccl-Ab12Cd size 9637892, error: Cannot "
     "allocate memory (12)", "shm_too_small"),
    # Windows' commit limit, in the system's language, with torch's note of the DLL it was loading
    ("OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading \"C:\\Python310\\lib\\site-packages\\torch\\"
     "lib\\cudnn_cnn_infer64_8.dll\" or one of its dependencies.", "host_oom"),
    ("    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cpu)", "torch_cpu_only"),  # xformers' build report
    ("Ultralytics YOLOv8.1.3 Python-3.10.11 torch-2.1.0+cpu\nAn Error occurred: Invalid CUDA 'device=0' requested. Use "
     "'device=cpu' or pass valid CUDA device(s) if available, i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU.",
     "torch_cpu_only"),  # the CPU build's banner, and CUDA asked for
    ("Requirement already satisfied: torch in c:\\python310\\lib\\site-packages (2.1.0+cpu)", "torch_cpu_only"),
    ("'2.3.1+cpu'", "torch_cpu_only"),  # the REPL's answer to torch.__version__
    ("ImportError: /opt/conda/lib/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by "
     "/root/.cache/torch_extensions/py310_cu121/cpu_adam/cpu_adam.so)", "segfault_abi_mismatch"),
    ("NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be "
     "because the operator doesn't exist for this backend, or was omitted during the selective/custom build process "
     "(if using custom build).", "torch_cpu_only"),
    ('  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 1533, in _run_ninja_build',
     "deepspeed_build_failure"),
    ("  /usr/bin/ld: cannot find /tmp/pip-install-x/deepspeed_1/build/temp.linux-x86_64-3.10/csrc/adam/"
     "fused_adam_frontend.o: No such file or directory", "deepspeed_build_failure"),
    # a paste that starts or ends mid-message: the lines of a message that still name its cause
    ("FAILED: cpu_adam.o ", "deepspeed_build_failure"),  # ninja's failed edge: an object of a DeepSpeed op
    ("FAILED: fused_adam_frontend.o", "deepspeed_build_failure"),
    ("[rank0]: subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
     "deepspeed_build_failure"),
    ("downgrade to 'numpy<2' or try to upgrade the affected module.", "numpy_abi"),
    ("We expect that some modules will need time to support NumPy 2.", "numpy_abi"),
    ("AttributeError: _ARRAY_API not found", "numpy_abi"),
    ("      PyTorch (11.3). Please make sure to use the same CUDA versions.", "cuda_toolkit_mismatch"),
    ("ImportError: This example requires a source install from HuggingFace Transformers (see "
     "`https://huggingface.co/docs/transformers/installation#install-from-source`), but the version found is 4.39.1.",
     "version_conflict"),
]


@pytest.mark.parametrize("text,cause", PRINTED, ids=[c + "-" + str(i) for i, (_, c) in enumerate(PRINTED)])
def test_lines_as_their_programs_print_them(tmp_path: Path, capsys, engine: str, text: str, cause: str) -> None:
    assert primary_of(capsys, tmp_path, "step 1 loss 0.9\n" + text + "\n")["cause"] == cause


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
    stopped cc1plus twice, dmesg-after-ds-jit-build-oom.txt); ninja 1.13 writes 'FAILED: [code=1] cpu_adam.o'."""
    main(["diagnose", "--offline", "--json", str(DEV.parent.parent / "recorded" / "ds-jit-build-oom.log")])
    causes = json.loads(capsys.readouterr().out)["causes"]
    assert [c["cause"] for c in causes[:2]] == ["host_oom", "deepspeed_build_failure"]
    assert causes[1]["library"] == "cpu_adam"
    assert "Killed signal terminated program cc1plus" in causes[0]["evidence"][0]["text"]


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


def test_a_gdb_frame_outside_site_packages_names_the_shared_library(tmp_path: Path, capsys) -> None:
    log = tmp_path / "gdb.log"
    log.write_text("Program terminated with signal SIGSEGV, Segmentation fault.\n"
                   "#0  0x00007f3a1c2b4e10 in ncclCommInitRank () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n",
                   encoding="utf-8")
    first = primary(capsys, log)
    assert (first["cause"], first["library"]) == ("segfault_other", "libnccl")


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
    other = tmp_path / "flash.log"  # the same check in another package's source build is not DeepSpeed's
    other.write_text(
        "Building wheel for flash-attn (setup.py) ... error\n"
        "RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version by "
        "CUDA 12.1. Please make sure to use an adequate version of g++ (>=6.0.0, <13.0).\n", encoding="utf-8")
    assert primary(capsys, other)["cause"] is None


def test_a_cuda_out_of_memory_under_an_nccl_error_is_the_gpu_running_out(tmp_path: Path, capsys) -> None:
    """torch prints NCCL's 'Last error' after its own reading: the out-of-memory explains the NCCL error."""
    assert primary_of(capsys, tmp_path,
                      "[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
                      "c10d/ProcessGroupNCCL.cpp:3356, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
                      "NCCL version 2.26.2\n"
                      "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
                      "[rank1]: Last error:\n"
                      "[rank1]: Cuda failure 2 'out of memory'\n")["cause"] == "gpu_oom"
    # TensorFlow running out of host memory is not the GPU
    assert primary_of(capsys, tmp_path, "ResourceExhaustedError: OOM when allocating tensor with shape[1024,1024,1024] "
                      "and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n",
                      "cpu.log")["cause"] is None


def test_terminal_colours_saved_with_the_log_do_not_hide_a_message(tmp_path: Path, capsys, engine: str) -> None:
    """`cmd | tee run.log` keeps the colour codes; DeepSpeed's setup.py prints its errors in red."""
    log = tmp_path / "run.log"
    log.write_bytes(b"step 1 loss 0.9\n"
                    b"\x1b[31m [ERROR] \x1b[0m Unable to pre-compile async_io\n"
                    b"\x1b[1;31mRuntimeError\x1b[0m: CUDA error: out \x1b[1mof memory\x1b[0m\n")
    report = primary(capsys, log)
    assert report["cause"] == "gpu_oom"
    assert "\x1b" not in report["evidence"][0]["text"]


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


# A healthy start of a DeepSpeed + NCCL run, each line as its program prints it (DeepSpeed op_builder's warnings for
# ops it will not use, torch's JIT loader finding fused_adam built, NCCL_DEBUG=INFO without the optional plugin).
HEALTHY = [
    '[2024-05-01 10:00:00,000] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator '
     'to cuda (auto detect)',
    ' [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.',
    ' [WARNING]  async_io: please install the libaio-dev package with apt',
    ' [WARNING]  If libaio is already installed (perhaps from source), try setting the CFLAGS and '
     'LDFLAGS environment variables to where it can be found.',
    ' [WARNING]  Please specify the CUTLASS repo directory as environment variable $CUTLASS_PATH',
    ' [WARNING]  sparse_attn requires a torch version >= 1.5 and < 2.0 but detected 2.4',
    ' [WARNING]  using untested triton version (3.0.0), only 1.0.0 is known to be compatible',
    'Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...',
    'Detected CUDA files, patching ldflags',
    'Emitting ninja build file /root/.cache/torch_extensions/py310_cu121/fused_adam/build.ninja...',
    'Building extension module fused_adam...',
    'Allowing ninja to set a default number of workers... (overridable by setting the environment '
     'variable MAX_JOBS=N)',
    'ninja: no work to do.',
    'Loading extension module fused_adam...',
    'Time to load fused_adam op: 0.05 seconds',
    'gpu1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.4<0>',
    'gpu1:1234:1234 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: '
     'No such file or directory No plugin found (libnccl-net.so), using internal implementation',
    'gpu1:1234:1234 [0] NCCL INFO cudaDriverVersion 12020',
    'NCCL version 2.20.5+cuda12.4',
    'gpu1:1234:1290 [0] NCCL INFO Failed to open libibverbs.so[.1]',
    'gpu1:1234:1290 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>',
    'gpu1:1234:1290 [0] NCCL INFO Using network Socket',
    'gpu1:1234:1290 [0] NCCL INFO comm 0x55d4 rank 0 nranks 2 cudaDev 0 busId 100000 commId 0x1f2e - Init COMPLETE',
    '[INFO|trainer.py:2134] 2024-05-01 10:01:00,000 >> ***** Running training *****',
    "{'loss': 1.2345, 'grad_norm': 0.98, 'learning_rate': 1e-05, 'epoch': 0.1}",
    "{'train_runtime': 100.0, 'train_samples_per_second': 10.0, 'train_loss': 1.0, 'epoch': 1.0}",
]


def test_a_healthy_deepspeed_and_nccl_start_names_no_cause(tmp_path: Path, capsys, engine: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("\n".join(HEALTHY) + "\n", encoding="utf-8")
    assert primary(capsys, log)["cause"] is None


def test_a_compiler_that_is_not_installed_stops_a_deepspeed_pre_build(tmp_path: Path, capsys) -> None:
    """distutils spawn: "error: command 'c++' failed: No such file or directory" while building DeepSpeed's ops."""
    log = tmp_path / "pip.log"
    log.write_text("  building 'deepspeed.ops.adam.cpu_adam_op' extension\n"
                   "  error: command 'c++' failed: No such file or directory\n", encoding="utf-8")
    assert primary(capsys, log)["cause"] == "deepspeed_build_failure"


@pytest.mark.parametrize("name,rule", [("SIGKILL", "SIG101"), ("SIGSEGV", "SIG102"), ("SIGBUS", "SIG103")])
def test_translated_signal_words_agree_between_exit_codes_and_signatures(name: str, rule: str) -> None:
    """glibc's translations of strsignal live twice: in exitcodes (the exit status a line reports) and in the
    signatures (the cause); a word added to one list must be added to the other."""
    from envcheck.diagnose import exitcodes

    pattern = next(s.pattern for s in load_matrix(only=frozenset({"signatures.toml"})).signatures if s.id == rule)
    lead, tail = r"(?:^|\d+ +|\]|\r)", r"(?: +|\(|$)"  # each branch: LEAD word TAIL
    branches = pattern.split("|" + lead)
    words = {re.sub(r"\\(.)", r"\1", b.removeprefix(lead).removesuffix(tail)) for b in branches}
    assert words == set(exitcodes._TRANSLATED[name])


# Lines programs print and then go on: a warning, a retry, a probe. None of them is why a run died.
GOING_ON = [
    # TensorFlow's start-up: the first (preallocating) attempt fails, a smaller one follows
    "2024-01-01 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:837] failed to allocate 10.76G "
    "(11553934592 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    # NCCL's CUDACHECKIGNORE logs at INFO and continues
    "gpu1:1234:1234 [0] NCCL INFO init.cc:1472 Cuda failure 'out of memory'",
    # huggingface_hub's _check_disk_space is a warnings.warn; the download goes on
    "UserWarning: Not enough free disk space to download the file. The expected file size is: 4967.22 MB. The "
    "target location /root/.cache/huggingface/hub/models--x--y/blobs only has 1203.08 MB free disk space.",
    # DeepSpeed v0.19.5 evoformer_attn.is_compatible(verbose=True), as ds_report prints it
    " [WARNING]  Unable to locate CUTLASS. Install nvidia-cutlass, clone CUTLASS next to DeepSpeed, or set "
    "CUTLASS_PATH to the CUTLASS checkout.",
    # HF example scripts and LLaMA-Factory on a machine used on purpose without a GPU
    "[INFO|parser.py:385] 2024-04-11 11:16:12,325 >> Process rank: 0, device: cpu, n_gpu: 0, distributed training: "
    "False, compute dtype: torch.bfloat16",
    "WARNING: logging system not yet initialized",
    # bitsandbytes 0.41.0 cuda_setup/main.py logs this for CONDA_PREFIX whether or not it found libcudart there
    "/opt/conda did not contain ['libcudart.so', 'libcudart.so.11.0', 'libcudart.so.12.0'] as expected! Searching "
    "further paths...",
    "CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching in backup paths...",
    # GNU ld missing an object outside a DeepSpeed build says nothing of DeepSpeed
    "/usr/bin/ld: cannot find build/temp.linux-x86_64-3.10/src/main.o: No such file or directory",
    # bitsandbytes 0.40 cuda_setup/main.py: a warning, then it loads its CPU library and goes on
    "WARNING: No libcudart.so found! Install CUDA or the cudatoolkit package (anaconda)!",
    # torchvision's optional image extension (io.image) failing to load is a warning it says to ignore
    "UserWarning: Failed to load image Python extension: '/opt/conda/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not "
    "found (required by /opt/conda/lib/python3.10/site-packages/torchvision/image.so)'If you don't plan on using image "
    "functionality from `torchvision.io`, you can ignore this warning.",
    # glibc's verbose 'weak version' line is not fatal (elf/dl-version.c)
    "./libfoo.so: /lib64/libc.so.6: weak version `GLIBC_2.34' not found (required by ./libfoo.so)",
    # Rust's io::Error on Linux: errno 112 is EHOSTDOWN, not Windows' ERROR_DISK_FULL
    "Error: Host is down (os error 112)",
    # pip removing a CPU build (the fix being applied) and a run on a CPU on purpose
    "Successfully uninstalled torch-2.1.0+cpu",
    "Ultralytics YOLOv8.0.54 Python-3.10.6 torch-2.0.0+cpu CPU",
]


@pytest.mark.parametrize("text", GOING_ON, ids=[str(i) for i in range(len(GOING_ON))])
def test_lines_a_program_prints_and_goes_on_after_name_no_cause(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, "step 1 loss 0.9\n" + text + "\nstep 2 loss 0.8\n")["cause"] is None


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
