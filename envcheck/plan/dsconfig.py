"""A DeepSpeed JSON config for a chosen setup that HF Trainer (and so LLaMA-Factory) accepts.

Every field Trainer fills from its TrainingArguments is "auto" (transformers integrations/deepspeed.py,
HfTrainerDeepSpeedConfig.trainer_config_process: train_batch_size, train_micro_batch_size_per_gpu,
gradient_accumulation_steps, gradient_clipping, fp16.enabled, bf16.enabled, and the optimizer's lr, betas, eps and
weight_decay): a hard-coded value that differs from the command line stops Trainer with "Please correct the
following DeepSpeed config values that mismatch TrainingArguments values". Both fp16 and bf16 sections are written,
"auto", as LLaMA-Factory's examples/deepspeed/ds_z*_config.json templates do, so the run's own --bf16/--fp16 decides.
The memory knobs stay explicit, at the values transformers would put in place of "auto" (reduce_bucket_size = h²,
stage3_prefetch_bucket_size = 0.9·h², stage3_param_persistence_threshold = 10·h), so the memory model and the
file agree. With optimizer offload the file names DeepSpeed's AdamW (its CPU Adam runs the offloaded step;
DeepSpeed refuses a client torch optimizer with ZeRO-Offload unless zero_force_ds_cpu_optimizer is false).
ZeRO-3 always sets stage3_gather_16bit_weights_on_model_save: without it Trainer's save_model writes no usable
weights.
"""

from __future__ import annotations

from typing import Any

from envcheck.plan.host import SUB_GROUP_SIZE
from envcheck.plan.params import ModelSpec
from envcheck.plan.setup import Setup

AUTO = "auto"


def deepspeed_config(model: ModelSpec, setup: Setup) -> dict[str, Any]:
    h = model.shape.hidden
    config: dict[str, Any] = {
        "train_batch_size": AUTO,
        "train_micro_batch_size_per_gpu": AUTO,
        "gradient_accumulation_steps": AUTO,
        "gradient_clipping": AUTO,
        "zero_allow_untested_optimizer": True,
        "fp16": {"enabled": AUTO, "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
                 "hysteresis": 2, "min_loss_scale": 1},
        "bf16": {"enabled": AUTO},
    }
    zero: dict[str, Any] = {"stage": setup.zero}
    if setup.zero in (1, 2):
        zero.update(allgather_partitions=True, allgather_bucket_size=h * h, overlap_comm=False,
                    reduce_scatter=True, reduce_bucket_size=h * h, contiguous_gradients=True,
                    round_robin_gradients=True)
    elif setup.zero == 3:
        zero.update(overlap_comm=False, contiguous_gradients=True, sub_group_size=SUB_GROUP_SIZE,
                    reduce_bucket_size=h * h, stage3_prefetch_bucket_size=int(0.9 * h * h),
                    stage3_param_persistence_threshold=10 * h, stage3_max_live_parameters=int(1e9),
                    stage3_max_reuse_distance=int(1e9), stage3_gather_16bit_weights_on_model_save=True)
    if setup.offload in ("optimizer", "all") and setup.zero > 0:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        config["optimizer"] = {"type": "AdamW", "params": {"lr": AUTO, "betas": AUTO, "eps": AUTO,
                                                            "weight_decay": AUTO}}
    if setup.offload == "all" and setup.zero == 3:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    config["zero_optimization"] = zero
    return config
