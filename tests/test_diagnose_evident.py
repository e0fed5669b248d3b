"""The evident logs (tests/assets/diagnose/evident/): public pastes whose own lines show the cause, collected by
people who never ran envcheck. Each is read as the cause its lines show, except the few listed with the reason."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from envcheck.diagnose.engine import Request, diagnose

EVIDENT = Path(__file__).parent / "assets" / "diagnose" / "evident"
LOGS = tomllib.loads((EVIDENT / "labels.toml").read_text(encoding="utf-8"))["log"]
# id -> (what envcheck names, why it is not the label)
MISSES = {
    "f108": ("deepspeed_build_failure", "ld: 'libcurand.so: file not recognized: File truncated' in DeepSpeed's "
             "build: a corrupt library, not a missing one; the op build failing is what the lines show"),
    "f200": ("unknown", "nvcc's '__builtin_addressof is undefined' in torch's headers; no line says what was built"),
    "f204": ("unknown", "only MSVC's LNK1181 for aio.lib and cufile.lib: DeepSpeed's async_io/gds compatibility "
             "probes, which a working install prints too"),
    "f221": ("unknown", "one line: torch's CUDAContext.h cannot find cuda_runtime_api.h; nothing says what was built"),
    "f222": ("unknown", "triton's own CMake build cannot find cuda_runtime_api.h (a dependency of an old DeepSpeed)"),
    "f314": ("unknown", "bitsandbytes' search for libcudart.so, then its PyTorch settings: it goes on (as c1410)"),
    "f322": ("unknown", "cudarc's list of cuDNN names lacks libcudnn.so.9, which is installed"),
    "f912": ("unknown", "Ray's list of a dead worker's possible causes ('(1) The process is killed by SIGKILL by OOM "
             "killer ...', (2) ray stop, (3) a crash) and the user's memory figures in prose"),
    "f913": ("unknown", "the same Ray list of possible causes under '(raylet) A worker died or was killed'"),
    "f1017": ("unknown", "safetensors' 'unable to mmap N bytes ... Cannot allocate memory (12)': ENOMEM of a mapping, "
              "which a map count or overcommit limit gives too"),
    "f1403": ("unknown", "pydantic 2's 'FieldInfo' object has no attribute 'required' deep in transformers' import: an "
              "object's attribute, which any bug raises too"),
    "f1404": ("unknown", "k2's own CMake check: 'PyTorch 1.13.0 is compiled with CUDA None'"),
    "f1405": ("unknown", "k2's own assert: 'PyTorch is built with CUDA version: 11.7. The current running CUDA version "
              "is: 10.2.89'"),
    "f1503": ("unknown", "torchvision's 'Failed to register operator torchvision::_new_empty_tensor_op' under "
              "torch.onnx"),
    "f1519": ("unknown", "Python 3.6's 'cannot import name' without the module it was imported from"),
    "f1601": ("unknown", "'Killed' glued to a progress bar inside the user's quoted sentence"),
    "f1605": ("unknown", "an old peft's model object without merge_and_unload (an object's attribute)"),
    "f1703": ("unknown", "a page's restatement: a backend 'not available or outdated' (deep_gemm)"),
    "f1806": ("missing_cuda_library", "libtorch_cuda_cu.so not found: the corpus's label rule reads a loader failing "
              "so as a missing library (dev c2061, c2073); the collector read it as an extension built for torch 1.x"),
    "f1807": ("unknown", "DGL's 'Cannot find DGL C++ graphbolt library ... libgraphbolt_pytorch_2.3.0.so'"),
    "f1809": ("unknown", "a jax/jaxlib pair the paste shows only in its version lines"),
    "f1811": ("segfault_other", "NCCL's watchdog reporting an illegal memory access: the CUDA error is what it shows"),
    "f1815": ("unknown", "torchrl against another torch, shown only as an attribute error"),
    "f1919": ("unknown", "flash_attn's interface changed under the caller, shown as an attribute error"),
    "f2019": ("unknown", "an IPython release against the notebook server, shown as an ImportError of a name"),
    "f2609": ("unknown", "TensorFlow 1.x's INFO line for libcuda.so.1 alone: it goes on without a GPU (SIG278 reads "
              "only the libraries it stops without)"),
    "f2814": ("unknown", "a training platform's own 'Exception type: OOM ... return code is -9' report, whose source "
              "could not be read"),
    "f2964": ("unknown", "joblib's ENOSPC warning for its semaphore probe (it goes on in serial mode, as mined "
              "shm2-16) and a traceback into multiprocessing's Lock cut before its exception"),
    "f3057": ("unknown", "PhysX's 'PxgCudaDeviceMemoryAllocator fail to allocate memory ... Result = 2' (Isaac Gym)"),
    "f3060": ("unknown", "the loader's line cut mid-word by the paste ('libtorch_cuda_cu.so: cannot open shared')"),
    "f3114": ("unknown", "'No module named keras.engine' only as the next line of transformers' 'Failed to import ...' "
              "wrapper, in a ComfyUI node's report without a traceback"),
    "f3209": ("unknown", "a remote-code tokenizer's 'object has no attribute' (an object's attribute) and a version in "
              "prose"),
    "f3306": ("segfault_abi_mismatch", "libcublas.so.11's symbol versions not in the libcublasLt.so.11 loaded: read as "
              "a library built against another copy (the collector read two cuBLAS releases: a version conflict)"),
    "f3314": ("unknown", "TensorRT's engine build: a [W] line that the GPU memory could not be allocated, then 'Could "
              "not find any implementation' (TensorRT's skipped tactics are no cause: mined review-revN)"),
    "f3320": ("unknown", "Dask's nanny restarting a worker over its memory budget (a review's counter-example: Dask "
              "restarts workers in runs that finish)"),
    "f3365": ("unknown", "Horovod's stall warning (ranks waiting on an allreduce), which Horovod does not call a "
              "timeout"),
    "f3510": ("unknown", "RELION's own allocator: 'ERROR: out of memory in .../custom_allocator.cuh ... (error-code "
              "2)'"),
    "f3562": ("unknown", "a link-time 'undefined reference ...@GLIBCXX_3.4.26' in a make build (the loader's rule "
              "reads 'version ... not found', not the linker's)"),
    "f3653": ("unknown", "pytorch-forecasting's TypeError that a model is not a LightningModule: the lightning and "
              "pytorch_lightning packages, shown only to who knows the split"),
    "f3657": ("unknown", "HugeCTR's 'Runtime error: unhandled system error' with the NCCL call on the next line"),
    "f3658": ("unknown", "the same HugeCTR report on a single node in a container"),
    "f3700": ("unknown", "a DeepSpeed op's nvcc command cut before its name and its error, then gcc 7's instantiation "
              "notes"),
    "f3856": ("unknown", "peft against bitsandbytes shown only as an object's missing attribute"),
    "f3869": ("unknown", "accelerate's object without deepspeed_engine_wrapped (an object's attribute)"),
    "f3913": ("unknown", "DeepSpeed's fp_quantizer op built at install whose module does not define "
              "PyInit_fp_quantizer_op (a packaging defect of the op, which an extension built for another Python "
              "shows too)"),
    "f3917": ("unknown", "DeepSpeed's 'Filtered compute capabilities ['7.0+PTX']' warning (printed also when other "
              "architectures remain) above a traceback cut before its exception"),
    "f3918": ("unknown", "the same warning above DeepSpeed-MII's traceback cut before its exception"),
    "f4105": ("segfault_abi_mismatch", "bitsandbytes' own CUDA library without the nf4 function its Python calls "
              "(ctypes' undefined symbol): read as a library built for another stack; the collector read an old "
              "bitsandbytes binary, a version conflict"),
    "f4268": ("segfault_abi_mismatch", "xFormers' warning that its extensions were built for another torch and CUDA: "
              "read as an extension built for another stack; the collector read the two packages' versions"),
    "f4288": ("deepspeed_build_failure", "Transformer Engine's JIT build missing cudnn.h (a header, not a library the "
              "loader or linker misses): read as a compiled op's build, which the taxonomy names only for DeepSpeed"),
    "f4318": ("unknown", "Cython's 'cudf._lib.cudf does not export expected C function' (two RAPIDS builds that do not "
              "match), which no rule reads"),
    "f4319": ("segfault_other", "cuda-python's 'Failed to dlopen libcuda.so' (the driver's library), then zsh's job "
              "line of the segfault it led to"),
    "f4326": ("unknown", "XLA's 'DNN library is not found' in a notebook's cut traceback: cuDNN not loadable, said "
              "only so"),
    "f4335": ("cuda_toolkit_mismatch", "JAX's outdated cuSOLVER (a CUDA component other than cuDNN, read as the "
              "toolkit's; the collector read a version conflict)"),
    "f4382": ("unknown", "SageMaker's 'Artifact upload failed:Insufficient disk space' (a closed service's reason "
              "text)"),
    "f4397": ("unknown", "aws-ofi-nccl's 'Couldn't find any optimal provider' and 'OFI NCCL failure: 2'"),
    "f4399": ("segfault_abi_mismatch", "libcusolver's undefined cuBLAS symbol (two CUDA libraries of other releases), "
              "read as a library built against another; the collector read a version conflict"),
    "f4128": ("unknown", "the mlx5 verbs provider's 'got completion with error' dump, which a run that ends well "
              "prints too at teardown (a review's counter-example, mined review-revV-03): no rule reads it"),
    "f4009": ("unknown", "torch_geometric's warning that importing torch-scatter failed (an undefined symbol) and that "
              "it goes on without it (mined: PyG's warnings are no cause)"),
    "f519": ("unknown", "torch's 'too old version of GCC' #error above a rank's traceback into DeepSpeed's engine, "
             "cut before its exception; no line shows a DeepSpeed op being built"),
    "f4415": ("unknown", "cuBLAS's 'kernel execution error ... error: 8' on a K80 alone (8 is CUBLAS_STATUS_ARCH_MISMATCH "
              "only by the collector's reading; the paste names no status)"),
    "f4468": ("unknown", "huggingface_hub's 'Not enough free disk space to download the file' (a warning after which "
              "the download goes on, SIG130's note) before a traceback cut above its exception"),
    "f4469": ("unknown", "ggml's failed cudaMalloc and llama.cpp's KV-cache update failing to allocate compute buffers, "
              "which it logs and goes on after (the context's failure, structure/ggml.py, is not in the paste)"),
    "f4484": ("unknown", "torch's 'no longer supports this GPU because it is too old' warning alone (printed for a "
              "display card beside a supported GPU too: docs/diagnose-json.md)"),
    "f4485": ("unknown", "the same warning of torch's for a GT 630M, then a traceback cut above its exception"),
}


@pytest.mark.parametrize("entry", LOGS, ids=lambda e: e["id"])
def test_an_evident_log_reads_as_the_cause_its_lines_show(entry: dict) -> None:
    causes = diagnose(Request(logs=(str(EVIDENT / entry["file"]),), system=False)).causes
    named = causes[0].cause if causes else "unknown"
    expected = MISSES[entry["id"]][0] if entry["id"] in MISSES else entry["cause"]
    assert named == expected, f"{entry['id']} ({entry['url']}): {named}, expected {expected}: {entry['shown'][:120]}"


def test_each_listed_miss_is_an_evident_log() -> None:
    assert set(MISSES) <= {entry["id"] for entry in LOGS}


@pytest.mark.parametrize(("text", "cause"), [
    # an installed package imports another's module that this release lacks (modelscope -> datasets.exceptions)
    ('  File "/venv/lib/python3.9/site-packages/modelscope/msdatasets/utils/hf_datasets_util.py", line 24, in '
     "<module>\n    from datasets.exceptions import DataFilesNotFoundError\nModuleNotFoundError: No module named "
     "'datasets.exceptions'\n", "version_conflict"),
    # a script's own package run from another folder: a layout, not a release
    ('  File "/home/user/proj/train.py", line 3, in <module>\n    from utils.datasets import LoadImages\n'
     "ModuleNotFoundError: No module named 'utils.datasets'\n", None),
    ("ModuleNotFoundError: No module named 'models.common'\n", None),
    # a private compiled module: a broken install or a run inside torch's source tree
    ('  File "/venv/lib/python3.10/site-packages/torch/__init__.py", line 229, in <module>\n    from torch._C import *\n'
     "ModuleNotFoundError: No module named 'torch._C'\n", None),
    ('  File "/venv/lib/python3.10/site-packages/colossalai/kernel/op_builder/builder.py", line 90, in load\n'
     "    op_module = self.import_op()\nModuleNotFoundError: No module named 'colossalai._C.cpu_adam'\n", None),
    # a private pure-Python module the installed release lacks (apex written for torch 1.x under torch 2)
    ('  File "/venv/lib/python3.10/site-packages/apex/amp/_amp_state.py", line 14, in <module>\n'
     "    from torch._six import container_abcs\nModuleNotFoundError: No module named 'torch._six'\n",
     "version_conflict"),
    # NumPy's own private modules are not this rule's: numpy._core is NumPy 2's, under NumPy 1 (a signature's)
    ('  File "/venv/lib/python3.10/site-packages/joblib/numpy_pickle.py", line 587, in load\n'
     "    obj = _unpickle(fobj)\nModuleNotFoundError: No module named 'numpy._core'\n", "numpy_abi"),
])
def test_a_dotted_module_missing_is_another_release_only_when_an_installed_package_asks(
        tmp_path: Path, text: str, cause: str | None) -> None:
    log = tmp_path / "import.log"
    log.write_text("Traceback (most recent call last):\n" + text, encoding="utf-8")
    causes = diagnose(Request(logs=(str(log),), system=False)).causes
    assert (causes[0].cause if causes else None) == cause


BANNER = ("WARNING: CUDA Minor Version Compatibility mode ENABLED.\n"
          "  Using driver version 510.108.03 which has support for CUDA 11.6.  This container\n"
          "  was built with CUDA 11.8 and will be run in Minor Version Compatibility mode.\n"
          "  CUDA Forward Compatibility is preferred over Minor Version Compatibility for use\n"
          "  with this container but was unavailable:\n"
          "  [[Forward compatibility was attempted on non supported HW (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) "
          "cuInit()=804]]\n")


def test_an_ngc_banners_probe_status_is_no_driver_fault_but_a_failure_after_it_is(tmp_path: Path) -> None:
    """NGC's start-up check quotes the 804 of its forward-compatibility probe under 'Minor Version Compatibility
    mode ENABLED', and the container runs (structure/ngc.py); a CUDA error the run itself raises right after the
    banner is still read."""
    alone, failed = tmp_path / "banner.log", tmp_path / "failed.log"
    alone.write_text(BANNER, encoding="utf-8")
    failed.write_text(BANNER + "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.\n",
                      encoding="utf-8")
    assert diagnose(Request(logs=(str(alone),), system=False)).causes == ()
    assert diagnose(Request(logs=(str(failed),), system=False)).causes[0].cause == "driver_too_old"


@pytest.mark.parametrize(("line", "cause"), [
    # the raylet's summary of its memory monitor (SIG133): a kill is host memory, a summary of crashes alone is not
    ("(raylet) node_manager.cc:3084: 4 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed "
     "due to other reasons at node (ID: b287, IP: 172.28.0.12) over the last time period.", "host_oom"),
    ("(raylet) node_manager.cc:3084: 0 Workers (tasks / actors) killed due to memory pressure (OOM), 2 Workers crashed "
     "due to other reasons at node (ID: b287, IP: 172.28.0.12) over the last time period.", None),
    # SIG552: a version bound on a package, not on CUDA or a GPU
    ("AssertionError: BLIP models are not compatible with transformers>=4.27, run pip install transformers==4.25",
     "version_conflict"),
    ("RuntimeError: this kernel is not compatible with CUDA>=12.4", None),
    # the kubelet's eviction message names the starved resource: memory is host RAM (SIG560), its disk a full disk
    ("The node was low on resource: memory. Container trainer was using 61Gi, which exceeds its request of 16Gi.",
     "host_oom"),
    ("The node was low on resource: ephemeral-storage. Container trainer was using 90Gi, which exceeds its request of 0.",
     "disk_full"),
])
def test_a_new_rule_reads_its_line_and_not_its_neighbour(tmp_path: Path, line: str, cause: str | None) -> None:
    log = tmp_path / "line.log"
    log.write_text(line + "\n", encoding="utf-8")
    causes = diagnose(Request(logs=(str(log),), system=False)).causes
    assert (causes[0].cause if causes else None) == cause
