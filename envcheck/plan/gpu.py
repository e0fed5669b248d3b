"""Per-GPU peak memory by component: weights, gradients, optimizer states, activations, overhead.

The target is what `nvidia-smi` shows for the training process (reserved memory plus the CUDA context), because
that is what runs out. Model states follow the ZeRO paper's accounting (Rajbhandari et al., SC20,
arXiv:1910.02054 §3.1 and §5: 2Ψ 16-bit weights, 2Ψ 16-bit gradients, KΨ = 12Ψ fp32 master weights, momentum and
variance, each partitioned over the data-parallel ranks by stage). Activations are derived per saved tensor of a
Llama-style decoder layer; see `layer_activation_bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.plan.params import ModelSpec, lora_targets_match
from envcheck.plan.setup import Setup, frozen_params, trainable_params

GIB = 1024**3

# CUDA context and kernel images per process, with the libraries' workspaces: PyTorch PR #86509 measured 287 MB
# with CUDA_MODULE_LOADING=LAZY and 667 MB eagerly loaded (lazy loading is the default only from CUDA 12.2: CUDA C++
# Programming Guide, "Lazy Loading"); cuBLAS keeps a workspace per stream and handle, flash-attn and bitsandbytes
# load their own kernels. 1 GiB: calibrated on the short-sequence rows of tests/plan_calibration.py, where this
# term is a large share (Qwen-1.8B LoRA at 256 tokens: 6.7 GB measured over 3.7 GB of weights).
CUDA_CONTEXT = GIB
# NCCL communicators when more than one rank: NCCL_BUFFSIZE defaults to 4 MiB per channel and peer (NCCL
# environment-variable documentation); a few dozen channel/peer pairs plus the communicator state, about 0.4 GiB.
NCCL_BUFFERS = 400 * 1024**2
# Caching-allocator waste (block rounding, fragmentation from varying sequence lengths) as a share of what is
# allocated: 8 %, within the 5-15 % the reference gives (memory-model.md §5.2), calibrated on
# tests/plan_calibration.py.
ALLOCATOR_SHARE = 0.08
# Logits and the loss per token and vocabulary entry: bf16 logits (2) + their fp32 up-cast (4) + the fp32
# log-softmax cross entropy keeps for backward (4) + its fp32 gradient (4) + the bf16 gradient of the logits (2).
# transformers up to 4.45 up-cast in the model's forward and returned the fp32 logits (the era of the calibration
# rows; ms-swift and Unsloth's HF baseline grow 2.6-3.6 MB per token with 128k-152k vocabularies); later versions
# up-cast inside the loss (about 12). 16 is the conservative middle, checked in tests/test_plan_calibration.py.
LOGITS_BYTES_PER_TOKEN_VOCAB = 16
# A fused or chunked cross entropy (Liger's fused linear cross entropy, LLaMA-Factory enable_liger_kernel;
# torchtune's chunked losses) never holds the whole b·s·V logits: only a chunk of them (Liger sizes chunks as
# b·s / ceil(V/h), about 1/32 of the tokens for a 128k vocabulary and h = 4096) with its fp32 gradient.
FUSED_LOSS_BYTES_PER_TOKEN_VOCAB = 1
# QLoRA storage per quantized weight (Dettmers et al., arXiv:2305.14314 §3): 4-bit NF4 with one 8-bit absmax per
# 64-weight block and one fp32 constant per 256 blocks (double quantization) = 4 + 8/64 + 32/(64·256) bits.
NF4_BITS = 4 + 8 / 64 + 32 / (64 * 256)
# LLM.int8 (Dettmers et al., arXiv:2208.07339): one byte per weight plus an fp32 scale per output row.
INT8_ROW_SCALE_BYTES = 4


@dataclass(frozen=True)
class GpuMemory:
    weights: int
    gradients: int
    optimizer: int
    activations: int
    logits: int  # part of activations, reported separately because big vocabularies make it the largest term
    overhead: int
    total: int

    def to_dict(self) -> dict[str, int]:
        return {"weights": self.weights, "gradients": self.gradients, "optimizer": self.optimizer,
                "activations": self.activations, "overhead": self.overhead, "total": self.total,
                "activations_logits": self.logits}


def quantized_bytes(model: ModelSpec, bits: int) -> int:
    """Bytes of the decoder's linear weights after bitsandbytes quantization (embeddings and lm_head stay 16-bit)."""
    if bits == 4:
        return int(model.linear_weight_params * NF4_BITS / 8)
    return sum(lin.weight_params + lin.d_out * lin.copies * lin.layers * INT8_ROW_SCALE_BYTES for lin in model.linears)


def frozen_weight_bytes(model: ModelSpec, setup: Setup) -> int:
    if setup.method == "qlora":
        rest = model.params - model.linear_weight_params
        return quantized_bytes(model, setup.quant_bits) + rest * setup.weight_bytes
    return frozen_params(model, setup) * setup.weight_bytes


def state_bytes_per_param(setup: Setup) -> tuple[int, int, int]:
    """(weight, gradient, optimizer) bytes per trainable parameter, before partitioning.

    Without DeepSpeed, HF Trainer / LLaMA-Factory keep trainable parameters in fp32 (AMP), so AdamW holds two fp32
    moments. With DeepSpeed, the module holds 16-bit weights and gradients and the optimizer an fp32 master copy plus
    the moments (the ZeRO paper's K = 12). `pure_bf16` keeps everything in bf16 (LLaMA-Factory's pure_bf16).
    """
    if setup.precision == "fp32":
        return 4, 4, 8
    if setup.precision == "pure_bf16" and not setup.deepspeed:
        return 2, 2, 4
    if not setup.deepspeed:
        return 4, 4, 8
    return 2, 2, 12


def layer_activation_bytes(model: ModelSpec, setup: Setup) -> int:
    """Activations one decoder layer keeps for backward, per micro-batch (a derivation, not a measurement).

    Per token, with 16-bit activations, no dropout, and flash/SDPA attention (no s² score matrix): each RMSNorm keeps
    its fp32 up-cast input (4h) and its 16-bit output (2h); q, k, v projections keep their outputs; rotary embedding
    keeps rotated q and k; attention keeps its output; the gated MLP keeps gate output, activation output, up output
    and their product (4 × 2i). Eager attention adds the fp32 softmax and its 16-bit copy (6 bytes per score).
    LoRA adds the input of each adapted module (PEFT casts it to the adapter's dtype).
    """
    shape, s, b = model.shape, setup.seq_len, setup.batch
    scale = setup.activation_bytes / 2
    q_width, kv_width = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    norms = 4 if model.family in ("gemma2", "gemma3") else 2
    per_token = norms * 6 * shape.hidden + 6 * q_width + 6 * kv_width + 8 * shape.mlp_width
    if setup.method in ("lora", "qlora"):
        adapted = sum(lin.d_in * lin.active * lin.layers for lin in model.linears
                      if lora_targets_match(lin.name, setup.lora_targets))
        per_token += 2 * adapted // max(shape.layers, 1)  # averaged over layers (MoE models mix dense layers)
    total = per_token * s * b * scale
    if setup.attention == "eager":
        total += shape.heads * s * s * b * (6 if setup.precision != "fp32" else 8)
    return int(total)


def activation_bytes(model: ModelSpec, setup: Setup) -> tuple[int, int]:
    """(all activations including logits, the logits part). Gradient checkpointing keeps each layer's input."""
    shape, tokens = model.shape, setup.seq_len * setup.batch
    layer = layer_activation_bytes(model, setup)
    if setup.grad_ckpt:
        layers = shape.layers * tokens * shape.hidden * setup.activation_bytes + layer
    else:
        layers = shape.layers * layer
    per_entry = FUSED_LOSS_BYTES_PER_TOKEN_VOCAB if setup.fused_loss else LOGITS_BYTES_PER_TOKEN_VOCAB
    logits = per_entry * tokens * shape.vocab
    return layers + logits, logits


def zero3_working_set(model: ModelSpec, setup: Setup) -> int:
    """Parameters ZeRO-3 gathers at once: the largest module or one layer, plus the prefetch bucket (0.9·h²)."""
    if setup.zero != 3:
        return 0
    layer = model.decoder_layer_params() if model.shape.layers else 0
    prefetch = int(0.9 * model.shape.hidden ** 2)
    return (max(model.largest_module, layer) + prefetch) * setup.weight_bytes


def bucket_bytes(model: ModelSpec, setup: Setup) -> int:
    """ZeRO-1/2 reduce and all-gather buckets of h² elements each (the sizes the DeepSpeed writer emits)."""
    if setup.zero not in (1, 2):
        return 0
    return 2 * model.shape.hidden ** 2 * setup.weight_bytes


def gpu_memory(model: ModelSpec, setup: Setup) -> GpuMemory:
    n = setup.world
    trainable = trainable_params(model, setup)
    w_b, g_b, o_b = state_bytes_per_param(setup)
    frozen = frozen_weight_bytes(model, setup)
    shard_frozen = setup.zero == 3 and setup.method != "qlora"  # ZeRO-3 does not partition bitsandbytes 4/8-bit
    if setup.zero == 3 and setup.offload == "all":
        weights = 0 if shard_frozen else frozen
    else:
        weights = (frozen // n if shard_frozen else frozen) + trainable * w_b // (n if setup.zero == 3 else 1)
    if setup.offload == "all":
        gradients = 0
    elif setup.zero >= 2:
        gradients = trainable * g_b // n
    else:
        gradients = trainable * g_b
    if setup.offload != "none":
        optimizer = 0
    elif setup.zero >= 1:
        optimizer = trainable * o_b // n
    else:
        optimizer = trainable * o_b
    activations, logits = activation_bytes(model, setup)
    allocated = weights + gradients + optimizer + activations + zero3_working_set(model, setup) + bucket_bytes(model, setup)
    overhead = (allocated - weights - gradients - optimizer - activations) + int(allocated * ALLOCATOR_SHARE) \
        + CUDA_CONTEXT + (NCCL_BUFFERS if n > 1 else 0)
    total = weights + gradients + optimizer + activations + overhead
    return GpuMemory(weights, gradients, optimizer, activations, logits, overhead, total)
