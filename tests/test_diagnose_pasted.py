"""A paste whose long lines were wrapped (pasted.py): read again with them joined, only when nothing matched as it is.

The evident logs f2620, f3302, f3309 and f3866 are such pastes (test_diagnose_evident.py keeps their causes); here
the joining itself, and the corpus's dev logs wrapped the way consoles wrap them."""

from __future__ import annotations

import html
import importlib.util
import json
import tomllib
from pathlib import Path

import pytest

from envcheck.diagnose.engine import Request, diagnose
from envcheck.diagnose.render import to_dict, to_text
from envcheck.diagnose.collectors import unstamped
from envcheck.diagnose.pasted import unwrapped

CORPUS = Path(__file__).parent / "assets" / "diagnose" / "corpus"
BENCHMARK = Path(__file__).parent.parent / "benchmarks" / "diagnose_pastes.py"

# R's torch on an old libstdc++ (evident f2620): the loader's line wrapped before "not found"
GLIBCXX = (b"Error in dyn.load(lib): /home/R/x86_64-pc-linux-gnu-library/4.1/torch/lib/liblantern.so - "
           b"/lib64/libstdc++.so.6: version `GLIBCXX_3.4.20'\nnot found (required by /home/R/x86_64-pc-linux-gnu-library/4.1/torch/lib/"
           b"liblantern.so)\nExecution halted\n")


def _diagnose(tmp_path: Path, data: bytes):
    path = tmp_path / "paste.log"
    path.write_bytes(data)
    return diagnose(Request(logs=(str(path),), system=False))


def test_a_lower_case_line_after_a_long_one_continues_it_and_the_numbers_stay() -> None:
    data, joined, soft = unwrapped(GLIBCXX)
    lines = data.split(b"\n")
    assert joined == soft == 1 and len(lines) == len(GLIBCXX.split(b"\n"))
    assert lines[0].endswith(b"version `GLIBCXX_3.4.20' not found (required by /home/R/x86_64-pc-linux-gnu-library"
                             b"/4.1/torch/lib/liblantern.so)")
    assert lines[1] == b"" and lines[2] == b"Execution halted"


@pytest.mark.parametrize("text", [
    # a traceback's source lines under its frames, and a warning's
    b'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.10/site-packages/deepspeed/ops/op_builder/'
    b'builder.py", line 523, in jit_load\n    op_module = load(name=self.name,\nKeyboardInterrupt\n',
    b"/opt/venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will "
    b"create 8 worker processes\n  warnings.warn(_create_warning_msg(\n",
    # short lines: nothing was wrapped
    b"step 1 loss 0.5\nstep 2 loss 0.4\nsaving checkpoint\n",
    # a Slurm line of exactly 100 characters, then a traceback's header (mined/review-revQ-06.log)
    b"slurmstepd: error: *** JOB 4242 ON gpu-node07 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***\n"
    b"Traceback (most recent call last):\n",
])
def test_code_short_lines_and_what_starts_a_traceback_are_not_joined(text: bytes) -> None:
    assert unwrapped(text) == (text, 0, 0)


def test_a_hard_wrap_inside_a_word_is_joined_as_it_was_cut() -> None:
    line = (b"./gst: error while loading shared libraries: libcublasLt.so.12: cannot open shared object file: No such "
            b"file or directory")
    data, joined, soft = unwrapped(line[:120] + b"\n" + line[120:] + b"\n")
    assert joined == 1 and soft == 0 and data.split(b"\n")[0] == line


# NCCL's lines of one process, all as long (dev c061): the next record, not a wrapped line's rest
NCCL_RECORDS = (b"dgxa100:1050:1315 [0] NCCL INFO Channel 13/0 : 0[90000] -> 1[1000] [send] via NET/Socket/5\n"
                b"dgxa100:1050:1315 [0] NCCL INFO Channel 14/0 : 0[90000] -> 1[1000] [send] via NET/Socket/6\n"
                b"dgxa100:1050:1315 [0] NCCL INFO Channel 15/0 : 0[90000] -> 1[1000] [send] via NET/Socket/7\n"
                b"dgxa100:1050:1316 [0] NCCL INFO include/net.h:25 -> 2\n")


def test_records_of_one_width_are_no_hard_wrap() -> None:
    assert unwrapped(NCCL_RECORDS) == (NCCL_RECORDS, 0, 0)


def _dev(log_id: str) -> tuple[str, str]:
    with open(CORPUS / "labels.toml", "rb") as handle:
        entry = next(e for e in tomllib.load(handle)["log"] if e["id"] == log_id)
    assert entry["split"] == "dev"  # only the dev half may shape the engine
    return (CORPUS / entry["file"]).read_text(encoding="utf-8"), entry["cause"]


@pytest.mark.parametrize(("log_id", "paste", "undone"), [
    # the shell's 'Killed' under a colour code whose ESC was lost, as GitHub keeps it and Windows' console copies it
    ("c063", lambda t: "".join(f"[1;31m{line}[0m\n" for line in t.splitlines()), "colour codes"),
    ("c063", lambda t: "".join(f"\u2190[33m{line}\u2190[0m\n" for line in t.splitlines()), "colour codes"),
    # NCCL's error trace with no-break spaces (a rich-text editor's), and torch's messages with curled quotes
    ("c061", lambda t: t.replace(" ", "\u00a0"), "no-break spaces"),
    ("c008", lambda t: t.replace("'", "\u2019").replace('"', "\u201d"), "curled quotes"),
    # a page's source or a JUnit XML report: '&lt;module&gt;', '&quot;', '&#x27;cpu_adam&#x27;'
    ("c137", html.escape, "character references"),
    ("c008", html.escape, "character references"),
])
def test_what_a_paste_did_to_a_dev_log_is_undone_and_said(tmp_path: Path, log_id: str, paste, undone: str) -> None:
    text, cause = _dev(log_id)
    assert _diagnose(tmp_path, text.encode()).causes[0].cause == cause
    result = _diagnose(tmp_path, paste(text).encode())
    assert result.causes and result.causes[0].cause == cause
    assert any(undone in what for what in result.repaired) and result.joined_lines == 0


def test_a_wrapped_paste_is_read_joined_and_says_so(tmp_path: Path) -> None:
    result = _diagnose(tmp_path, GLIBCXX)
    assert result.causes[0].cause == "segfault_abi_mismatch" and result.causes[0].library == "liblantern"
    assert result.joined_lines == 1 and result.lines == 3
    assert result.causes[0].evidence[0].line == 1
    assert json.loads(json.dumps(to_dict(result)))["scanned"]["joined_lines"] == 1


def test_a_log_that_reads_a_cause_as_it_is_is_not_read_again(tmp_path: Path) -> None:
    data = (b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity; 75.1 GiB "
            b"already allocated)\nof the run, then a lower-case line that a join would glue to it\n")
    result = _diagnose(tmp_path, data)
    assert result.causes[0].cause == "gpu_oom" and result.joined_lines == 0


# TensorFlow's warnings for TF-TRT's optional libraries (dso_loader.cc:64, py_utils.cc:38) before the run's own error:
# SIG034 leaves them out by their 'Could not load dynamic library' words, which a cut at 80 columns moves to the line
# before ('... dlerr' / 'or: libnvinfer.so.7: cannot open shared object file ...')
TF_TRT = ("2023-03-01 10:00:00.123456: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] "
          "Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: "
          "No such file or directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib:/usr/local/nvidia/lib64\n"
          "2023-03-01 10:00:00.123456: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] "
          "Could not load dynamic library 'libnvinfer_plugin.so.7'; dlerror: libnvinfer_plugin.so.7: cannot open "
          "shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib:/usr/local/nvidia/lib64\n"
          "2023-03-01 10:00:00.123456: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot "
          "dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the "
          "missing libraries mentioned above are installed properly.\n"
          "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import foo\n"
          "ModuleNotFoundError: No module named 'foo'\n")


@pytest.mark.parametrize("width", [80, 120])
def test_a_paste_cut_at_its_width_is_read_as_printed_whatever_its_pieces_match(tmp_path: Path, width: int) -> None:
    assert _diagnose(tmp_path, TF_TRT.encode()).causes == ()
    result = _diagnose(tmp_path, _wrap(TF_TRT, width).encode())
    assert result.causes == () and result.joined_lines >= 3


def test_a_line_of_the_pastes_width_before_an_exception_is_no_cut() -> None:
    text = b"\n".join([b"a" * 90, b"ValueError: a", b"b" * 90, b"KeyError: 'b'", b"c" * 90,
                       b"ModuleNotFoundError: No module named 'datasets.exceptions'", b""])
    assert unwrapped(text) == (text, 0, 0)


def test_where_a_paste_has_a_width_a_shorter_line_was_not_wrapped() -> None:
    cut = b"\n".join(start + b"x" * (120 - len(start)) for start in (b"alpha ", b"beta ", b"gamma "))
    text = (cut + b"\nRuntimeError: Failed to import transformers.trainer because of the "
            b"following error (look up to see its traceback):\ncannot import name 'LRScheduler'\n")
    data, joined, soft = unwrapped(text)
    assert soft == 0 and data.split(b"\n")[4] == b"cannot import name 'LRScheduler'"


def test_one_line_cut_at_80_columns_before_a_capital_is_joined(tmp_path: Path) -> None:
    line = "RuntimeError: CUDA failed with error CUDA driver version is insufficient for CUDA runtime version"
    result = _diagnose(tmp_path, (line[:80] + "\n" + line[80:] + "\n").encode())
    assert result.causes[0].cause == "driver_too_old" and result.joined_lines == 1
    assert "read again as a paste: 1 wrapped line(s) joined to the line before" in to_text(result)


def _wrap(text: str, width: int) -> str:
    """TEXT cut at WIDTH columns, as benchmarks/diagnose_pastes.py cuts it (a console copying its lines)."""
    spec = importlib.util.spec_from_file_location("diagnose_pastes", BENCHMARK)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module._wrap(width)(text)  # noqa: SLF001 - the benchmark's own cut, not a second copy of it


@pytest.mark.parametrize(("width", "floor", "before"), [(80, 436, 304), (120, 297, 264)])
def test_dev_logs_wrapped_as_consoles_wrap_them_keep_their_cause(tmp_path: Path, width: int, floor: int,
                                                                before: int) -> None:
    """Every dev log that reads right and has a line longer than WIDTH, cut at WIDTH columns (as a console copies
    it): FLOOR keep their cause (of 439 at 80 columns, 299 at 120; BEFORE did without the joining)."""
    with open(CORPUS / "labels.toml", "rb") as handle:
        logs = [e for e in tomllib.load(handle)["log"] if e["split"] == "dev"]
    kept = tried = 0
    for entry in logs:
        path = CORPUS / entry["file"]
        text = path.read_text(encoding="utf-8")
        if max(map(len, text.splitlines()), default=0) <= width:
            continue
        causes = diagnose(Request(logs=(str(path),), system=False)).causes
        if not causes or causes[0].cause != entry["cause"]:
            continue
        tried += 1
        wrapped = _diagnose(tmp_path, _wrap(text, width).encode()).causes
        kept += bool(wrapped) and wrapped[0].cause == entry["cause"]
    assert tried >= floor and kept >= floor, (kept, tried)


# (a log collector's stamp before line I, the dev log): stamps that change from line to line
STAMPS = [
    (lambda i: f"Dec 04 01:02:{i % 60:02d} gpu-node07 python[1234]: ", "c063"),  # journalctl; the shell's Killed
    (lambda i: f"2024-05-01T10:00:{i % 60:02d}.{i * 7919 % 10**6:06d}789Z stderr F ", "c1847"),  # CRI; a traceback
    (lambda i: f"2024-05-01T10:00:{i % 60:02d}.{i * 7919 % 10**6:06d}789Z ", "c1847"),  # docker logs -t
    (lambda i: f"2024-05-01 10:00:{i % 60:02d},{i * 7 % 1000:03d} ", "c1847"),  # a stamp alone (moreutils' ts)
    (lambda i: f"[2024-05-01 10:00:{i % 60:02d}] ", "c941"),
]


@pytest.mark.parametrize(("stamp", "log_id"), STAMPS)
def test_a_dev_log_under_a_collectors_stamps_keeps_its_cause(tmp_path: Path, stamp, log_id: str) -> None:
    text, cause = _dev(log_id)
    stamped = "".join(stamp(i) + line + "\n" for i, line in enumerate(text.splitlines()))
    result = _diagnose(tmp_path, stamped.encode())
    assert result.causes and result.causes[0].cause == cause
    assert any("time stamps" in what for what in result.repaired)


def test_a_stamp_on_fewer_than_half_the_lines_stays() -> None:
    data = b"2024-05-01 10:00:00,123 - INFO - loading\nstep 1\nstep 2\nKilled\n"
    assert unstamped(data) == data
    assert unstamped(b"Dec 04 01:02:03 n1 kernel: x\nDec 04 01:02:04 n1 kernel: y\n") == b"x\ny\n"


@pytest.mark.parametrize(("stamped", "plain"), [
    (b"2024-05-01 10:00:00,123 - WARNING - x\n2024-05-01 10:00:01,456 - ERROR - y\n", b"WARNING - x\nERROR - y\n"),
    (b"[2024-05-01 10:00:00,123] [INFO] x\n[2024-05-01 10:00:01,456] [WARNING] y\n", b"[INFO] x\n[WARNING] y\n"),
    (b"ERROR 10-13 09:06:25 [executor.py:597] x\nERROR 10-13 09:06:26 [executor.py:597] y\n",
     b"ERROR [executor.py:597] x\nERROR [executor.py:597] y\n"),
    (b"W0501 10:00:00.123456 12345 main.cc:42] x\nI0501 10:00:01.5 12345 main.cc:43] y\n",
     b"W0501 main.cc:42] x\nI0501 main.cc:43] y\n"),
])
def test_a_stamps_level_stays(stamped: bytes, plain: bytes) -> None:
    """Rules leave out a logger's INFO and WARNING lines and glog's W lines by their level (mined/review-revT-01)."""
    assert unstamped(stamped) == plain


def test_a_loggers_message_is_no_shells_line(tmp_path: Path) -> None:
    """'Killed' at the start of a logger's message is not the shell's report of a SIGKILL (a review's example)."""
    data = "".join(f"2024-05-01 10:00:{i:02d},456 - WARNING - {text}\n" for i, text in enumerate([
        "Killed stale process with PID 41234 holding the lock", "lock acquired", "epoch 1 done", "epoch 2 done"]))
    assert _diagnose(tmp_path, data.encode()).causes == ()


def test_a_line_end_reference_keeps_the_lines_numbers() -> None:
    from envcheck.diagnose.pasted import repaired

    repair = repaired(b'<failure message="x&#10;y">\nRuntimeError: &quot;z&quot;\n')
    assert repair.data == b'<failure message="x y">\nRuntimeError: "z"\n' and repair.joined == 0
    assert repair.undone == ("HTML and XML character references decoded",)
