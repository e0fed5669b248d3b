"""The diagnose benchmarks' own logic: the accuracy benchmark's 95 % interval (benchmarks/diagnose_accuracy.py, the
Wilson score interval, checked against its closed forms at the ends, 0 of n: [0, z^2 / (n + z^2)], and its
symmetry), and the speed benchmark's dense training log, which no anchor may be in (benchmarks/bench_diagnose.py)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "diagnose_accuracy.py"


def _wilson():
    return _script().wilson


def test_none_right_of_ten_reaches_z_squared_over_n_plus_z_squared() -> None:
    low, high = _wilson()(0, 10)
    assert low == pytest.approx(0.0, abs=1e-3)
    assert high == pytest.approx(1.96 ** 2 / (10 + 1.96 ** 2), abs=1e-3)  # 0.2775


def test_the_interval_is_symmetric_and_holds_the_rate() -> None:
    wilson = _wilson()
    low, high = wilson(367, 430)
    flipped = wilson(430 - 367, 430)
    assert (low, high) == pytest.approx((1 - flipped[1], 1 - flipped[0]), abs=1e-3)
    assert low < 367 / 430 < high and high - low < 0.07


def test_no_logs_give_an_empty_interval() -> None:
    assert _wilson()(0, 0) == (0.0, 0.0)


@pytest.mark.parametrize("shape", ["trainer", "tracebacks"])
def test_no_anchor_is_in_a_tenth_of_the_lines_of_a_dense_log(tmp_path: Path, shape: str) -> None:
    """The benchmark's trainer shape (dense loss and Trainer lines, benchmarks/bench_diagnose.py): an anchor found in
    each of its lines makes each a candidate, and the scan falls from about 300 MB/s to 35 (a Trainer banner that was
    an anchor did that once). The traceback shape's headers are the one anchor the scan stops matching once it keeps
    enough tracebacks: a signature anchored on 'Traceback (most recent call last)' itself took it to 32 MB/s."""
    from envcheck.diagnose.matcher import TRACEBACK, Matcher
    from envcheck.diagnose.structure.events import ANCHORS
    from envcheck.matrix import load_matrix
    anchors = {*ANCHORS, *Matcher(load_matrix().signatures).anchors} - {TRACEBACK}
    spec = importlib.util.spec_from_file_location("bench_diagnose", SCRIPT.parent / "bench_diagnose.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / f"{shape}.log"
    bench.make_shape(str(path), 1, shape)
    lines = path.read_bytes().splitlines()[:2000]
    hit = [a for a in sorted(anchors) if sum(a in line for line in lines) > len(lines) // 10]
    assert hit == []


def _script():
    spec = importlib.util.spec_from_file_location("diagnose_accuracy", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("named", "label"), [
    ("cpu_adam_op", "cpu_adam_op.cpython-38-x86_64-linux-gnu.so"),  # an extension and its file
    ("torch._C", "_C.cpython-36m-x86_64-linux-gnu.so"),  # torch's _C extension
    ("pixsfm._pixsfm", "_pixsfm"),
    ("torch_scatter._version_cuda", "torch_scatter"),  # a module of the package
    ("libcudart.7ec1eba6.so.12", "libcudart.so.12"),  # auditwheel's vendored copy
    ("libcurand", "curand"),  # ld's -lcurand
    ("deepspeed_ccl_comm", "deepspeed_ccl_comm_op"),  # DeepSpeed's op and the module setup.py builds
    ("torch-scatter", "torch_scatter"),
])
def test_one_library_under_two_spellings_counts_as_named(named: str, label: str) -> None:
    assert _script().same_library(named, label)


@pytest.mark.parametrize(("named", "label"), [
    ("common_ops", "sgl_kernel"), ("numpy", "fdasrsf"), ("torch", "torchaudio"), ("", "flash_attn_2_cuda"),
    ("vllm._C", "torch._C"),
])
def test_other_libraries_do_not_count(named: str, label: str) -> None:
    assert not _script().same_library(named, label)


def test_a_library_is_shown_only_when_the_log_names_it() -> None:
    shown = _script().shown
    assert shown("flash_attn_2_cuda", "ImportError: .../flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined")
    assert not shown("fdasrsf", "AttributeError: `np.float_` was removed in the NumPy 2.0 release.")


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep")
def test_every_signature_is_a_pattern_grep_accepts_in_the_speed_benchmark(tmp_path: Path) -> None:
    """bench_diagnose.py times `grep -E -f` over the signatures translated to POSIX ERE; one grep refuses makes grep
    exit at once, and its 'speed' meaningless (33 GB/s once, from a \\s inside a bracket expression)."""
    from envcheck.matrix import load_matrix
    empty = tmp_path / "empty.log"
    empty.write_text("", encoding="utf-8")
    refused = []
    for sig in load_matrix().signatures:
        ere = (sig.pattern.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\S", "[^[:space:]]")
               .replace(r"\w", "[[:alnum:]_]").replace(r"\b", ""))
        if subprocess.run(["grep", "-E", "-e", ere, str(empty)], capture_output=True).returncode == 2:
            refused.append(sig.id)
    assert refused == []


def test_the_judged_verdicts_cover_every_corpus_log_twice() -> None:
    """judged.tsv (two blind judges per log) names each log of labels.toml once, with two valid verdicts."""
    import tomllib

    corpus = SCRIPT.parent.parent / "tests" / "assets" / "diagnose" / "corpus"
    ids = [entry["id"] for entry in tomllib.loads((corpus / "labels.toml").read_text())["log"]]
    rows = [line.split("\t") for line in (corpus / "judged.tsv").read_text().splitlines()
            if not line.startswith(("#", "id\t"))]
    assert sorted(row[0] for row in rows) == sorted(ids)
    assert all(len(row) == 3 and set(row[1:]) <= {"shown", "hinted", "not_shown"} for row in rows)


def test_a_pair_of_verdicts_is_named_in_order_whichever_judge_gave_which(tmp_path: Path) -> None:
    (tmp_path / "judged.tsv").write_text("# note\nid\tjudge_a\tjudge_b\nc1\thinted\tshown\nc2\tnot_shown\tnot_shown\n"
                                         "c3\tshown\tnot_shown\n")
    assert _script().judged(str(tmp_path)) == {"c1": "shown+hinted", "c2": "both not_shown", "c3": "shown+not_shown"}
