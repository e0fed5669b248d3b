"""The memory model against published figures: measured per-GPU peaks from five frameworks
(tests/plan_calibration.py, with sources) and LLaMA-Factory's hardware table.

The calibration set is judged as a whole: its median error must stay under what it is today (benchmarks/README.md
prints the table, `python benchmarks/bench_plan_calibration.py`), as many points as today must stay within 15 %,
and no point may be under-predicted by more than the worst miss noted there. Tighten the numbers when the model
improves; a change that loosens them needs a reason in benchmarks/README.md.
"""

from __future__ import annotations

import pytest
from plan_calibration import POINTS, QWEN_1_8B, QWEN_7B, QWEN_14B, QWEN_72B, errors, median_abs_error

from envcheck.plan.gpu import gpu_memory
from envcheck.plan.params import from_count
from envcheck.plan.setup import Setup

GB, GIB = 10**9, 2**30
MEDIAN_CEILING = 0.095  # measured 0.091 on 51 points (benchmarks/README.md)
WITHIN_15_FLOOR = 35  # of 51
WORST_UNDER = -0.45  # llama-factory glm-4-9b QLoRA at 10240 tokens: -0.42


def _rows():  # type: ignore[no-untyped-def]
    return errors(lambda spec, setup: gpu_memory(spec, setup).total)


def test_qwen_shapes_match_their_published_sizes():
    assert QWEN_7B.params == pytest.approx(7.72e9, rel=0.01)
    assert QWEN_14B.params == pytest.approx(14.2e9, rel=0.01)
    assert QWEN_72B.params == pytest.approx(72.3e9, rel=0.01)
    assert QWEN_1_8B.params == pytest.approx(1.84e9, rel=0.01)


def test_calibration_set_is_broad():
    assert len(POINTS) >= 30
    assert len({point.framework for point in POINTS}) >= 4
    assert len({point.id for point in POINTS}) == len(POINTS)


def test_median_error_does_not_regress():
    rows = _rows()
    assert median_abs_error(rows) < MEDIAN_CEILING
    assert sum(abs(error) <= 0.15 for *_, error in rows) >= WITHIN_15_FLOOR


def test_no_point_is_under_predicted_beyond_the_worst_known_miss():
    worst = min(_rows(), key=lambda row: row[2])
    assert worst[2] > WORST_UNDER, worst[0].id


# LLaMA-Factory README "Hardware Requirement" (v0.9.2+): estimated GB for the whole job, by method and size.
LLAMA_FACTORY = {
    "full": (Setup(method="full"), (120, 240, 600, 1200)),
    "pure_bf16": (Setup(method="full", precision="pure_bf16"), (60, 120, 300, 600)),
    "lora": (Setup(method="lora"), (16, 32, 64, 160)),
    "qlora8": (Setup(method="qlora", quant_bits=8), (10, 20, 40, 80)),
    "qlora4": (Setup(method="qlora", quant_bits=4), (6, 12, 24, 48)),
}
SIZES = (7, 14, 30, 70)
# The 30B cells of the full rows are 20x and 10x GB per billion where the table's own xB rule (and its 7B, 14B and
# 70B cells) say 18x and 8x: those two cells are checked against the rule. Its 4-bit 30B cell (24 GB, 0.8 GB per
# billion against 0.69 at 70B) is 18 % above the model, which counts 16-bit embeddings and 1024-token activations:
# checked at 20 %.
# Its 7B 4-bit cell (6 GB) is 17 % under the model, whose 1 GiB CUDA context and 8 % allocator share come from the
# measured rows (plan_calibration.py), which the table, an estimate, does not claim to be: checked at 20 %.
EXCEPTIONS = {("full", 30): (18 * 30, 0.15), ("pure_bf16", 30): (8 * 30, 0.15), ("qlora4", 30): (24, 0.20),
              ("qlora4", 7): (6, 0.20)}


@pytest.mark.parametrize("row", sorted(LLAMA_FACTORY))
@pytest.mark.parametrize("size", SIZES)
def test_llama_factory_table(row, size):
    setup, figures = LLAMA_FACTORY[row]
    setup = Setup(**{**setup.__dict__, "seq_len": 1024})
    predicted = gpu_memory(from_count(size * 10**9, f"{size}B"), setup).total / GB
    published, tolerance = EXCEPTIONS.get((row, size), (figures[SIZES.index(size)], 0.15))
    assert predicted == pytest.approx(published, rel=tolerance)
