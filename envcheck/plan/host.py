"""Host RAM per node by phase: loading, steady state, checkpoint save, resume.

The OOM killer strikes at phase peaks, not at the steady state: every local rank materialising the checkpoint at
load, rank 0 consolidating 16-bit weights and every rank copying its optimizer partition to the CPU at save, and
`torch.load` of optimizer shards on resume. Each phase is a list of labelled parts so the report can say which one
is too big.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.plan.gpu import frozen_weight_bytes, state_bytes_per_param
from envcheck.plan.params import ModelSpec
from envcheck.plan.setup import Setup, trainable_params

# Resident memory of one training process before any model state: Python, torch, CUDA libraries, tokenizer and
# dataloader. The PEFT README measured 2.96 GB of host RAM for a LoRA run without offload (T0_3B, its
# "High performance on consumer hardware" table), which includes the model load; 3 GB is the per-process floor.
PROCESS_RSS = 3 * 10**9
# Pinned staging buffers on top of offloaded states (DeepSpeed's estimators multiply host needs by an
# `additional_buffer_factor` of 1.5; deepspeed/runtime/zero/stage_1_and_2.py). We add 10 % of the offloaded bytes
# and keep the rest of that factor in the verdict's margin.
PINNED_SHARE = 0.10
# ZeRO-Offload keeps fp32 master weights, momentum, variance (12 bytes) and fp32 gradients (4) per trainable
# parameter in host RAM, partitioned over the ranks (Ren et al., ATC'21, arXiv:2101.06840 §4).
OFFLOAD_BYTES_PER_PARAM = 16
# transformers' PreTrainedModel.save_pretrained writes safetensors shards of max_shard_size="5GB" by default; the
# safetensors writer builds a shard's bytes in RAM next to the CPU copies of its tensors.
SAFETENSORS_SHARD = 5 * 10**9
FP32 = 4
# ZeRO-3 `sub_group_size` (elements), the value the DeepSpeed writer emits (LLaMA-Factory's template: 1e9).
SUB_GROUP_SIZE = 10**9

PHASES = ("load", "steady", "save", "resume")


@dataclass(frozen=True)
class HostPart:
    phase: str
    label: str
    bytes: int


@dataclass(frozen=True)
class HostMemory:
    parts: tuple[HostPart, ...]

    def phase(self, name: str) -> int:
        return sum(part.bytes for part in self.parts if part.phase == name)

    @property
    def total(self) -> int:
        """The largest phase, resume included: a run that cannot be resumed after a crash does not fit."""
        return max(self.phase(name) for name in PHASES)

    @property
    def peak_phase(self) -> str:
        return max(PHASES, key=self.phase)

    def to_dict(self) -> dict[str, int]:
        return {"load_peak": self.phase("load"), "steady": self.phase("steady"),
                "checkpoint_peak": self.phase("save"), "resume_peak": self.phase("resume"), "total": self.total}


def _checkpoint_model_bytes(model: ModelSpec, setup: Setup) -> int:
    """What the model file holds: full weights, or only the adapter for LoRA (PEFT saves adapters only)."""
    if setup.method in ("lora", "qlora"):
        return trainable_params(model, setup) * setup.weight_bytes
    return model.params * setup.weight_bytes


def host_memory(model: ModelSpec, setup: Setup) -> HostMemory:
    n, nodes = setup.gpus_per_node, setup.nodes
    trainable = trainable_params(model, setup)
    _, _, optimizer_b = state_bytes_per_param(setup)
    load_bytes = model.params * setup.weight_bytes
    rss = n * PROCESS_RSS
    parts = [HostPart(phase, f"{n} process(es) × {PROCESS_RSS / 1e9:.0f} GB runtime", rss) for phase in PHASES]

    # load: without ZeRO-3's zero.Init every local rank builds the whole model in host RAM before moving it to its GPU
    if setup.zero == 3:
        parts.append(HostPart("load", "checkpoint read once (zero.Init partitions it while loading)", load_bytes))
    else:
        parts.append(HostPart("load", f"{n} rank(s) each materialise the whole checkpoint", n * load_bytes))

    # steady: offloaded states live in host RAM, partitioned over every rank of every node
    offloaded = 0
    if setup.offload != "none":
        offloaded += OFFLOAD_BYTES_PER_PARAM * trainable // nodes
    if setup.offload == "all":
        frozen = frozen_weight_bytes(model, setup) if setup.method != "qlora" else 0
        offloaded += (frozen + trainable * setup.weight_bytes) // nodes
    if offloaded:
        pinned = int(offloaded * PINNED_SHARE)
        for phase in ("steady", "save", "resume"):
            parts.append(HostPart(phase, "offloaded states (+10 % pinned buffers)", offloaded + pinned))

    # save: torch.save copies GPU tensors to the CPU one storage at a time, so the transient is the largest
    # storage, except where a whole state dict is first built in host RAM
    model_file = _checkpoint_model_bytes(model, setup)
    if setup.zero == 3 and setup.gather_on_save and setup.method in ("full", "freeze"):
        parts.append(HostPart("save", "16-bit weights gathered on rank 0 (stage3_gather_16bit_weights_on_model_save)",
                              model_file))
    elif setup.zero == 3 and setup.method in ("full", "freeze"):
        parts.append(HostPart("save", "no consolidation: ZeRO-3 partitions written from the GPU", 0))
    else:
        parts.append(HostPart("save", "model file shards built in RAM on rank 0 (safetensors, 5 GB shards)",
                              min(model_file, SAFETENSORS_SHARD * 2)))
    if setup.offload == "none":
        if setup.zero == 3:  # ZeRO-3 splits each rank's fp32 state into sub-groups of sub_group_size elements
            per_rank = FP32 * min(trainable // setup.world, SUB_GROUP_SIZE)
            parts.append(HostPart("save", "one fp32 optimizer sub-group per rank copied to CPU", n * per_rank))
        elif setup.deepspeed:  # ZeRO-1/2 keep each rank's fp32 state as one flat tensor per parameter group
            parts.append(HostPart("save", "one flat fp32 optimizer partition per rank copied to CPU",
                                  FP32 * trainable // nodes))
        else:
            parts.append(HostPart("save", "largest optimizer tensor copied to CPU on rank 0",
                                  optimizer_b * min(trainable, model.largest_module)))

    # resume: DeepSpeed torch.load-s each rank's optimizer file into CPU memory; with ZeRO-0/1/2 every rank also
    # loads the whole model-states file (mp_rank_00_model_states.pt) with map_location="cpu"
    if setup.deepspeed:
        parts.append(HostPart("resume", "optimizer partitions torch.load-ed to CPU", optimizer_b * trainable // nodes))
    if setup.zero == 3:
        parts.append(HostPart("resume", "16-bit model partitions", model_file // nodes))
    else:
        parts.append(HostPart("resume", f"{n} rank(s) each load the model file", n * model_file))
    return HostMemory(tuple(parts))
