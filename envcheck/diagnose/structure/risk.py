"""A paste that ends at a warning which names why the run will fail or crawl (a program that found no GPU and fell
back to the CPU, bitsandbytes without libcudart, Ray without room in /dev/shm), or in NCCL's set-up lines. Programs
print these and go on, so they are no cause where the run goes on past them (no_cuda.py); but a paste whose last line
is such a warning, with no error anywhere, is what users show when that warning is all the run said: in the corpus's
development half every log whose paste holds one of the warnings was settled as the warning's cause (12 of 12), and
13 of the 15 that end in NCCL's INFO lines as an NCCL failure (a hang). A weak cause, as structure/unfinished.py's:
it leads only when nothing else was found, and it says what to check."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.structure.no_cuda import CUDA_TORCH

CONFIDENCE = 0.3
LAST_RESORT = "risk_warning"  # an Event of this kind counts only when no other evidence names a cause (combine.py)
# a message printed over lines (Ray wraps its warning): its first line may end this many lines before the paste
MESSAGE_LINES = 6
# an error of any kind in the paste: the run failed otherwise, and the readers of errors say how (the scan keeps the
# lines that say these words among each log's last bytes: ScanResult.late_errors)
ERROR_WORDS = r"error|FAILED|fatal"
_ERROR = re.compile(ERROR_WORDS + r"|Traceback \(most recent call last\)", re.I)
# warnings.formatwarning's first line: "<file>.py:<line>: <Category>: <message>"
_PY_WARNING = re.compile(r"\.py:\d+: \w*Warning: ")


@dataclass(frozen=True)
class Risk:
    pattern: re.Pattern[str]  # the warning's line (its first line, when it is printed over lines)
    closing: re.Pattern[str] | None  # the last line of a message printed over lines
    cause: str
    library: str
    title: str
    explanation: str
    fix: str
    source: str
    own_lines: re.Pattern[str] | None = None  # the program's own lines, which say "error" without being the run's

    def own(self, text: str) -> bool:
        """TEXT is one of the program's own lines, or holds an error only inside this warning's words (a path or a
        name): no error of the run's."""
        if self.own_lines is not None and self.own_lines.search(text):
            return True
        rest = text
        for regex in (self.pattern, self.closing):
            rest = regex.sub(" ", rest) if regex is not None else rest
        return rest != text and not _ERROR.search(rest)


_CHECK = ("Check what torch sees: python -c \"import torch; print(torch.__version__, torch.version.cuda, "
          f"torch.cuda.is_available())\"; a version ending in +cpu or a None CUDA needs {CUDA_TORCH}; otherwise "
          "check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES.")


def _cpu(pattern: str, closing: str | None, what: str, source: str) -> Risk:
    """A program's warning that torch found no GPU and the run went on on the CPU."""
    return Risk(re.compile(pattern), re.compile(closing) if closing else None, "torch_cpu_only", "torch",
                f"The paste ends at {what} and shows no error (torch sees no GPU)",
                "The last thing the run printed says it runs on the CPU because torch found no GPU: a CPU-only build "
                "of torch (its version ends in +cpu), a driver missing or too old for torch's CUDA, or "
                "CUDA_VISIBLE_DEVICES hiding every GPU. Runs on a CPU by design print it too.", _CHECK, source)


RISKS = (
    # not in pip's (or uv's, or Docker's step-prefixed) own lines: an install or a download of a wheel ran nothing
    _cpu(r"^(?!\W*(?:#\d+ [\d.]+ )?(?:Successfully|Saved|ERROR|Collecting|Downloading|Requirement|Installing|"
         r"Processing|Obtaining|Using cached|Looking in|Building wheel|Created wheel|Stored in|Would install|"
         r"Installed|Resolved|Prepared|Audited)\b).*\btorch[-= ]v?\d+\.\d+(?:\.\d+)?\+cpu\b", None,
         "a CPU-only build of torch (torch ...+cpu)",
         "torch.__version__ of the CPU wheels (local version tag +cpu), as Ultralytics' select_device banner "
         "('torch-<version> CPU') and environment listings print it (pip's and uv's own lines are left out)"),
    _cpu(r"\bdevice: cpu, n_gpu: 0\b", None, "'device: cpu, n_gpu: 0'",
         "transformers' example scripts and LLaMA-Factory: logger.warning('Process rank: ..., device: "
         "{training_args.device}, n_gpu: {training_args.n_gpu}, ...')"),
    _cpu(r"User provided device_type of 'cuda', but CUDA is not available", None, "autocast's warning",
         "torch/amp/autocast_mode.py (autocast.__init__ warns and disables itself)"),
    _cpu(r"GradScaler is enabled, but CUDA is not available", None, "GradScaler's warning",
         "torch/cuda/amp/grad_scaler.py, torch/amp/grad_scaler.py (GradScaler.__init__ warns and disables itself)"),
    _cpu(r"FP16 is not supported on CPU; using FP32 instead", None, "whisper's CPU warning",
         "openai-whisper whisper/transcribe.py (transcribe() with a model on the CPU)"),
    _cpu(r"Running on CPU now! Make sure your PyTorch version matches your CUDA", None, "CodeFormer's CPU warning",
         "CodeFormer inference_codeformer.py (set_realesrgan: 'if not gpu_is_available()')"),
    _cpu(r"no GPU has been detected", r"Falling back to CPU mode", "text-generation-webui's CPU fallback",
         "text-generation-webui modules/models.py ('torch.cuda.is_available() returned False. This means that no "
         "GPU has been detected. Falling back to CPU mode.')"),
    # (then its CPU library loads, and cextension.py warns it was 'compiled without GPU support', a closing line)
    Risk(re.compile(r"No libcudart\.so found! Install CUDA or the cudatoolkit package"),
         re.compile(r"The installed version of bitsandbytes was compiled without GPU support"),
         "missing_cuda_library", "libcudart",
         "The paste ends at bitsandbytes finding no CUDA runtime (libcudart.so) and shows no error",
         "bitsandbytes looked for libcudart.so in the library path, CUDA_HOME and the conda environment and found "
         "none: it loads its CPU library, and its 8-bit optimizers and quantization fail or are missing.",
         "Put the CUDA runtime where bitsandbytes looks: install the CUDA toolkit or the nvidia-cuda-runtime wheel "
         "for your CUDA, or add its lib64 folder to LD_LIBRARY_PATH; then run python -m bitsandbytes.",
         "bitsandbytes 0.35-0.40 cuda_setup/main.py (evaluate_cuda_setup: 'WARNING: No libcudart.so found!', then it "
         "loads libbitsandbytes_cpu.so); bitsandbytes-foundation/bitsandbytes 0.39.1-0.41.0 (4395d68c, a06a0f6a) "
         "bitsandbytes/cextension.py (the CPU library lacks cadam32bit_grad_fp32: warn('The installed version of "
         "bitsandbytes was compiled without GPU support. ...') and import goes on)"),
    Risk(re.compile(r"Skipping import of cpp extensions due to incompatible torch version"), None,
         "version_conflict", "torchao",
         "The paste ends at torchao skipping its C++/CUDA ops for an older torch, and shows no error",
         "torchao compares the installed torch with the release its compiled ops were built for and, with an older "
         "torch, logs this warning and loads without them: its quantized and fused kernels (and what vLLM, "
         "diffusers or transformers call in it) are missing or fall back.",
         "Install the torch the message asks for (or the torchao release built for the installed torch: pip install "
         "'torchao==<the release for your torch>'), in the same environment.",
         "github:pytorch/ao@02105d46c61dc80a8c9d39d5836e827ba3af8439:torchao/__init__.py (v0.17.0: with torch below "
         "2.11.0, logger.warning('Skipping import of cpp extensions due to incompatible torch version. Please upgrade "
         "to torch >= 2.11.0 (found ...).') and the .so files are not loaded)"),
    Risk(re.compile(r"/dev/shm because /dev/shm has only \d+ bytes available"),
         re.compile(r"of available RAM|This will harm performance"), "shm_too_small", "ray",
         "The paste ends at Ray's warning that /dev/shm is too small for its object store, and shows no error",
         "Ray's object store wants a share of host RAM in /dev/shm; with less room there it falls back to /tmp, "
         "which is slow, and large objects (a model's weights handed to workers) can fail or stall. A container's "
         "default /dev/shm is 64 MB.",
         "Give the container a larger /dev/shm (docker run --shm-size=<30% of RAM>, or --ipc=host; Kubernetes: an "
         "emptyDir with medium: Memory mounted at /dev/shm).",
         "ray python/ray/_private/services.py (the object store's /dev/shm check: 'The object store is using /tmp "
         "instead of /dev/shm because /dev/shm has only N bytes available')"),
    # not NCCL's teardown (a communicator destroyed or aborted, a peer's connection closed at the end): a run that ended
    Risk(re.compile(r"\bNCCL INFO\b(?!.*(?:Destroy COMPLETE|[Cc]onnection closed|\bAbort|\bfinalize|[Dd]estroy))"),
         None, "nccl_error", "nccl",
         "The paste ends in NCCL's set-up lines (NCCL_DEBUG=INFO) and shows no error: NCCL hung or stopped there",
         "The last thing the log shows is NCCL connecting the ranks (its INFO lines: the network, rings, channels), "
         "and nothing after it: a run that goes on prints its training next. An NCCL hang at start-up on one "
         "machine is most often PCIe ACS or the IOMMU routing GPU peer-to-peer traffic through the CPU; across "
         "machines, a network interface the ranks cannot reach.",
         "Run nccl-tests (all_reduce_perf -b 8 -e 128M -g <GPUs>) on the same GPUs; if it hangs too, try "
         "NCCL_P2P_DISABLE=1 (then disable ACS / set iommu=pt), and across machines set NCCL_SOCKET_IFNAME to the "
         "interface the nodes share; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET shows where it stops.",
         "NCCL's user guide, Troubleshooting: PCI Access Control Services and IOMMU 'can cause ... a hang'; "
         "NCCL_SOCKET_IFNAME", re.compile(r"\bNCCL (?:INFO|WARN)\b")),
)
ANCHORS = (b"+cpu", b"device: cpu, n_gpu: 0", b"but CUDA is not available",
           b"FP16 is not supported on CPU", b"Running on CPU now!", b"no GPU has been detected",
           b"Falling back to CPU mode", b"No libcudart.so found", b"/dev/shm has only ", b"of available RAM",
           b"This will harm performance", b"compiled without GPU support",
           b"Skipping import of cpp extensions due to incompatible")


def events(lines: list[Line], parsed: list[object], ends: dict[str, int], tails: list[Line],
           late_errors: list[Line]) -> list[Event]:
    """LINES: the excerpt's candidate lines in log order; PARSED: its tracebacks with an exception line; ENDS: each
    file's last non-blank line number; TAILS: each file's last non-blank lines, whatever they hold; LATE_ERRORS: the
    lines that say error, failed or fatal among each file's last bytes (scan.RECENT), whatever else they hold."""
    if parsed:
        return []  # an exception in any log given: the run failed otherwise, or the readers of errors say how
    errors = [line for line in (*lines, *late_errors) if _ERROR.search(line.text)]
    # an error anywhere (in any log given) but a program's own lines: the run failed otherwise
    risks = [risk for risk in RISKS if all(risk.own(line.text) for line in errors)]
    found = []
    for file, end in ends.items():
        mine = {line.number: line for line in (*lines, *tails) if line.file == file}
        while end in mine and not mine[end].text.strip():  # a prefix and nothing else (BuildKit's, a quote's '>')
            end -= 1
        last = mine.get(end)
        if last is None:
            continue
        warned = mine.get(end - 1)  # Python's warnings module prints the warning's source line ("  warn(msg)") under it
        if warned is not None and _PY_WARNING.search(warned.text) and last.text[:1].isspace():
            last = warned
        for risk in risks:
            at = last if risk.pattern.search(last.text) else None
            if at is None and risk.closing is not None and risk.closing.search(last.text):
                at = next((mine[n] for n in range(end - 1, end - MESSAGE_LINES - 1, -1)
                           if n in mine and risk.pattern.search(mine[n].text)), None)
            if at is not None:
                found.append(Event(LAST_RESORT, risk.cause, CONFIDENCE, risk.title, risk.explanation, risk.fix,
                                   file, at.number, at.text.strip(), risk.source, risk.library))
                break
    return found
