"""Parameter counts from a Hugging Face config.json, or from a bare count such as `7B`.

The planner needs more than one number: which parameters are linear weights (QLoRA quantizes only those), which
linear modules LoRA can adapt, how many parameters a token really uses in a mixture of experts, the largest single
module (what ZeRO-3 gathers at once) and the shape that sizes activations. So a config becomes a list of `Linear`
modules plus the small tensors around them, and every count is derived from that one list.

The module layouts follow the transformers modeling files of each family (modeling_llama, modeling_qwen2,
modeling_qwen3, modeling_gemma2, modeling_mixtral, modeling_qwen2_moe, modeling_qwen3_moe; DeepSeek-V2's own
modeling_deepseek.py on its model repository).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from envcheck.errors import UsageError

# Families whose config class defaults `tie_word_embeddings` to True (GemmaConfig, Gemma2Config); the others
# (LlamaConfig, MistralConfig, Qwen2Config, ...) default to False.
_TIED_BY_DEFAULT = ("gemma",)
# Families with four RMSNorms per layer (input, post-attention, pre- and post-feed-forward: modeling_gemma2.py).
_FOUR_NORMS = ("gemma2", "gemma3")
# Families with biases on q, k and v (modeling_qwen2.py, modeling_qwen2_moe.py: `bias=True` on q/k/v_proj).
_QKV_BIAS = ("qwen2", "qwen2_moe")
# Families with per-head RMSNorm on q and k (modeling_qwen3.py, modeling_qwen3_moe.py: q_norm, k_norm).
_QK_NORM = ("qwen3", "qwen3_moe")

# A bare count borrows the layer shape of the nearest Llama-2 / Code Llama size (Touvron et al. 2023,
# arXiv:2307.09288 Table; Code Llama 34B config): (billions, hidden, intermediate, layers, heads, kv heads).
_BARE_SHAPES = (
    (7.0, 4096, 11008, 32, 32, 32),
    (13.0, 5120, 13824, 40, 40, 40),
    (34.0, 8192, 22016, 48, 64, 8),
    (70.0, 8192, 28672, 80, 64, 8),
)
_BARE_VOCAB = 32000  # Llama-2's vocabulary (its config.json)

LORA_TARGET_GROUPS = {
    "all": None,  # every linear layer inside the decoder (LLaMA-Factory's default `lora_target: all`)
    "attn": ("q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"),
    "qv": ("q_proj", "v_proj"),  # PEFT's default targets for Llama-style models
}


@dataclass(frozen=True)
class Linear:
    """One kind of nn.Linear inside a decoder layer: `copies` per layer (experts), `active` of them used per token."""

    name: str
    d_in: int
    d_out: int
    layers: int
    copies: int = 1
    active: int = 1
    bias: bool = False

    @property
    def weight_params(self) -> int:
        return self.d_in * self.d_out * self.copies * self.layers

    @property
    def params(self) -> int:
        return self.weight_params + (self.d_out * self.copies * self.layers if self.bias else 0)


@dataclass(frozen=True)
class Shape:
    """What activations scale with. `mlp_width` is the intermediate width a token passes through (top-k experts)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    mlp_width: int
    vocab: int


@dataclass(frozen=True)
class ModelSpec:
    params: int
    active_params: int
    embedding_params: int  # input embeddings plus an untied lm_head: kept in 16-bit by QLoRA
    linears: tuple[Linear, ...]
    largest_module: int  # parameters of the largest single module (what ZeRO-3 gathers at once)
    shape: Shape
    source: str
    family: str

    @property
    def linear_weight_params(self) -> int:
        return sum(linear.weight_params for linear in self.linears)

    def decoder_layer_params(self) -> int:
        return sum(linear.params for linear in self.linears) // max(self.shape.layers, 1)

    def lora_params(self, rank: int, targets: str) -> int:
        """Adapter parameters: rank·(d_in + d_out) for each adapted linear module (Hu et al., arXiv:2106.09685)."""
        return sum(rank * (linear.d_in + linear.d_out) * linear.copies * linear.layers
                   for linear in self.linears if lora_targets_match(linear.name, targets))

    def layer_params(self, count: int) -> int:
        """Parameters of the last `count` decoder layers (what LLaMA-Factory's freeze method trains)."""
        return self.decoder_layer_params() * min(count, self.shape.layers)


def lora_targets_match(name: str, targets: str) -> bool:
    group = LORA_TARGET_GROUPS.get(targets, "custom")
    if group is None:
        return True
    names = group if group != "custom" else tuple(part.strip() for part in targets.split(",") if part.strip())
    leaf = name.rsplit(".", 1)[-1]
    return leaf in names or name in names


# ---------------------------------------------------------------------------------------------- config.json


def _int(config: dict[str, Any], key: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        if value is None:
            raise UsageError(f"config.json: {key}: missing (needed to count parameters)")
        raise UsageError(f"config.json: {key}: expected a non-negative integer, got {value!r}")
    return value


def _attention(config: dict[str, Any], family: str, h: int, layers: int) -> tuple[list[Linear], int, int, int]:
    """Attention linears, extra small params per layer, head count and head dim."""
    heads = _int(config, "num_attention_heads")
    if family.startswith("deepseek"):
        nope, rope = _int(config, "qk_nope_head_dim"), _int(config, "qk_rope_head_dim")
        v_dim, kv_rank = _int(config, "v_head_dim"), _int(config, "kv_lora_rank")
        q_rank = config.get("q_lora_rank")
        bias = bool(config.get("attention_bias", False))
        out: list[Linear] = []
        extra = kv_rank  # kv_a_layernorm
        if q_rank:
            out += [Linear("q_a_proj", h, q_rank, layers, bias=bias), Linear("q_b_proj", q_rank, heads * (nope + rope), layers)]
            extra += q_rank  # q_a_layernorm
        else:
            out.append(Linear("q_proj", h, heads * (nope + rope), layers))
        out += [Linear("kv_a_proj_with_mqa", h, kv_rank + rope, layers, bias=bias),
                Linear("kv_b_proj", kv_rank, heads * (nope + v_dim), layers),
                Linear("o_proj", heads * v_dim, h, layers, bias=bias)]
        return out, extra, heads, nope + rope
    if h % heads and "head_dim" not in config:
        raise UsageError("config.json: hidden_size is not a multiple of num_attention_heads and head_dim is missing")
    head_dim = _int(config, "head_dim", h // heads) if config.get("head_dim") is not None else h // heads
    kv = _int(config, "num_key_value_heads", heads) if config.get("num_key_value_heads") is not None else heads
    qkv_bias = family in _QKV_BIAS or bool(config.get("attention_bias", False))
    o_bias = bool(config.get("attention_bias", False))
    out = [Linear("q_proj", h, heads * head_dim, layers, bias=qkv_bias),
           Linear("k_proj", h, kv * head_dim, layers, bias=qkv_bias),
           Linear("v_proj", h, kv * head_dim, layers, bias=qkv_bias),
           Linear("o_proj", heads * head_dim, h, layers, bias=o_bias)]
    extra = 2 * head_dim if family.startswith(_QK_NORM + ("gemma3",)) else 0
    return out, extra, heads, head_dim


def _mlp(prefix: str, h: int, width: int, layers: int, copies: int = 1, active: int = 1) -> list[Linear]:
    return [Linear(f"{prefix}gate_proj", h, width, layers, copies, active),
            Linear(f"{prefix}up_proj", h, width, layers, copies, active),
            Linear(f"{prefix}down_proj", width, h, layers, copies, active)]


def _moe_layers(config: dict[str, Any], layers: int) -> int:
    """How many decoder layers hold experts (the rest are dense)."""
    if "first_k_dense_replace" in config:  # DeepSeek: the first k layers are dense, then every moe_layer_freq-th
        first = _int(config, "first_k_dense_replace", 0)
        freq = max(_int(config, "moe_layer_freq", 1), 1)
        return sum(1 for i in range(layers) if i >= first and i % freq == 0)
    step = max(_int(config, "decoder_sparse_step", 1), 1)  # Qwen-MoE: sparse_step and mlp_only_layers
    only = set(config.get("mlp_only_layers") or ())
    return sum(1 for i in range(layers) if i not in only and (i + 1) % step == 0)


def _feed_forward(config: dict[str, Any], family: str, h: int, layers: int) -> tuple[list[Linear], int, int]:
    """MLP / expert linears, router parameters, and the width a token passes through."""
    experts = config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts") or 0
    if not experts:
        width = _int(config, "intermediate_size")
        return _mlp("mlp.", h, width, layers), 0, width
    experts = _int(config, "num_local_experts" if config.get("num_local_experts") else
                   "num_experts" if config.get("num_experts") else "n_routed_experts")
    top_k = _int(config, "num_experts_per_tok")
    if family == "mixtral" or "num_local_experts" in config:  # Mixtral: every layer, w1/w3/w2 of intermediate_size
        width = _int(config, "intermediate_size")
        return _mlp("experts.", h, width, layers, experts, top_k), h * experts * layers, top_k * width
    moe_width = _int(config, "moe_intermediate_size")
    moe_layers = _moe_layers(config, layers)
    dense_layers = layers - moe_layers
    out = _mlp("experts.", h, moe_width, moe_layers, experts, top_k)
    router = h * experts * moe_layers
    width = top_k * moe_width
    shared = 0
    if config.get("n_shared_experts"):  # DeepSeek: one MLP of n_shared·moe_intermediate_size
        shared = _int(config, "n_shared_experts") * moe_width
    elif config.get("shared_expert_intermediate_size"):  # Qwen-MoE: one shared MLP plus a 1-output gate
        shared = _int(config, "shared_expert_intermediate_size")
        router += h * moe_layers
    if shared and moe_layers:
        out += _mlp("shared_experts.", h, shared, moe_layers)
        width += shared
    if dense_layers:
        out += _mlp("mlp.", h, _int(config, "intermediate_size"), dense_layers)
    return out, router, width


def from_config(config: dict[str, Any], source: str) -> ModelSpec:
    """Count parameters the way the model's own modules are built."""
    if isinstance(config.get("text_config"), dict):  # multimodal wrappers keep the decoder here
        config = {**config["text_config"], **{k: v for k, v in config.items() if k == "tie_word_embeddings"}}
    family = str(config.get("model_type") or "llama")
    h, layers, vocab = _int(config, "hidden_size"), _int(config, "num_hidden_layers"), _int(config, "vocab_size")
    attn, attn_extra, heads, head_dim = _attention(config, family, h, layers)
    ffn, router, width = _feed_forward(config, family, h, layers)
    linears = tuple(attn + ffn)
    tied = config.get("tie_word_embeddings")
    if tied is None:
        tied = family.startswith(_TIED_BY_DEFAULT)
    embeddings = vocab * h * (1 if tied else 2)
    norms = (4 if family.startswith(_FOUR_NORMS) else 2) * h * layers + h
    total = sum(linear.params for linear in linears) + embeddings + norms + router + attn_extra * layers
    inactive = sum(linear.params * (linear.copies - linear.active) // linear.copies for linear in linears)
    kv = config.get("num_key_value_heads") or heads
    largest = max([vocab * h] + [linear.d_in * linear.d_out for linear in linears])
    shape = Shape(hidden=h, layers=layers, heads=heads, kv_heads=int(kv), head_dim=head_dim, mlp_width=width, vocab=vocab)
    return ModelSpec(params=total, active_params=total - inactive, embedding_params=embeddings, linears=linears,
                     largest_module=largest, shape=shape, source=source, family=family)


def load_config(path: str) -> ModelSpec:
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (MODEL is a parameter count such as 7B or a config.json)") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: not valid JSON: {error.msg} at line {error.lineno}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a config.json (not UTF-8 text)") from None
    if not isinstance(config, dict):
        raise UsageError(f"{path}: expected a JSON object (a Hugging Face config.json)")
    try:
        return from_config(config, source=path)
    except UsageError as error:
        raise UsageError(f"{path}: {str(error).removeprefix('config.json: ')}") from None


# ---------------------------------------------------------------------------------------------- bare counts

_COUNT = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parse_count(text: str) -> int | None:
    """`7B`, `8.03e9`, `560M` -> parameters; None when `text` is not a count."""
    match = _COUNT.match(text)
    if not match:
        return None
    return int(round(float(match.group(1)) * _SCALE[match.group(2).lower()]))


def from_count(count: int, source: str) -> ModelSpec:
    """A dense Llama-2-like model of `count` parameters: the nearest published shape, with the layer count scaled."""
    billions = count / 1e9
    _, h, i, layers, heads, kv = min(_BARE_SHAPES, key=lambda row: abs(math.log(row[0] / max(billions, 1e-3))))
    per_layer = 2 * h * h + 2 * h * (h // heads * kv) + 3 * h * i + 2 * h
    embeddings = 2 * _BARE_VOCAB * h
    layers = max(1, round((count - embeddings) / per_layer))
    linears = tuple([Linear("q_proj", h, h, layers), Linear("k_proj", h, h // heads * kv, layers),
                     Linear("v_proj", h, h // heads * kv, layers), Linear("o_proj", h, h, layers)]
                    + _mlp("mlp.", h, i, layers))
    shape = Shape(hidden=h, layers=layers, heads=heads, kv_heads=kv, head_dim=h // heads, mlp_width=i, vocab=_BARE_VOCAB)
    return ModelSpec(params=count, active_params=count, embedding_params=min(embeddings, count), linears=linears,
                     largest_module=max(_BARE_VOCAB * h, h * i), shape=shape, source=source, family="llama")


def load_model(text: str) -> ModelSpec:
    """MODEL as given on the command line: a count, or a config.json path (or a directory holding one)."""
    count = parse_count(text)
    if count is not None:
        if count < 10**6:
            raise UsageError(f"MODEL {text!r}: {count} parameters is too small to plan for; write e.g. 7B or 8.03e9")
        return from_count(count, source=f"count {text}")
    if not os.path.exists(text):
        raise UsageError(f"MODEL {text!r}: neither a parameter count (7B, 8.03e9) nor an existing config.json")
    return load_config(text)
