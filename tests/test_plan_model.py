"""Behaviour of the memory model, the chooser and the DeepSpeed writer (no hardware needed)."""

from __future__ import annotations

import json
import os

import pytest

from envcheck.plan.dsconfig import deepspeed_config
from envcheck.plan.gpu import CUDA_CONTEXT, LOGITS_BYTES_PER_TOKEN_VOCAB, gpu_memory
from envcheck.plan.hardware import Hardware
from envcheck.plan.host import host_memory
from envcheck.plan.params import load_config
from envcheck.plan.plan import make_plan
from envcheck.plan.setup import Setup

ASSETS = os.path.join(os.path.dirname(__file__), "assets", "plan")
GIB = 2**30
LLAMA_13B = load_config(os.path.join(ASSETS, "Llama-2-13b-hf.config.json"))
LLAMA_8B = load_config(os.path.join(ASSETS, "Llama-3.1-8B.config.json"))


def test_zero_stages_partition_as_the_zero_paper_says():
    p, n = LLAMA_13B.params, 8
    z2 = gpu_memory(LLAMA_13B, Setup(method="full", zero=2, gpus_per_node=n))
    assert z2.weights == 2 * p and z2.gradients == 2 * p // n and z2.optimizer == 12 * p // n
    z1 = gpu_memory(LLAMA_13B, Setup(method="full", zero=1, gpus_per_node=n))
    assert z1.gradients == 2 * p and z1.optimizer == 12 * p // n
    z3 = gpu_memory(LLAMA_13B, Setup(method="full", zero=3, gpus_per_node=n))
    assert z3.weights == 2 * p // n
    ddp = gpu_memory(LLAMA_13B, Setup(method="full", zero=0, gpus_per_node=n))
    assert ddp.weights + ddp.gradients + ddp.optimizer == 16 * p
    assert z3.total < z2.total < z1.total < ddp.total


def test_offload_moves_states_to_the_host():
    base = Setup(method="full", zero=3, gpus_per_node=8)
    on_gpu = gpu_memory(LLAMA_13B, base)
    opt = gpu_memory(LLAMA_13B, base.with_choice(3, "optimizer"))
    every = gpu_memory(LLAMA_13B, base.with_choice(3, "all"))
    assert opt.optimizer == 0 and every.weights == 0 and every.total < opt.total < on_gpu.total
    steady = [host_memory(LLAMA_13B, base.with_choice(3, o)).phase("steady") for o in ("none", "optimizer", "all")]
    assert steady[0] < steady[1] < steady[2]
    assert steady[1] - steady[0] >= 16 * LLAMA_13B.params  # ZeRO-Offload: 16 B per trainable parameter per node


def test_activation_switches():
    gc = gpu_memory(LLAMA_8B, Setup(seq_len=4096)).activations
    no_gc = gpu_memory(LLAMA_8B, Setup(seq_len=4096, grad_ckpt=False)).activations
    eager = gpu_memory(LLAMA_8B, Setup(seq_len=4096, grad_ckpt=False, attention="eager")).activations
    assert gc < no_gc < eager
    double = gpu_memory(LLAMA_8B, Setup(seq_len=8192)).activations
    assert double == pytest.approx(2 * gc, rel=0.01)  # linear in sequence length with flash attention
    logits = gpu_memory(LLAMA_8B, Setup(seq_len=4096)).logits
    assert logits == LOGITS_BYTES_PER_TOKEN_VOCAB * 4096 * 128256


def test_qlora_stores_about_half_a_byte_per_linear_weight():
    lora = gpu_memory(LLAMA_8B, Setup(method="lora"))
    qlora = gpu_memory(LLAMA_8B, Setup(method="qlora"))
    expected = LLAMA_8B.linear_weight_params * 0.516 + LLAMA_8B.embedding_params * 2
    assert qlora.weights - (lora.weights - 2 * LLAMA_8B.params) == pytest.approx(expected, rel=0.01)
    eight = gpu_memory(LLAMA_8B, Setup(method="qlora", quant_bits=8))
    assert qlora.weights < eight.weights < lora.weights


def test_host_phases():
    two, eight = (host_memory(LLAMA_13B, Setup(method="full", zero=2, gpus_per_node=n)) for n in (2, 8))
    assert eight.phase("load") > 3 * two.phase("load")  # every rank materialises the checkpoint
    z3 = host_memory(LLAMA_13B, Setup(method="full", zero=3, gpus_per_node=8))
    assert z3.phase("load") < eight.phase("load") / 3
    gathered = z3.phase("save")
    partitioned = host_memory(LLAMA_13B, Setup(method="full", zero=3, gpus_per_node=8, gather_on_save=False))
    assert gathered - partitioned.phase("save") == 2 * LLAMA_13B.params
    # the verdict is the largest phase, resume included (DeepSpeed torch.load-s optimizer partitions to the CPU)
    assert z3.to_dict()["total"] == max(z3.phase(p) for p in ("load", "steady", "save", "resume"))
    assert z3.peak_phase == "resume"


def _hw(gpu_gib, host_gib):
    return Hardware(gpu_gib * GIB, "test", None if host_gib is None else host_gib * GIB, "test")


def test_auto_picks_the_cheapest_setup_that_fits():
    lora = make_plan(LLAMA_8B, Setup(method="lora"), _hw(80, 256), None, None)
    assert lora.fits and (lora.chosen.setup.zero, lora.chosen.setup.offload) == (0, "none")
    full = Setup(method="full", gpus_per_node=8)
    roomy = make_plan(LLAMA_13B, full, _hw(80, 1024), None, None)
    assert roomy.fits and roomy.chosen.setup.zero == 2
    # ZeRO-2's resume (each of 8 ranks loads the 26 GB model file, plus 12 B/param of optimizer partitions) does not
    # fit 256 GiB of host RAM; ZeRO-3's (16-bit partitions only) does
    tight = make_plan(LLAMA_13B, full, _hw(80, 256), None, None)
    assert tight.fits and tight.chosen.setup.zero == 3
    assert [c.setup.zero for c in tight.tried][:1] == [2]
    small_gpu = make_plan(LLAMA_13B, full, _hw(24, 512), None, None)
    assert small_gpu.chosen.setup.offload != "none"
    hopeless = make_plan(LLAMA_13B, full, _hw(8, 16), None, None)
    assert not hopeless.fits and hopeless.advice


def test_fixed_choices_are_respected():
    plan = make_plan(LLAMA_13B, Setup(method="full", gpus_per_node=8), _hw(80, 1024), 2, "none")
    assert (plan.chosen.setup.zero, plan.chosen.setup.offload) == (2, "none") and not plan.auto
    offload_auto = make_plan(LLAMA_13B, Setup(method="full", gpus_per_node=2), _hw(40, 1024), 3, None)
    assert offload_auto.chosen.setup.zero == 3


def test_unknown_host_gives_a_gpu_only_verdict():
    plan = make_plan(LLAMA_8B, Setup(), _hw(80, None), None, None)
    assert plan.fits and plan.chosen.host_fits is None
    assert plan.to_dict()["verdict"]["host_fits"] is None


def test_plan_json_has_the_contract_keys():
    data = make_plan(LLAMA_8B, Setup(), _hw(80, 64), None, None).to_dict()
    assert {"model", "fits", "config", "gpu_bytes_per_device", "host_bytes_per_node", "recommendation",
            "deepspeed_config", "assumptions"} <= set(data)
    assert {"params", "source"} <= set(data["model"])
    assert {"weights", "gradients", "optimizer", "activations", "overhead", "total"} <= set(data["gpu_bytes_per_device"])
    assert {"load_peak", "steady", "checkpoint_peak", "total"} <= set(data["host_bytes_per_node"])
    gpu = data["gpu_bytes_per_device"]
    assert gpu["total"] == sum(gpu[k] for k in ("weights", "gradients", "optimizer", "activations", "overhead"))
    assert gpu["overhead"] >= CUDA_CONTEXT
    json.dumps(data)


@pytest.mark.parametrize("zero, offload", [(0, "none"), (1, "optimizer"), (2, "none"), (2, "optimizer"),
                                           (3, "none"), (3, "optimizer"), (3, "all")])
def test_deepspeed_config_leaves_trainer_fields_auto(zero, offload):
    setup = Setup(method="full", zero=zero, offload=offload, gpus_per_node=4, batch=2, grad_accum=8)
    config = deepspeed_config(LLAMA_8B, setup)
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                "gradient_clipping"):
        assert config[key] == "auto"
    assert config["bf16"] == {"enabled": "auto"} and config["fp16"]["enabled"] == "auto"
    assert config["zero_optimization"]["stage"] == zero
    assert ("offload_optimizer" in config["zero_optimization"]) == (offload != "none")
    assert ("offload_param" in config["zero_optimization"]) == (offload == "all")
    if offload != "none":
        assert set(config["optimizer"]["params"].values()) == {"auto"}
    if zero == 3:
        assert config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True


def test_motivating_case_zero2_dies_at_save_where_zero3_does_not_and_resume_is_judged():
    """13B full fine-tune, 4 x 80 GB, 64 GiB host: ZeRO-2 copies each rank's whole flat fp32 partition to the CPU
    when saving; ZeRO-3 copies one sub-group (sub_group_size elements) at a time. Resuming either needs every
    rank's optimizer partition in host RAM at once, so 64 GiB does not fit, and the verdict says so."""
    setup = Setup(method="full", gpus_per_node=4)
    zero2 = host_memory(LLAMA_13B, setup.with_choice(2, "none"))
    zero3 = host_memory(LLAMA_13B, setup.with_choice(3, "none"))
    assert zero2.phase("save") > 64 * GIB > 0.9 * 64 * GIB > zero3.phase("save")
    plan = make_plan(LLAMA_13B, setup, _hw(80, 64), None, None)
    assert not plan.fits and plan.chosen.host.peak_phase == "resume"
    assert any("resume" in line for line in plan.advice)
    roomy = make_plan(LLAMA_13B, setup, _hw(80, 256), None, None)
    assert roomy.fits and roomy.chosen.setup.zero == 3
    assert roomy.deepspeed_config()["zero_optimization"]["sub_group_size"] == 10**9
