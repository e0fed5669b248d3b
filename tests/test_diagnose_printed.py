"""Lines as their programs print them: each rule's own message names its cause; lines a program prints and goes on
after, and a healthy DeepSpeed + NCCL start, name none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envcheck.matrix import load_matrix
from diagnose_support import primary, primary_of


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
    ("ray.exceptions.OutOfDiskError: Local disk is full\nThe object cannot be created because the local object store is "
     "full and the local disk's utilization is over capacity (95% by default).", "disk_full"),
    ("RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf", "numpy_abi"),
    ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}",
     "missing_cuda_library"),
    ("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!", "missing_cuda_library"),
    ("OSError: [WinError 126] The specified module could not be found. Error loading "
     "\"C:\\Python311\\Lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll\" or one of its dependencies.",
     "missing_cuda_library"),
    ("AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'", "deepspeed_build_failure"),
    ("  ERROR: Failed building wheel for deepspeed", "deepspeed_build_failure"),
    ("ERROR: Could not build wheels for deepspeed, which is required to install pyproject.toml-based projects",
     "deepspeed_build_failure"),  # pip 23
    ("ERROR: Failed to build installable wheels for some pyproject.toml based projects (deepspeed)",
     "deepspeed_build_failure"),  # pip 25
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
    # `from numpy import X` of a name NumPy 2.0 removed (numpy/_expired_attrs_2_0.py, 2.0.0-notes.rst), and 1.24's
    ("ImportError: cannot import name 'BUFSIZE' from 'numpy' (/venv/lib/python3.11/site-packages/numpy/__init__.py)",
     "numpy_abi"),
    ("E   ImportError: cannot import name 'float' from 'numpy' (/venv/lib/python3.11/site-packages/numpy/__init__.py)",
     "numpy_abi"),
    # nvcc's message quoted without its 'nvcc fatal :' prefix
    ('I meet the error: "Unsupported gpu architecture \'compute_75\'" when I install it', "cuda_arch_unsupported"),
    # coreutils under a translated locale: glibc po/zh_CN.po, de.po, ja.po strerror(ENOSPC)
    ("cp: 写入 'out/checkpoint-500/model.safetensors' 出错: 设备上没有空间", "disk_full"),
    ("tar: ./data/shard-003.arrow: Schreiben nicht möglich: Auf dem Gerät ist kein Speicherplatz mehr verfügbar",
     "disk_full"),
    ("cp: '/dev/shm/batch_17' の書き込みエラー: デバイスに空き領域がありません", "shm_too_small"),
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
    # NCCL <= 2.8 include/shm.h: SYSCHECK's strerror, and a segment named without its /dev/shm path
    ("node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied", "shm_too_small"),
    ("node08:27106:27302 [0] NCCL WARN Error while creating shared memory segment nccl-shm-recv-b7948f403864987a-0-3-0 "
     "(size 4460544)", "shm_too_small"),
    # the segment line after a failed call carries no errno: the call's says it was not ENOSPC (explanation below)
    # torch's shared-memory file </torch_<pid>_<n>> is in /dev/shm, whatever the line's wording
    ("RuntimeError: unable to write to file </torch_1234_567_0>: No space left on device (28)", "shm_too_small"),
    ("RuntimeError: unable to allocate shared memory(shm) for file </torch_1234_5678>: Resource temporarily "
     "unavailable (11)", "shm_too_small"),
    # NCCL 2.22+ shmutils.cc: mkstemp in /dev/shm failing (2.22.3 printed the path as a pointer), mmap failing
    ("gpu1:1:2 [0] misc/shmutils.cc:73 NCCL WARN Error: failed to create shared memory file 0x7ffd2a3b1c40, error "
     "Permission denied (13)", "shm_too_small"),
    ("gpu1:1:2 [0] misc/shmutils.cc:98 NCCL WARN Error: Could not map /dev/shm/nccl-Ab12Cd size 9637892, error: Cannot "
     "allocate memory (12)", "shm_too_small"),
    # a compiler killed by SIGKILL (the OOM killer) under nvcc and collect2 (their own messages)
    ("nvcc error   : 'cicc' died due to signal 9 (Kill signal)", "host_oom"),
    ("collect2: fatal error: ld terminated with signal 9 [Killed]", "host_oom"),
    # Windows' commit limit, in the system's language, with torch's note of the DLL it was loading
    ("OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading \"C:\\Python310\\lib\\site-packages\\torch\\"
     "lib\\cudnn_cnn_infer64_8.dll\" or one of its dependencies.", "host_oom"),
    ("    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cpu)", "torch_cpu_only"),  # xformers' build report
    ("NotImplementedError: Unsloth cannot find any torch accelerator? You need a GPU.", "torch_cpu_only"),
    ("ValueError: The configured object store size (32.0 GB) exceeds /dev/shm size (0.067108864 GB). This will harm "
     "performance. Consider deleting files in /dev/shm or increasing its size with --shm-size in Docker. To ignore "
     "this warning, set RAY_OBJECT_STORE_ALLOW_SLOW_STORAGE=1.", "shm_too_small"),
    # Triton's Python backend before 87f6f2a (2025), with the region's key in the message
    ("Failed to increase the shared memory pool size for key 'triton_python_backend_shm_region_2' to 67108864 bytes. "
     "If you are running Triton inside docker, use '--shm-size' flag to control the shared memory region size. Error: "
     "boost::interprocess_exception::library_error", "shm_too_small"),
    # glibc's ENOENT cut after 'No such' by a paste wrapped at a fixed width
    ("ImportError: libcudart.so.10.2: cannot open shared object file: No such\nfile or directory",
     "missing_cuda_library"),
    # Triton's Python backend growing its shared-memory pool (src/shm_manager.cc GrowIfNeeded)
    ("E1201 10:00:00.000 1 pb_stub.cc:402] Failed to increase the shared memory pool size to 67108864 bytes. If you "
     "are running Triton inside docker, use '--shm-size' flag to control the shared memory region size. Error: No "
     "space left on device", "shm_too_small"),
    # TensorRT 10's wording for a builder resource it cannot dlopen (8.4's is a dev log)
    ("[12/01/2026-10:00:00] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 6: API Usage Error (Unable to load "
     "library: libnvinfer_builder_resource_sm89.so.10.3.0)", "missing_cuda_library"),
    # pip's resolver refusing a DeepSpeed wheel whose tags do not match (a Linux wheel on Windows here)
    ("ERROR: deepspeed-0.16.4-cp312-cp312-manylinux_2_28_x86_64.whl is not a supported wheel on this platform.",
     "deepspeed_build_failure"),
    # CPython's dlopen ImportError on macOS quoting dyld-1378's Loader.cpp message
    ("ImportError: dlopen(/venv/lib/python3.11/site-packages/torchaudio/lib/libtorchaudio.so, 0x0006): Symbol not "
     "found: __ZN3c1017RegisterOperatorsD1Ev\n  Referenced from: <5C5F4B1A-0F6B-3D1E-9A4B-4E2D1C0B9A87> "
     "/venv/lib/python3.11/site-packages/torchaudio/lib/libtorchaudio.so\n  Expected in:     <9A1B2C3D-4E5F-3A6B-"
     "8C7D-0E1F2A3B4C5D> /venv/lib/python3.11/site-packages/torch/lib/libc10.dylib", "segfault_abi_mismatch"),
    # pip 22's legacy install of DeepSpeed failing (operations/install/legacy.py, exceptions.py LegacyInstallFailure)
    ("  × Running setup.py install for deepspeed did not run successfully.\n  │ exit code: 1",
     "deepspeed_build_failure"),
    ("error: legacy-install-failure\n\n× Encountered error while trying to install package.\n╰─> deepspeed",
     "deepspeed_build_failure"),
    # cuDNN 8's second line alone (Linux and Windows names)
    ("Please make sure libcudnn_ops_infer.so.8 is in your library path!", "missing_cuda_library"),
    ("> Please make sure cudnn_cnn_infer64_8.dll is in your library path!", "missing_cuda_library"),
    # lines quoted in a reply ("> ") or under docker buildkit's step prefix keep their rules
    ("> assert torch.cuda.is_available()\n> AssertionError", "torch_cpu_only"),
    ("> tensorflow 2.4.4 requires numpy~=1.19.2, but you have numpy 1.21.5 which is incompatible.",
     "version_conflict"),
    ("#12 41.07 torchaudio 2.1.0 requires torch==2.1.0, but you have torch 2.3.1 which is incompatible.",
     "version_conflict"),
    ("> =   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n> =   EXIT CODE: 139", "segfault_other"),
    # ROCm's HIP runtime with no device that has a code object (clr hip_code_object.cpp's device list)
    (":1:hip_code_object.cpp :571 : 0123456789 us: hipErrorNoBinaryForGpu: Unable to find code object for all "
     "current devices!\n:1:hip_code_object.cpp :573 : 0123456789 us:   Devices:\n:1:hip_code_object.cpp :576 : "
     "0123456789 us:     amdgcn-amd-amdhsa--gfx1031 - [Not Found]\nAborted (core dumped)", "cuda_arch_unsupported"),
    ("> =   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n> =   PID 92248 RUNNING AT node1\n"
     "> =   EXIT CODE: 9", "host_oom"),
    # a shell's report of SIGKILL: bash's job line, macOS's strsignal ('Killed: 9'), zsh's two forms
    ("[1]+  Killed                  python train.py --deepspeed ds.json", "host_oom"),
    ("Killed: 9", "host_oom"),
    ("zsh: killed     python train.py", "host_oom"),
    ("[1]  + killed     python train.py", "host_oom"),
    ("zsh: segmentation fault  python train.py", "segfault_other"),
    ("zsh: bus error  python train.py", "shm_too_small"),
    # MPICH's Hydra block for a rank killed by SIGSEGV with a core dump (raw wait status 139)
    ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4242 RUNNING AT node3\n=   EXIT CODE: 139\n"
     "=   CLEANING UP REMAINING PROCESSES", "segfault_other"),
    ("Ultralytics YOLOv8.1.3 Python-3.10.11 torch-2.1.0+cpu\nAn Error occurred: Invalid CUDA 'device=0' requested. Use "
     "'device=cpu' or pass valid CUDA device(s) if available, i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU.",
     "torch_cpu_only"),  # the CPU build's banner, and CUDA asked for
    # torch/serialization.py raises it: the run stops where it asked for CUDA
    ("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
     "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
     "storages to the CPU.", "torch_cpu_only"),
    # transformers 5.24 raising where CUDA is not available (quantizer_eetq.py, training_args.py without the Ampere
    # sentence it adds when CUDA is there), and ATen's CPU kernel given float16
    ("RuntimeError: No GPU found. A GPU is needed for quantization.", "torch_cpu_only"),
    ("ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model on "
     "CPU.", "torch_cpu_only"),
    ("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'", "torch_cpu_only"),
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
def test_lines_as_their_programs_print_them(tmp_path: Path, capsys, match_engine: str, text: str, cause: str) -> None:
    assert primary_of(capsys, tmp_path, "step 1 loss 0.9\n" + text + "\n")["cause"] == cause


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
    'gpu1:1234:1290 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]',  # NCCL <= 2.10, no IB
    'gpu1:1234:1290 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.4<0>',
    'gpu1:1234:1290 [0] NCCL INFO Using network Socket',
    'gpu1:1234:1290 [0] NCCL INFO comm 0x55d4 rank 0 nranks 2 cudaDev 0 busId 100000 commId 0x1f2e - Init COMPLETE',
    '[INFO|trainer.py:2134] 2024-05-01 10:01:00,000 >> ***** Running training *****',
    "{'loss': 1.2345, 'grad_norm': 0.98, 'learning_rate': 1e-05, 'epoch': 0.1}",
    "{'train_runtime': 100.0, 'train_samples_per_second': 10.0, 'train_loss': 1.0, 'epoch': 1.0}",
]


def test_a_healthy_deepspeed_and_nccl_start_names_no_cause(tmp_path: Path, capsys, match_engine: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("\n".join(HEALTHY) + "\n", encoding="utf-8")
    assert primary(capsys, log)["cause"] is None


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
    # collect_env of a ROCm build, and of macOS (MPS) or a CPU torch beside torch_npu, which print None by design
    "PyTorch version: 2.1.0+rocm5.6\nCUDA used to build PyTorch: N/A\nROCM used to build PyTorch: 5.6.31061-e47cb7e7",
    "PyTorch version: 2.3.0\nIs debug build: False\nCUDA used to build PyTorch: None\nROCM used to build PyTorch: N/A\n\n"
    "OS: macOS 14.5 (arm64)",
    # Ray's object store moved to disk for want of /dev/shm: Ray warns and goes on
    "2025-10-09 20:16:32,652    WARNING services.py:2159 -- WARNING: The object store is using /tmp instead of "
    "/dev/shm because /dev/shm has only 67104768 bytes available. This will harm performance!",
    # DeepSpeed's assert_no_cuda_mismatch goes on when only the minor versions differ, or with DS_SKIP_CUDA_CHECK=1
    "Installed CUDA version 12.4 does not match the version torch was compiled with 12.1 but since the APIs are "
    "compatible, accepting this combination",
    " [WARNING]  DeepSpeed Op Builder: Installed CUDA version 12.4 does not match the version torch was compiled with "
    "12.1.Detected `DS_SKIP_CUDA_CHECK=1`: Allowing this combination of CUDA, but it may result in unexpected behavior.",
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
    # the second review's healthy runs: torchvision's optional image extension on macOS, a REPL check that passes,
    # a ROCm machine whose integrated GPU has no code object beside a card that has one
    "/Users/me/venv/lib/python3.11/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python "
    "extension: 'dlopen(/Users/me/venv/lib/python3.11/site-packages/torchvision/image.so, 0x0006): Symbol not found: "
    "__ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using image functionality from `torchvision.io`, you can "
    "ignore this warning.",
    ">>> assert torch.cuda.is_available()\n>>> torch.cuda.get_device_name(0)\n'NVIDIA A100-SXM4-80GB'",
    ":1:hip_code_object.cpp :571 : 0123456789 us: hipErrorNoBinaryForGpu: Unable to find code object for all "
    "current devices!\n:1:hip_code_object.cpp :576 : 0123456789 us:     amdgcn-amd-amdhsa--gfx1100 - [Found]\n"
    ":1:hip_code_object.cpp :576 : 0123456789 us:     amdgcn-amd-amdhsa--gfx1036 - [Not Found]",
    # runs on a CPU (on purpose or not) that print these and go on: with a CPU build, shutdown noise, a retried
    # download; NCCL's optional-plugin line wrapped at 66 columns (it loses its 'NCCL INFO' prefix)
    "Successfully installed torch-2.3.1+cpu\n/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:204: "
    "UserWarning: User provided device_type of 'cuda', but CUDA is not available. Disabling\nepoch 1/1 loss=0.412",
    "UserWarning: CUDA is not available or torch_xla is imported. Disabling autocast.\nUltralytics YOLOv8.0.54 "
    "Python-3.10.6 torch-2.0.0+cpu CPU\nResults saved to runs/detect/train",
    "UserWarning: FP16 is not supported on CPU; using FP32 instead\n[00:00.000 --> 00:02.000]  Hello.\nException "
    "ignored in: <function Pool.__del__ at 0x7f>\nTraceback (most recent call last):\nTypeError: 'NoneType' object is "
    "not callable",
    "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.\nhuggingface_hub.utils."
    "_http: HTTPError: 503 Server Error: Service Unavailable, retrying in 2s\nSaving model checkpoint to out/ckpt-10",
    "gpu1:1234:1290 [0] NCCL INFO NET/Plugin : \ndlerror=libnccl-net.so: cannot open shared object file: No such\nfile "
    "or directory No plugin found (libnccl-net.so), using internal implementation",
    # a run that asked for CUDA (autocast), or ran on the CPU (whisper), and went on without failing
    "/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:204: UserWarning: User provided device_type of "
    "'cuda', but CUDA is not available. Disabling",
    "/venv/lib/python3.10/site-packages/whisper/transcribe.py:132: UserWarning: FP16 is not supported on CPU; using "
    "FP32 instead",
    # a name NumPy never had is the calling code's own mistake, not NumPy 2
    "ImportError: cannot import name 'my_helper' from 'numpy' (/venv/lib/python3.11/site-packages/numpy/__init__.py)",
    # pip removing a CPU build (the fix being applied) and a run on a CPU on purpose
    "Successfully uninstalled torch-2.1.0+cpu",
    "Ultralytics YOLOv8.0.54 Python-3.10.6 torch-2.0.0+cpu CPU",
    "    Found existing installation: torch 2.1.0+cpu",  # pip replacing the CPU build: the fix
    "Successfully installed torch-2.3.1+cpu\ntorch.cuda.is_available(): False",  # a CPU job's environment report
    # torchvision's optional image extension failing to load under Windows' commit limit: it says to ignore it
    "UserWarning: Failed to load image Python extension: '[WinError 1455] The paging file is too small for this "
    "operation to complete'If you don't plan on using image functionality from `torchvision.io`, you can ignore this "
    "warning.",
]


@pytest.mark.parametrize("text", GOING_ON, ids=[str(i) for i in range(len(GOING_ON))])
def test_lines_a_program_prints_and_goes_on_after_name_no_cause(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, "step 1 loss 0.9\n" + text + "\nstep 2 loss 0.8\n")["cause"] is None


def test_nccl_2_7s_segment_line_takes_its_reason_from_the_failed_call_above(tmp_path: Path, capsys) -> None:
    """NCCL <= 2.8 prints SYSCHECK's strerror on the call's line, then the segment line without one: a permission
    denied is a /dev/shm that is not writable, not a full one."""
    log = tmp_path / "nccl27.log"
    log.write_text("n8:1:2 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"
                   "n8:1:2 [0] NCCL INFO include/shm.h:41 -> 2\n"
                   "n8:1:2 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
                   "nccl-shm-recv-b79-0-3-0 (size 4460544)\n", encoding="utf-8")
    from envcheck.diagnose.structure import nccl
    from envcheck.diagnose.structure.model import Line
    lines = [Line(str(log), n, t) for n, t in enumerate(log.read_text().splitlines(), 1)]
    shm = [e for e in nccl.events(lines) if e.cause == "shm_too_small"]
    assert shm and all(e.confidence == 0.8 and "not writable" in e.explanation for e in shm)


def test_nccl_2_7_failing_to_attach_to_a_peers_segment_says_so(tmp_path: Path, capsys) -> None:
    """On attach NCCL opens the segment its peer made: ENOENT there is ranks that do not share /dev/shm, not a full
    one (v2.7.8-1 src/include/shm.h: shmOpen with create=0)."""
    log = tmp_path / "attach.log"
    log.write_text("n1:1235:1301 [1] include/shm.h:26 NCCL WARN Call to shm_open failed : No such file or directory\n"
                   "n1:1235:1301 [1] include/shm.h:48 NCCL WARN Error while attaching to shared memory segment "
                   "nccl-shm-send-b3a1f2-0-1-0 (size 9637888)\n", encoding="utf-8")
    first = primary(capsys, log)
    assert first["cause"] == "shm_too_small" and "open a peer's" in first["title"]


def test_a_gpu_without_bf16_is_not_a_cpu_only_torch(tmp_path: Path, capsys) -> None:
    """transformers adds 'You need Ampere+ GPU' when CUDA is available: then the GPU lacks bf16, torch is no CPU
    build."""
    text = ("ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model "
            "on CPU. You need Ampere+ GPU with cuda>=11.0.\n")
    assert primary_of(capsys, tmp_path, text)["cause"] != "torch_cpu_only"


@pytest.mark.parametrize("warning", [
    "UserWarning: FP16 is not supported on CPU; using FP32 instead",
    "[INFO|parser.py:385] 2024-04-11 11:16:12,325 >> Process rank: 0, device: cpu, n_gpu: 0, distributed training: "
    "False, compute dtype: torch.bfloat16",
    "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
])
def test_a_cpu_run_that_fails_for_another_reason_is_not_blamed_on_the_cpu(tmp_path: Path, capsys,
                                                                          warning: str) -> None:
    """Runs on a CPU on purpose print these warnings; a later, unrelated error is not a CPU-only torch."""
    text = (warning + "\nTraceback (most recent call last):\n  File \"run.py\", line 3, in <module>\n"
            "ValueError: Undefined dataset my_data in dataset_info.json.\n")
    assert primary_of(capsys, tmp_path, text)["cause"] != "torch_cpu_only"


def test_triton_shared_memory_denied_is_not_a_small_dev_shm(tmp_path: Path, capsys) -> None:
    text = ("Unable to initialize shared memory key 'triton_python_backend_shm_region_1' to requested size (1048576 "
            "bytes). If you are running Triton inside docker, use '--shm-size' flag to control the shared memory region "
            "size. Each Python backend model instance requires at least 1 MB of shared memory. Error: Permission denied\n")
    assert primary_of(capsys, tmp_path, text)["cause"] != "shm_too_small"


# pip's resolver (factory.py _report_single_requirement_conflict) writes "(from <package>)" after a dependency's
# requirement: a package pins a release the index lacks. A requirement the user gave has none: the release or the index
# the user named is wrong, no version conflict.
@pytest.mark.parametrize("text,cause,library", [
    ("ERROR: Could not find a version that satisfies the requirement torch==2.7.1 (from vllm) (from versions: 2.5.1, "
     "2.6.0)", "version_conflict", "vllm"),
    ("ERROR: Could not find a version that satisfies the requirement numpy<2,>=1.21 (from opencv-python) (from "
     "versions: 1.19.5, 1.20.3)", "version_conflict", "opencv-python"),
    # no release at all: an index pip could not reach (mined review-revV-02), not a pin
    ("ERROR: Could not find a version that satisfies the requirement torch==2.4.0 (from vllm) (from versions: none)",
     None, None),
    ("ERROR: Could not find a version that satisfies the requirement torch==2.10.0 (from versions: none)", None, None),
    ("ERROR: Could not find a version that satisfies the requirement flash-attn (from versions: none)", None, None),
    ("ERROR: Could not find a version that satisfies the requirement torch==1.7.1 (from -r requirements.txt (line 1)) "
     "(from versions: 2.0.0, 2.1.0)", None, None),
])
def test_pip_names_a_package_whose_pin_it_cannot_meet(tmp_path: Path, capsys, text: str, cause: str | None,
                                                      library: str | None) -> None:
    found = primary_of(capsys, tmp_path, text + "\n")
    assert (found["cause"], found["library"]) == (cause, library)


# torch's collect_env report (torch/utils/collect_env.py): torch.version.cuda None is printed 'Could not collect'
_ENV = ("PyTorch version: 2.2.2\nIs debug build: False\nCUDA used to build PyTorch: Could not collect\n"
        "ROCM used to build PyTorch: {rocm}\n\nOS: Microsoft Windows 11 Pro\nIs CUDA available: False\n"
        "GPU models and configuration: {gpu}\nNvidia driver version: {driver}\n")


@pytest.mark.parametrize("rocm,gpu,driver,cause", [
    ("N/A", "GPU 0: NVIDIA GeForce RTX 4080 Laptop GPU", "551.86", "torch_cpu_only"),
    ("N/A", "Could not collect", "Could not collect", None),  # a Mac's or a CPU server's report: no NVIDIA driver
    ("6.0.32830-d62f6a171", "AMD Instinct MI250X", "Could not collect", None),  # a ROCm build: no CUDA by design
    ("6.0.32830-d62f6a171", "GPU 0: NVIDIA A100", "535.104.05", None),
])
def test_collect_env_of_a_torch_built_without_cuda(tmp_path: Path, capsys, rocm: str, gpu: str, driver: str,
                                                   cause: str | None) -> None:
    text = _ENV.format(rocm=rocm, gpu=gpu, driver=driver)
    assert primary_of(capsys, tmp_path, text)["cause"] == cause


# Windows' loader dialog for STATUS_ENTRYPOINT_NOT_FOUND (0xC0000139), in English (older 'procedure', newer 'program')
# and in zh-CN Windows' words: a cuDNN of another release, a DLL built against another one; a Windows too old for a
# system API is none of the causes
@pytest.mark.parametrize("text,cause,library", [
    ("python.exe - Entry Point Not Found\nThe procedure entry point cudnnGetLibConfig could not be located in the "
     "dynamic link library C:\\Python\\Lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll.", "version_conflict",
     "cudnn_adv_infer64_8.dll"),
    ("无法定位程序输入点 cudnnGetVersion 于动态链接库 D:\\paddle\\bin\\cudnn64_8.dll 上。", "version_conflict",
     "cudnn64_8.dll"),
    ("The program entry point ?_Xlength_error@std@@YAXPEBD@Z could not be located in the dynamic link library "
     "C:\\Python\\Lib\\site-packages\\torch\\lib\\c10.dll.", "segfault_abi_mismatch", "c10.dll"),
    ("The procedure entry point GetSystemTimePreciseAsFileTime could not be located in the dynamic link library "
     "KERNEL32.dll.", None, None),
])
def test_windows_entry_point_not_found(tmp_path: Path, capsys, text: str, cause: str | None,
                                       library: str | None) -> None:
    found = primary_of(capsys, tmp_path, text + "\n")
    assert (found["cause"], found["library"]) == (cause, library)
