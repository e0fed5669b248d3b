"""Where a log ends (ScanResult.ends, the last non-blank line of each file) and the readers that depend on it: a
build cut while it compiles (structure/unfinished.py: at most NEAR_END lines after its last build line), a crash
just after the Trainer's end-of-training lines (combine._after_training), and a paste that starts inside a
traceback (headless.py), also after a UTF-8 byte-order mark and against stacks that are no tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcheck.diagnose.engine import Request, diagnose
from envcheck.diagnose.model import ScanResult
from envcheck.diagnose.scan import Matcher, scan
from envcheck.diagnose.source import open_log
from envcheck.diagnose.structure.unfinished import NEAR_END
from envcheck.matrix import load_matrix

BUILD = ("Using /home/user/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
         "Emitting ninja build file /home/user/.cache/torch_extensions/py310_cu121/random_ltd/build.ninja...\n"
         "Building extension module random_ltd...\n")


def _ends(tmp_path: Path, *bodies: bytes) -> list[int]:
    paths = []
    for i, body in enumerate(bodies):
        path = tmp_path / f"log{i}.log"
        path.write_bytes(body)
        paths.append(path)
    logs = [open_log(str(p)) for p in paths]
    try:
        result = scan([log.__enter__() for log in logs], Matcher(load_matrix().signatures))
    finally:
        for log in logs:
            log.__exit__(None, None, None)
    return [end for _, end in result.ends]


@pytest.mark.parametrize(("body", "end"), [
    (b"a\nb\nc\n", 3),
    (b"a\nb\nc", 3),  # no final newline
    (b"a\r\nb\r\n\r\n\r\n", 2),  # CRLF and trailing blank lines
    (b"a\n\n  \n\n", 1),  # blank lines of spaces too
    (b"\n\n\n", 0),  # blank lines alone (an empty file is refused as input before)
])
def test_a_log_ends_at_its_last_non_blank_line(tmp_path: Path, body: bytes, end: int) -> None:
    assert _ends(tmp_path, body) == [end]


def test_each_file_has_its_own_end(tmp_path: Path) -> None:
    assert _ends(tmp_path, b"a\nb\n", b"x\n" * 7 + b"\n") == [2, 7]


def _primary(tmp_path: Path, text: str, name: str = "build.log") -> tuple[str, str] | None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    causes = diagnose(Request(logs=(str(path),), system=False)).causes
    return (causes[0].cause, causes[0].library) if causes else None


def test_a_build_line_followed_by_at_most_near_end_lines_is_a_cut_build(tmp_path: Path) -> None:
    assert _primary(tmp_path, BUILD + "ninja: waiting\n" * NEAR_END) == ("deepspeed_build_failure", "random_ltd")
    assert _primary(tmp_path, BUILD + "ninja: waiting\n" * (NEAR_END + 1)) is None


def test_ninjas_last_step_or_no_work_to_do_ends_the_build(tmp_path: Path) -> None:
    windows = BUILD + ('[3/3] "C:\\Program Files\\Microsoft Visual Studio\\2022\\VC\\bin\\link.exe" random_ltd.o '
                       "/nologo /DLL /out:random_ltd.pyd\n")
    assert _primary(tmp_path, windows) is None
    assert _primary(tmp_path, BUILD + "ninja: no work to do.\n") is None


HEADLESS = ('    File "DeepSpeed/setup.py", line 195, in <module>\n      builder.hipify_extension()\n'
            '    File "DeepSpeed/op_builder/builder.py", line 750, in hipify_extension\n'
            '      header_include_dirs=self.include_paths(),\n'
            '    File "DeepSpeed/op_builder/dc.py", line 32, in include_paths\n'
            '      return [\'csrc/includes\', os.path.join(torch.utils.cpp_extension.CUDA_HOME, "include")]\n'
            '    File "<frozen posixpath>", line 76, in join\n'
            "  TypeError: expected str, bytes or os.PathLike object, not NoneType\n")


def test_a_headless_traceback_is_read_after_a_byte_order_mark(tmp_path: Path) -> None:
    assert _primary(tmp_path, HEADLESS) == ("deepspeed_build_failure", "dc")
    assert _primary(tmp_path, "\ufeff" + HEADLESS) == ("deepspeed_build_failure", "dc")


# A wait on another rank's build lock that the user stopped (mined/review-revE-07.log): a stop, not a failed build.
INTERRUPTED_WAIT = ('  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 523, in '
                    'jit_load\n    op_module = load(name=self.name,\n'
                    '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 1523, in '
                    '_jit_compile\n    baton.wait()\n'
                    '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/file_baton.py", line 42, in wait\n'
                    "    time.sleep(self.wait_seconds)\nKeyboardInterrupt")


@pytest.mark.parametrize("ending", ["\n", ""])
def test_a_last_line_without_its_newline_is_read_with_the_lines_before_it(tmp_path: Path, ending: str) -> None:
    """A paste saved without its final newline: the exception line of a headless traceback stays in its block (it
    was read alone, and the frames of DeepSpeed's JIT build without it read as a build cut off)."""
    assert _primary(tmp_path, INTERRUPTED_WAIT + ending) is None
    assert _primary(tmp_path, HEADLESS.rstrip("\n") + ending) == ("deepspeed_build_failure", "dc")
    path = tmp_path / "sized.log"
    path.write_text(INTERRUPTED_WAIT + ending, encoding="utf-8")
    result = _scan(path)
    assert result.bytes_read == path.stat().st_size and result.lines == INTERRUPTED_WAIT.count("\n") + 1


@pytest.mark.parametrize("stack", [
    # traceback.print_stack(): frames with no header, then the program goes on
    'DEBUG who calls save():\n  File "/home/u/train.py", line 10, in <module>\n    main()\n'
    '  File "/opt/venv/lib/python3.10/site-packages/transformers/trainer.py", line 5, in save_model\n'
    "    traceback.print_stack()\nUserWarning: checkpoint saved with safe_serialization=False\nstep 2 loss 0.4\n",
    # torch's deferred CUDA error: "CUDA call was originally invoked at:", a blank line, then the frames
    "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0\n\n"
    "CUDA call was originally invoked at:\n\n"
    '  File "/home/u/train.py", line 3, in <module>\n    import torch\n'
    '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 238, in <module>\n'
    "    _lazy_call(_check_capability)\n[rank1]: RuntimeError: rank 1 exited\n",
])
def test_a_printed_stack_is_no_headless_traceback(tmp_path: Path, stack: str) -> None:
    path = tmp_path / "stack.log"
    path.write_text(stack, encoding="utf-8")
    first = diagnose(Request(logs=(str(path),), system=False)).first_exception
    assert first is None or first.line == 1


FINISHED = ("***** train metrics *****\n  epoch = 3.0\n  train_loss = 0.52\n")


def test_the_end_of_training_counts_only_just_before_the_crash_and_in_its_own_log(tmp_path: Path) -> None:
    crash = "terminate called without an active exception\nAborted (core dumped)\n"
    just_after = tmp_path / "a.log"
    just_after.write_text(FINISHED + crash, encoding="utf-8")
    long_after = tmp_path / "b.log"
    long_after.write_text(FINISHED + "{'loss': 0.4}\n" * 30 + crash, encoding="utf-8")
    other_run = tmp_path / "c.log"
    other_run.write_text(FINISHED, encoding="utf-8")
    crash_only = tmp_path / "d.log"
    crash_only.write_text("{'loss': 0.4}\n" * 5 + crash, encoding="utf-8")

    def noted(*paths: Path) -> bool:
        causes = diagnose(Request(logs=tuple(str(p) for p in paths), system=False)).causes
        assert causes[0].cause == "segfault_other"
        return "training loop had finished" in causes[0].explanation

    assert noted(just_after)
    assert not noted(long_after)
    assert not noted(crash_only, other_run)


def _scan(path: Path) -> ScanResult:
    """One log scanned with every signature (scan reads CHUNK when it runs: a test may shrink it first)."""
    with open_log(str(path)) as log:
        return scan([log], Matcher(load_matrix().signatures))


def _blocks(tmp_path: Path, body: bytes) -> list[list[str]]:
    path = tmp_path / "blocks.log"
    path.write_bytes(body)
    return [[line.text for line in lines] for lines, _ in _scan(path).blocks]


def test_a_traceback_across_the_sniffed_head_keeps_its_exception(tmp_path: Path) -> None:
    """The first 64 KiB are read alone to sniff the format; a traceback that starts in them and ends after them is
    still one traceback with its frames and its exception (it was cut at the head's end, and its exception lost)."""
    filler = b"".join(b"[INFO|trainer.py:%d] step %06d {'loss': 1.25}\n" % (i, i) for i in range(1_300))
    assert 60_000 < len(filler) < 64 * 1024
    frames = b"".join(b'  File "/opt/venv/lib/python3.10/site-packages/mylib/m%d.py", line %d, in f%d\n'
                      b"    do_thing_%d()\n" % (i, i, i, i) for i in range(60))
    body = (filler + b"Traceback (most recent call last):\n" + frames
            + b"RuntimeError: the thing failed at the end\n" + filler)
    assert body.index(b"Traceback") < 64 * 1024 < body.index(b"RuntimeError")
    blocks = _blocks(tmp_path, body)
    assert len(blocks) == 1
    assert "RuntimeError: the thing failed at the end" in blocks[0]


def test_tracebacks_past_the_kept_ones_in_the_first_chunk_keep_the_last(tmp_path: Path) -> None:
    """The first BLOCKS tracebacks and the last BLOCKS // 4 are kept, also when the first BLOCKS fill up inside the
    first chunk (which now holds the head and what follows it): each kept once, the log's last one among them."""
    from envcheck.diagnose.scan import BLOCKS

    one = b"Traceback (most recent call last):\n  File \"x.py\", line %d, in <module>\nValueError: number %d\n"
    body = b"".join(one % (i, i) for i in range(BLOCKS * 3))
    blocks = _blocks(tmp_path, body)
    exceptions = [block[-1] for block in blocks]
    assert len(exceptions) == len(set(exceptions)) == BLOCKS + BLOCKS // 4
    assert exceptions[0] == "ValueError: number 0" and exceptions[-1] == f"ValueError: number {BLOCKS * 3 - 1}"


@pytest.mark.parametrize("chunk", [100_000, 100_003, 102_000, 104_500])
def test_a_traceback_cut_by_a_chunk_end_keeps_its_exception(tmp_path: Path, monkeypatch, chunk: int) -> None:
    """A traceback whose header is in one chunk and whose exception line is in the next is read whole: its block
    keeps the header and the exception, and the exception line keeps its number, wherever the chunk ends (the
    first chunk is CHUNK bytes when CHUNK is past the sniffed head and under FIRST_CHUNK)."""
    monkeypatch.setattr("envcheck.diagnose.scan.CHUNK", chunk)
    steps = [f"step {i:05d} loss 1.0" for i in range(4850)]  # 97,000 bytes: the header lies before every end
    frames = [f'  File "/opt/app/train_{i}.py", line {i}, in step_{i}\n    run_step_{i}(batch)' for i in range(60)]
    exception = "ValueError: the batch held no tokens"
    path = tmp_path / "straddle.log"
    path.write_text("\n".join([*steps, "Traceback (most recent call last):", *frames, exception, "done"]) + "\n")
    assert 97_000 <= path.read_bytes().find(b"Traceback") < 100_000 < path.read_bytes().find(b"ValueError")
    result = _scan(path)
    assert [(hit.line, hit.text) for hit in result.exceptions] == [(len(steps) + 1 + 2 * len(frames) + 1, exception)]
    (lines, _prefix), = result.blocks
    assert lines[0].text.startswith("Traceback") and exception in [line.text for line in lines]


def test_a_second_traceback_after_a_held_one_keeps_its_exception(tmp_path: Path, monkeypatch) -> None:
    """The block that finishes a held traceback ends where the next traceback starts (a review's log: the second
    traceback began inside the next chunk's first 64 KiB and ended past it, and lost its exception)."""
    monkeypatch.setattr("envcheck.diagnose.scan.CHUNK", 100_000)
    def traceback(name: str, frames: int) -> list[str]:
        return ["Traceback (most recent call last):", *[f'  File "/opt/app/{name}_{i}.py", line {i}, in f{i}\n'
                                                        f'    g{i}({"batch, " * 12}step)' for i in range(frames)]]
    lines = [f"step {i:05d} loss 1.0" for i in range(4900)]  # 98,000 bytes: the first header is held
    lines += [*traceback("a", 20), "ValueError: first", *[f"retry {i:05d} of the batch" for i in range(1900)]]
    lines += [*traceback("b", 150), "RuntimeError: CUDA error: an illegal memory access was encountered"]
    path = tmp_path / "two.log"
    path.write_text("\n".join(lines) + "\n")
    data = path.read_bytes()  # the second traceback starts inside the next chunk's first 64 KiB and ends past it
    assert 100_000 < data.find(b"Traceback", 100_000) < 100_000 + 65_536 < data.find(b"RuntimeError")
    result = _scan(path)
    assert [hit.text for hit in result.exceptions] == [
        "ValueError: first", "RuntimeError: CUDA error: an illegal memory access was encountered"]


def test_a_traceback_header_cut_by_a_chunk_end_keeps_its_exception(tmp_path: Path, monkeypatch) -> None:
    """The chunk's end falls inside the header line itself: the line, finished by the next chunk, starts a
    traceback whose frames and exception follow in that chunk."""
    steps = "".join(f"step {i:05d} loss 1.0\n" for i in range(4900))
    frames = "".join(f'  File "/opt/app/a_{i}.py", line {i}, in f{i}\n    g{i}()\n' for i in range(30))
    path = tmp_path / "header.log"
    path.write_text(steps + "Traceback (most recent call last):\n" + frames + "KeyError: 'input_ids'\ndone\n")
    header = len(steps)
    for chunk in range(header - 3, header + 40, 6):
        monkeypatch.setattr("envcheck.diagnose.scan.CHUNK", chunk)
        result = _scan(path)
        assert [hit.text for hit in result.exceptions] == ["KeyError: 'input_ids'"], chunk


def test_the_tail_pass_reads_the_lines_before_a_held_back_traceback(tmp_path: Path, match_engine: str) -> None:
    """A traceback at a log's end is read as a block of its own (held back from the chunk before it); the tail pass,
    which meets the anchors common in the log's head (the `re` engine leaves them out of the streaming pass), still
    reads the lines before it (a review's log: 'collect: Error: ... +cpu' was lost without Hyperscan)."""
    head = "info: step 10 loss 1.0 lr 0.001 +cpu Error: -> 1\n" * 3000
    error = "collect: Error: something went wrong +cpu\n"
    path = tmp_path / "tail.log"
    path.write_text(head + "plain\n" * 2000 + error + "more\n" * 10 + "Traceback (most recent call last):\n"
                    '  File "a.py", line 1, in <module>\nValueError: x\n')
    result = _scan(path)
    assert (5001, error.strip()) in [(line.number, line.text) for line in result.excerpt]
