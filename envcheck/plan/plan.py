"""Judge a setup against the hardware, and with `auto`, choose the cheapest ZeRO stage and offload that fit.

"Cheapest" means least communication and host traffic first: no sharding for adapters, ZeRO-2 before ZeRO-3 for
full fine-tuning (ZeRO-2 moves no more data than plain data parallelism: ZeRO paper §7), GPU-resident states
before CPU offload, and the 16-bit consolidated save before the partitioned one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envcheck.plan.dsconfig import deepspeed_config
from envcheck.plan.gpu import ALLOCATOR_SHARE, LOGITS_BYTES_PER_TOKEN_VOCAB, GpuMemory, gpu_memory
from envcheck.plan.hardware import Hardware
from envcheck.plan.host import PROCESS_RSS, HostMemory, host_memory
from envcheck.plan.params import ModelSpec
from envcheck.plan.setup import OFFLOADS, Setup, trainable_params

# Share of the device a plan may fill: the model above leaves out short-lived spikes (optimizer initialisation,
# NCCL warm-up, cuDNN/cuBLAS algorithm search). A judgement; PyTorch cannot use the last few hundred MiB either.
GPU_MARGIN = 0.92
# Share of host RAM a plan may fill: the OS, page cache of the dataset and other processes need the rest.
HOST_MARGIN = 0.90


@dataclass(frozen=True)
class Candidate:
    setup: Setup
    gpu: GpuMemory
    host: HostMemory
    gpu_fits: bool
    host_fits: bool | None  # None when host RAM is unknown

    @property
    def fits(self) -> bool:
        return self.gpu_fits and self.host_fits is not False

    def summary(self) -> dict[str, Any]:
        return {"zero": self.setup.zero, "offload": self.setup.offload, "gather_on_save": self.setup.gather_on_save,
                "gpu_total": self.gpu.total, "host_total": self.host.total, "fits": self.fits}


@dataclass(frozen=True)
class Plan:
    model: ModelSpec
    hardware: Hardware
    chosen: Candidate
    tried: tuple[Candidate, ...]
    auto: bool
    trainable: int
    assumptions: tuple[str, ...]
    advice: tuple[str, ...]
    choices: tuple[str, ...] = ()  # what was chosen for the user and why (precision, attention, YAML, DeepSpeed)
    notices: tuple[str, ...] = ()  # warnings of the setup (a training file's value the GPU cannot run)

    @property
    def fits(self) -> bool:
        return self.chosen.fits

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.hardware.warnings + self.notices

    def deepspeed_config(self) -> dict[str, Any]:
        return deepspeed_config(self.model, self.chosen.setup)

    def to_dict(self) -> dict[str, Any]:
        """CONTRACT.md "Plan JSON"."""
        setup = self.chosen.setup
        return {
            "model": {"params": self.model.params, "source": self.model.source, "family": self.model.family,
                      "active_params": self.model.active_params, "trainable_params": self.trainable},
            "fits": self.fits,
            "config": setup.to_dict(),
            "gpu_bytes_per_device": self.chosen.gpu.to_dict(),
            "host_bytes_per_node": self.chosen.host.to_dict(),
            "hardware": self.hardware.to_dict(),
            "verdict": {"gpu_fits": self.chosen.gpu_fits, "host_fits": self.chosen.host_fits,
                        "gpu_limit_bytes": int(self.hardware.gpu_bytes * GPU_MARGIN),
                        "host_limit_bytes": (int(self.hardware.host_bytes * HOST_MARGIN)
                                             if self.hardware.host_bytes else None)},
            "recommendation": {"zero": setup.zero, "offload": setup.offload, "auto": self.auto,
                               "tried": [c.summary() for c in self.tried], "advice": list(self.advice)},
            "deepspeed_config": self.deepspeed_config(),
            "choices": list(self.choices),
            "warnings": list(self.warnings),
            "assumptions": list(self.assumptions),
        }


def evaluate(model: ModelSpec, setup: Setup, hardware: Hardware) -> Candidate:
    gpu, host = gpu_memory(model, setup), host_memory(model, setup)
    host_fits = None if hardware.host_bytes is None else host.total <= hardware.host_bytes * HOST_MARGIN
    return Candidate(setup, gpu, host, gpu.total <= hardware.gpu_bytes * GPU_MARGIN, host_fits)


def candidates(setup: Setup, zero: int | None, offload: str | None) -> list[Setup]:
    """Setups to try in order of cost; `None` means auto for that choice."""
    adapters = setup.method in ("lora", "qlora")
    order = ([(0, "none"), (3, "none"), (3, "optimizer"), (3, "all")] if adapters else
             [(2, "none"), (3, "none"), (2, "optimizer"), (3, "optimizer"), (3, "all")])
    if zero is not None:
        order = [(zero, o) for o in OFFLOADS if valid(zero, o)]
    if offload is not None:
        order = [(z, o) for z, o in order if o == offload]
    # ZeRO-3 always gathers 16-bit weights on save: without it HF Trainer saves no usable model file
    return [setup.with_choice(z, o, True) for z, o in order]


def valid(zero: int, offload: str) -> bool:
    """Optimizer offload needs ZeRO (1-3); parameter offload needs ZeRO-3."""
    return offload == "none" or (offload == "optimizer" and zero > 0) or (offload == "all" and zero == 3)


def make_plan(model: ModelSpec, setup: Setup, hardware: Hardware, zero: int | None, offload: str | None,
              choices: tuple[str, ...] = (), notices: tuple[str, ...] = ()) -> Plan:
    tried: list[Candidate] = []
    chosen = None
    for option in candidates(setup, zero, offload):
        result = evaluate(model, option, hardware)
        tried.append(result)
        if result.fits:
            chosen = result
            break
    if chosen is None:  # nothing fits: report the one that misses by the least
        def shortfall(c: Candidate) -> float:
            gpu = c.gpu.total / (hardware.gpu_bytes * GPU_MARGIN)
            host = c.host.total / (hardware.host_bytes * HOST_MARGIN) if hardware.host_bytes else 0.0
            return max(gpu, host)
        chosen = min(tried, key=shortfall)
    auto = zero is None or offload is None
    return Plan(model, hardware, chosen, tuple(tried), auto, trainable_params(model, chosen.setup),
                assumptions(model, chosen.setup), advice(chosen, hardware), choices, notices)


def advice(chosen: Candidate, hardware: Hardware) -> tuple[str, ...]:
    out = []
    setup, host = chosen.setup, chosen.host
    if not chosen.gpu_fits:
        out.append("GPU: shorten --seq-len or --batch, turn on --grad-ckpt, use LoRA/QLoRA, more GPUs, or offload")
    if chosen.host_fits is False:
        peak = host.peak_phase
        if peak == "load" and setup.zero == 3:
            out.append("host peak at load: the checkpoint is read into host RAM once; use fewer ranks per node or "
                       "add swap")
        elif peak == "load":
            out.append("host peak at load: every rank builds the model; use ZeRO-3 (zero.Init) or fewer ranks per node")
        if peak == "save":
            out.append("host peak at checkpoint save: save adapters only, use ZeRO-3 (one optimizer sub-group at a "
                       "time), fewer ranks per node, or add swap")
        if peak == "steady":
            out.append("host peak in training: offloaded optimizer states need the RAM; offload less, or use NVMe")
        if peak == "resume":
            out.append(f"host peak at resume: {host.phase('resume') / 2**30:.1f} GiB per node (optimizer shards and "
                       "model files are torch.load-ed to CPU): add swap, or resume on fewer ranks per node")
    if hardware.host_bytes is None:
        out.append("host RAM unknown: give --host-mem for a host verdict")
    if setup.zero == 3 and setup.method == "qlora":
        out.append("ZeRO-3 does not partition bitsandbytes-quantized weights: every rank holds the whole 4/8-bit base")
    return tuple(out)


def assumptions(model: ModelSpec, setup: Setup) -> tuple[str, ...]:
    out = [
        "predicts the per-GPU peak as nvidia-smi shows it (allocated + "
        f"{ALLOCATOR_SHARE:.0%} allocator waste + CUDA context), per micro-batch padded to --seq-len",
        "AdamW; DeepSpeed keeps fp32 master weights and moments (12 B/param) partitioned by stage (ZeRO paper); "
        "without DeepSpeed trainable parameters are fp32 (4+4+8 B/param)",
        (f"logits and loss: {LOGITS_BYTES_PER_TOKEN_VOCAB} B per token per vocabulary entry (no fused/chunked cross "
         "entropy; --fused-loss for Liger)") if not setup.fused_loss else
        "logits and loss: fused/chunked cross entropy holds about 1 B per token per vocabulary entry",
        "activations: no dropout; flash/SDPA attention stores no s² scores; gradient checkpointing keeps each "
        "layer's input plus one recomputed layer",
        f"host: {PROCESS_RSS / 1e9:.0f} GB per process; without ZeRO-3 every local rank materialises the full "
        "checkpoint at load; save copies GPU optimizer partitions to CPU",
    ]
    if setup.method in ("lora", "qlora"):
        out.append(f"LoRA rank {setup.lora_rank} on '{setup.lora_targets}' linear layers, adapters trained in fp32, "
                   "only the adapter is saved")
    if setup.method == "qlora":
        out.append(f"QLoRA: decoder linear layers in {setup.quant_bits}-bit bitsandbytes "
                   "(NF4 + double quantization: 4.127 bits), embeddings, lm_head and norms 16-bit, not sharded by ZeRO")
    if setup.method == "freeze":
        out.append(f"freeze: the last {setup.freeze_layers} decoder layers are trained")
    if model.source.startswith("count"):
        out.append(f"bare parameter count: Llama-2-like shape (hidden {model.shape.hidden}, {model.shape.layers} layers, "
                   f"vocabulary {model.shape.vocab}); give a config.json for a real shape")
    if model.active_params != model.params:
        out.append("mixture of experts: all experts are stored and trained; activations use the top-k experts")
    return tuple(out)
