"""The training setup a plan is for: method, precision, ZeRO stage, offload, layout and batch shape.

One frozen record so the GPU model, the host model, the chooser and the DeepSpeed writer all read the same facts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from envcheck.plan.params import ModelSpec

METHODS = ("full", "freeze", "lora", "qlora")
PRECISIONS = ("bf16", "fp16", "fp32", "pure_bf16")
OFFLOADS = ("none", "optimizer", "all")
ATTENTIONS = ("flash", "sdpa", "eager")


@dataclass(frozen=True)
class Setup:
    method: str = "lora"
    precision: str = "bf16"
    zero: int = 0
    offload: str = "none"
    gpus_per_node: int = 1
    nodes: int = 1
    seq_len: int = 2048
    batch: int = 1
    grad_accum: int = 1
    grad_ckpt: bool = True
    attention: str = "flash"
    lora_rank: int = 8  # LLaMA-Factory's default lora_rank (its FinetuningArguments)
    lora_targets: str = "all"  # LLaMA-Factory's default lora_target
    quant_bits: int = 4
    freeze_layers: int = 2  # LLaMA-Factory's default freeze_trainable_layers (the last two layers)
    fused_loss: bool = False  # fused/chunked cross entropy (Liger kernel, torchtune chunked loss)
    gather_on_save: bool = True  # ZeRO-3 stage3_gather_16bit_weights_on_model_save (LLaMA-Factory's template: true)

    @property
    def world(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def deepspeed(self) -> bool:
        """Stage 0 is plain data parallelism (HF Trainer / DDP): trainable parameters live in fp32 on every GPU."""
        return self.zero > 0

    @property
    def weight_bytes(self) -> int:
        """Bytes of one stored (frozen or 16-bit working copy) weight."""
        return 4 if self.precision == "fp32" else 2

    @property
    def activation_bytes(self) -> int:
        return 4 if self.precision == "fp32" else 2

    def with_choice(self, zero: int, offload: str, gather_on_save: bool = True) -> Setup:
        return replace(self, zero=zero, offload=offload, gather_on_save=gather_on_save)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "method": self.method, "precision": self.precision, "zero": self.zero, "offload": self.offload,
            "gpus_per_node": self.gpus_per_node, "nodes": self.nodes, "seq_len": self.seq_len,
            "micro_batch": self.batch, "grad_accum": self.grad_accum, "grad_ckpt": self.grad_ckpt,
            "attention": self.attention, "fused_loss": self.fused_loss,
        }
        if self.method in ("lora", "qlora"):
            out.update(lora_rank=self.lora_rank, lora_targets=self.lora_targets)
        if self.method == "qlora":
            out["quant_bits"] = self.quant_bits
        if self.method == "freeze":
            out["freeze_layers"] = self.freeze_layers
        if self.zero == 3:
            out["gather_16bit_weights_on_model_save"] = self.gather_on_save
        return out


def trainable_params(model: ModelSpec, setup: Setup) -> int:
    if setup.method == "full":
        return model.params
    if setup.method == "freeze":
        return model.layer_params(setup.freeze_layers)
    return model.lora_params(setup.lora_rank, setup.lora_targets)


def frozen_params(model: ModelSpec, setup: Setup) -> int:
    """Base parameters that get no gradient (LoRA adapters are extra parameters, not part of the base)."""
    if setup.method in ("lora", "qlora"):
        return model.params
    return model.params - trainable_params(model, setup)
