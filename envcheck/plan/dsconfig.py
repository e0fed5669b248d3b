"""A DeepSpeed JSON config for a chosen setup, with every memory knob explicit.

The layout follows LLaMA-Factory's examples/deepspeed/ds_z{0,2,3}[_offload]_config.json templates, but without
"auto" values: those are resolved by transformers' HfDeepSpeedConfig, and DeepSpeed's own parser (DeepSpeedConfig)
rejects them. Bucket sizes are the values transformers puts in place of "auto" (reduce_bucket_size = h²,
stage3_prefetch_bucket_size = 0.9·h², stage3_param_persistence_threshold = 10·h; transformers
integrations/deepspeed.py), so the memory model and the file agree.
"""

from __future__ import annotations

from typing import Any

from envcheck.plan.host import SUB_GROUP_SIZE
from envcheck.plan.params import ModelSpec
from envcheck.plan.setup import Setup


def deepspeed_config(model: ModelSpec, setup: Setup) -> dict[str, Any]:
    h = model.shape.hidden
    config: dict[str, Any] = {
        "train_batch_size": setup.batch * setup.grad_accum * setup.world,
        "train_micro_batch_size_per_gpu": setup.batch,
        "gradient_accumulation_steps": setup.grad_accum,
        "gradient_clipping": 1.0,
        "zero_allow_untested_optimizer": True,
    }
    if setup.precision in ("bf16", "pure_bf16"):
        config["bf16"] = {"enabled": True}
    elif setup.precision == "fp16":
        config["fp16"] = {"enabled": True, "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
                          "hysteresis": 2, "min_loss_scale": 1}
    zero: dict[str, Any] = {"stage": setup.zero}
    if setup.zero in (1, 2):
        zero.update(allgather_partitions=True, allgather_bucket_size=h * h, overlap_comm=False,
                    reduce_scatter=True, reduce_bucket_size=h * h, contiguous_gradients=True,
                    round_robin_gradients=True)
    elif setup.zero == 3:
        zero.update(overlap_comm=False, contiguous_gradients=True, sub_group_size=SUB_GROUP_SIZE,
                    reduce_bucket_size=h * h, stage3_prefetch_bucket_size=int(0.9 * h * h),
                    stage3_param_persistence_threshold=10 * h, stage3_max_live_parameters=int(1e9),
                    stage3_max_reuse_distance=int(1e9),
                    stage3_gather_16bit_weights_on_model_save=setup.gather_on_save)
    if setup.offload in ("optimizer", "all") and setup.zero > 0:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if setup.offload == "all" and setup.zero == 3:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    config["zero_optimization"] = zero
    return config
