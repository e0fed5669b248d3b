"""Lines that a launcher or log collector prefixed (torchrun's ranks, pdsh's hosts, Ray's workers, docker compose's
services, kubectl's timestamps, docker build's BuildKit steps, quoted replies, pytest's report) read as the lines the program printed. Each case is a real log of the corpus's
development half or of the evident set (labels.toml beside it: URL and settled cause) with every line prefixed:
the signatures anchored at a line's start (a shell's `Killed`, MPI's Hydra summary, Windows' DLL message, xformers'
C++ extension warning) must still match, and so must the structure readers (pip's build steps and its resolver's
report, a traceback's exception line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.diagnose.prefixes import unprefixed
from tests.diagnose_support import primary_of

ASSETS = Path(__file__).parent / "assets" / "diagnose"
PREFIXES = ["[rank0]: ", "[default3]:", "[1,0]<stderr>:", "10.0.0.7: ", "worker-1: ", "0: ",
            "(RayWorkerWrapper pid=4242, ip=10.0.0.7) ", "app-1  | ", "2024-05-01T10:00:00.123456789Z ",
            "10.0.0.7: [rank3]: ", "#12 34.56 ", "> ", "E       "]


def _log(name: str) -> str:
    folder = "corpus/dev" if name.startswith("c") else "evident/logs"
    return (ASSETS / folder / f"{name}.log").read_text(encoding="utf-8")


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(("name", "cause"), [
    ("c063", "host_oom"),  # a shell's bare 'Killed' after a progress bar
    ("c1783", "host_oom"),  # MPICH Hydra: 'BAD TERMINATION ... KILLED BY SIGNAL: 9 (Killed)'
    ("c1195", "torch_cpu_only"),  # xformers: 'WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions'
    ("f1100", "missing_cuda_library"),  # Windows: the DLL's path wrapped onto a line of its own
    ("f201", "deepspeed_build_failure"),  # DeepSpeed: the op was not built ('ds_opt_adam')
    # the structure readers: pip's build steps and resolver report, a traceback's exception under a prefix
    ("c650", "deepspeed_build_failure"),  # pip: 'Getting requirements to build wheel ... error' for deepspeed
    ("c1937", "deepspeed_build_failure"),  # old pip: 'Command errored out with exit status 1: python setup.py egg_info'
    ("c2397", "version_conflict"),  # pip's resolver: 'tensorflow 2.4.4 requires numpy~=1.19.2, but you have ...'
    ("c2440", "version_conflict"),  # "ModuleNotFoundError: No module named 'triton.common'"
    ("c1022", "torch_cpu_only"),  # the last resort: a paste that ends at LLaMA-Factory's 'device: cpu, n_gpu: 0'
])
def test_a_prefixed_log_reads_its_cause(tmp_path: Path, capsys, name: str, cause: str, prefix: str) -> None:
    text = "".join(prefix + line + "\n" for line in _log(name).splitlines())
    assert primary_of(capsys, tmp_path, text)["cause"] == cause


@pytest.mark.parametrize(("line", "bare"), [
    (b"[rank0]: Killed", b"Killed"),
    (b"10.0.0.7: [rank3]: RuntimeError: x", b"RuntimeError: x"),
    (b"(pid=77) Killed", b"Killed"),
    (b"vllm_1  | Killed", b"Killed"),
    (b"RuntimeError: CUDA error", b"RuntimeError: CUDA error"),  # an exception's name is no host
    (b"ld: cannot find -lcurand", b"ld: cannot find -lcurand"),
    (b"train.py: error: unrecognized arguments", b"train.py: error: unrecognized arguments"),
    (b"gpu-node-3: Killed", b"Killed"),
    (b"ip-10-0-0-7: Killed", b"Killed"),
    # a review's counter-examples: a sweep's trial, a step, a tool's name are no host
    (b"trial-7: Killed after 3 of 10 epochs", b"trial-7: Killed after 3 of 10 epochs"),
    (b"step-1: Aborted", b"step-1: Aborted"),
    (b"collect2: error: ld returned 1 exit status", b"collect2: error: ld returned 1 exit status"),
    (b"  File \"x.py\", line 1", b"  File \"x.py\", line 1"),
    # docker build's BuildKit step, a quoted reply, pytest's report; not the REPL's prompt, glog's level, C's #include
    (b"#8 12.345 error: command 'gcc' failed", b"error: command 'gcc' failed"),
    (b"> Killed", b"Killed"),
    (b">> [rank0]: Killed", b"Killed"),
    (b"E       RuntimeError: CUDA error", b"RuntimeError: CUDA error"),
    (b">>> torch.cuda.is_available()", b">>> torch.cuda.is_available()"),
    (b"E1130 16:02:50.402000 140211 api.py:862] failed", b"E1130 16:02:50.402000 140211 api.py:862] failed"),
    (b"#include <cuda_runtime.h>", b"#include <cuda_runtime.h>"),
    (b">", b""), (b"#12 0.301", b""), (b"E", b""),  # a blank line under each prefix, its trailing space gone
])
def test_only_launchers_prefixes_are_taken_off(line: bytes, bare: bytes) -> None:
    assert unprefixed(line) == bare


@pytest.mark.parametrize("prefix", ["> ", "#12 34.56 ", "E       "])
def test_a_paste_that_ends_in_a_prefixed_blank_line_ends_at_the_line_before(tmp_path: Path, capsys,
                                                                           prefix: str) -> None:
    """A quoted reply, BuildKit and pytest prefix blank lines too (the trailing space is often lost): the last line
    the program printed is the one before, where the last-resort reader looks (c1022 ends at LLaMA-Factory's
    'device: cpu, n_gpu: 0')."""
    lines = _log("c1022").splitlines() + ["", ""]
    text = "".join((prefix + line).rstrip() + "\n" for line in lines)
    assert primary_of(capsys, tmp_path, text)["cause"] == "torch_cpu_only"
