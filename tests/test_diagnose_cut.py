"""A paste that stops inside a traceback before its exception line (structure/cut.py): in DeepSpeed's op loading it
is a weak deepspeed_build_failure; anywhere else, or when the excerpt goes on, it names nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose_support import primary_of

HEADER = "Traceback (most recent call last):\n"
TRAINER = ('  File "/venv/lib/python3.10/site-packages/transformers/trainer.py", line 1776, in _inner_training_loop\n'
           '    model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)\n')
ACCELERATE = ('  File "/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1599, '
              'in _prepare_deepspeed\n'
              '    optimizer = DeepSpeedCPUAdam(optimizer.param_groups, **defaults)\n')
BUILDER = ('  File "/venv/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 94, in __init__\n'
           '    self.ds_opt_adam = CPUAdamBuilder().load()\n'
           '  File "/venv/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 480, in load\n'
           '    return self.jit_load(verbose)\n')
ENGINE = ('  File "/venv/lib/python3.10/site-packages/deepspeed/runtime/engine.py", line 304, in __init__\n'
          '    self._configure_optimizer(optimizer, model_parameters)\n')
APEX = ('  File "/work/train.py", line 40, in main\n'
        '    optimizer = FusedAdam(model.parameters(), lr=1e-4)\n')


@pytest.mark.parametrize("frames", [TRAINER + ACCELERATE, TRAINER + BUILDER, ENGINE,
                                    "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
                                    + HEADER + APEX])
def test_a_traceback_cut_inside_deepspeeds_op_loading_is_a_weak_build_failure(tmp_path: Path, capsys,
                                                                              frames: str) -> None:
    found = primary_of(capsys, tmp_path, "step 1 loss 0.9\n" + HEADER + frames)
    assert found["cause"] == "deepspeed_build_failure" and found["confidence"] <= 0.4


@pytest.mark.parametrize("text", [
    HEADER + TRAINER,  # cut in the trainer: anything could follow
    HEADER + APEX,  # apex's FusedAdam, no DeepSpeed and no JIT build in sight
    # the excerpt goes on after the cut traceback: its later error is what it shows
    HEADER + ACCELERATE + "[rank0]: Error: something else failed later\n",
])
def test_other_cut_tracebacks_name_no_cause(tmp_path: Path, capsys, text: str) -> None:
    assert primary_of(capsys, tmp_path, "step 1 loss 0.9\n" + text)["cause"] is None


def test_a_traceback_with_its_exception_is_read_by_its_exception(tmp_path: Path, capsys) -> None:
    found = primary_of(capsys, tmp_path, HEADER + TRAINER + ACCELERATE + BUILDER
                       + "RuntimeError: Error building extension 'cpu_adam'\n")
    assert found["cause"] == "deepspeed_build_failure" and found["confidence"] > 0.4


def test_pythons_marks_under_the_last_frame_do_not_hide_the_cut(tmp_path: Path, capsys) -> None:
    marked = ACCELERATE + "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    assert primary_of(capsys, tmp_path, HEADER + TRAINER + marked)["cause"] == "deepspeed_build_failure"
