"""The labelled corpus keeps its causes: every dev log is diagnosed as labelled (bar the known, honest misses), and
the test half stays at or above the top-1 count benchmarks/README.md reports. The test half is scored only as a
count here; no test names a test log or its result."""

from __future__ import annotations

import tomllib

import pytest

from diagnose_support import CORPUS, primary_cause

# dev logs whose thread settled a cause that nothing in the log shows (or that no rule reads), and what each reads as
KNOWN_MISSES = {  # id: (what it reads as, why)
    # runs on a CPU on purpose print this and go on: a cause only when a failure follows (structure/no_cuda.py)
    "c148": ("unknown", "pip installs torch 1.6.0 with CUDA 10.2 wheels; the thread found the index served a CPU build"),
    "c237": ("unknown", "write(): fd 29 failed with Input/output error; the thread found the disk full"),
    # cudaErrorLaunchFailure: CUDA's documentation names software faults (bad pointers) as its common causes
    "c615": ("unknown", "CUDA error: unspecified launch failure; swapping the card fixed it"),
    # torch.save's PyTorchFileWriter cannot open its file: a missing folder or permissions more often than a full disk
    "c710": ("unknown", "RuntimeError: File my_out/checkpoints/checkpoint_0.pt cannot be opened; the disk was full"),
    "c1229": ("unknown", "a KeyError in Transformer Engine's set_extra_state: a checkpoint from another release"),
    # jaxlib's wording for a cuSPARSE it could not load: not found in jax's sources here, so not a rule
    "c1171": ("nccl_error", "vLLM's NCCL 'unhandled system error'; the maintainer read /dev/shm in a log not pasted"),
    # NCCL's alloc.h 'Cuda failure out of memory' is a cudaMalloc failing; this thread's fix was another NCCL
    "c1133": ("gpu_oom", "NCCL [Rem Allocator] failures and Cuda failure 'out of memory'; a newer NCCL fixed it"),
    # cudaErrorSymbolNotFound is not about architectures in CUDA's documentation
    "c1136": ("nccl_error", "NCCL WARN Cuda failure 'named symbol not found'; NCCL was built without sm_90"),
    "c1313": ("unknown", "InvokeAI's '>> Using device_type cpu' alone; a run on a CPU on purpose prints it too"),
    "c1314": ("unknown", "AutoGPTQ's 'CUDA extension not installed.' and a cut-off traceback; torch was a CPU build"),
    # bitsandbytes 0.41 prints 'did not contain [libcudart...] as expected' whether or not it found the library
    "c1409": ("unknown", "bitsandbytes' search for libcudart in a venv's nvidia/cuda_runtime/lib"),
    # the tenth round's dev logs that no rule reads
    "c1721": ("unknown", "Windows 'DLL load failed while importing flash_attn_2_cuda' (German); torch was a CPU build"),
    "c1485": ("unknown", "a ds_report table of ops not pre-built ([NO]); a JIT install prints the same"),
    # the DataLoader cannot tell a worker killed by SIGBUS (shm) from one killed by SIGKILL; SIG009 reads shm
    "c1793": ("shm_too_small", "'DataLoader worker ... exited unexpectedly' alone; the thread found host RAM full"),
    "c1607": ("unknown", "a vLLM NCCL hang with no error line; disabling ACS/IOMMU fixed it"),
    "c1667": ("unknown", "vLLM's 'Engine core proc EngineCore_DP0 died unexpectedly'; the fix was --shm-size"),
    "c1669": ("unknown", "lmdb.Error with a Korean message in mojibake; the LMDB map size exceeded the disk"),
    # the eleventh round's dev logs that no rule reads
    "c2113": ("unknown", "DeepSpeed-Chat's first launcher lines, cut off before the -7 exit; --shm-size fixed it"),
    "c2121": ("unknown", "monai-deploy's run output, cut off before the failure; the app container lacked shm"),
    # NCCL's 'unhandled system error' with a listing of leaked nccl-* files in /dev/shm, not a line NCCL prints
    "c2122": ("nccl_error", "vLLM's NCCL 'unhandled system error' and an ls of /dev/shm full of nccl-* segments"),
    # tracebacks cut off at the optimizer's constructor, before the exception that says why
    "c1993": ("unknown", "safe-rlhf ranks' tracebacks ending at FusedAdam(...), cut off before 'Ninja is required'"),
    # the REPL's answer alone: a CPU build and a driver too old for torch's CUDA both print it
    "c2399": ("unknown", "'>>> torch.cuda.is_available()' answered False; the driver was too old for torch 1.3"),
    # the missing-submodule rule needs the importing frame, which the paste wrapped
    # a paste that ends in NCCL's INFO set-up lines reads as an NCCL hang (structure/risk.py; 13 of the 15 dev logs
    # that end so are nccl_error)
    "c2443": ("nccl_error", "Megatron's NCCL INFO start-up lines, cut off before the error; --shm-size fixed it"),
    "c2448": ("unknown", "'self and mat2 must have the same dtype' in a QLoRA run; a newer peft fixed it"),
    "c2450": ("unknown", "torchrun's ChildFailedError summary (exitcode 1) alone; the thread found GPU memory"),
    # the twelfth round's dev logs that no rule reads
    "c2463": ("unknown", "an xtuner rank's traceback cut off inside its evaluation hook; transformers 4.39 fixed it"),
    "c2582": ("unknown", "'object of type PosixPath has no len()' alone; DeepSpeed's evoformer builder was fixed"),
    "c2708": ("unknown", "a Trainer traceback cut off inside accelerator.prepare; an older accelerate fixed it"),
    # the thirteenth round's dev logs that no rule reads: each is cut off before its error, or shows none
    "c2722": ("unknown", "ninja's FAILED and nvcc line of Megatron's fused-softmax JIT build (not DeepSpeed's), cut"),
    "c2724": ("unknown", "DeepSpeed's launcher 'Killing subprocess' lines alone; the thread found GPU memory short"),
    "c2729": ("unknown", "DeepSpeed's launcher 'Killing subprocess' lines alone; the container's /dev/shm was small"),
    # the fourteenth round's dev logs that no rule reads (the eleventh session's): each is cut off before its error,
    # shows none, or shows a message whose cause the label rule leaves open
    "c2890": ("deepspeed_build_failure", "DeepSpeed's cpu_adam JIT build cut at nvcc's line; CUDA 11.7 lacked sm_89"),
    "c2904": ("unknown", "a TRL GRPO rank's traceback cut inside vLLM's LLM(); the fix lowered gpu_memory_utilization"),
    "c2906": ("unknown", "ollama's 'failed to create context with model' after SIGABRT; a later ollama fixed the OOM"),
    "c2932": ("unknown", "'error: command nvcc failed with exit code 1' alone; nvcc was too old for compute_80"),
    "c2950": ("unknown", "XLA's 'Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR'; installing cuDNN fixed it"),
    "c2952": ("unknown", "Windows' entry point not found in cudnn_adv_infer64_8.dll (Chinese) and Paddle's cuDNN warning"),
    "c2962": ("unknown", "jaxlib's 'cudaGetErrorString symbol not found' under CUDA 12; jax 0.3 was too old"),
    "c2732": ("unknown", "OpenRLHF's DeepSpeed set-up lines before the kill, not the kill itself; host RAM ran out"),
    "c2783": ("unknown", "pyannote's TF32 warnings, cut off before NumPy 2's np.NAN error"),
    "c2834": ("unknown", "mmdeploy's TensorRT traceback cut off before its ImportError (libnvinfer.so.8)"),
}
TEST_FLOOR = 449  # benchmarks/README.md: test-half top-1 of the last measurement (449/524, 353661c)


def _labels(split: str) -> list[dict]:
    entries = tomllib.loads((CORPUS / "labels.toml").read_text(encoding="utf-8"))["log"]
    return [e for e in entries if e["split"] == split]


@pytest.mark.parametrize("entry", _labels("dev"), ids=lambda e: e["id"])
def test_every_dev_log_keeps_its_cause(entry: dict) -> None:
    got = primary_cause(CORPUS / entry["file"])
    if entry["id"] in KNOWN_MISSES:
        reads_as = KNOWN_MISSES[entry["id"]][0]
        assert got == reads_as, f"{entry['id']}: a known miss now reads as {got}: update KNOWN_MISSES"
    else:
        assert got == entry["cause"]


def test_the_test_half_stays_at_its_measured_top1() -> None:
    entries = _labels("test")
    right = sum(primary_cause(CORPUS / e["file"]) == e["cause"] for e in entries)
    assert right >= TEST_FLOOR, f"test-half top-1 fell to {right}/{len(entries)} (benchmarks/README.md: {TEST_FLOOR})"
