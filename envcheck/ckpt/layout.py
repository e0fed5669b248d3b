"""Recognize checkpoint directories and list the files each one needs before anything is read in full.

HF Trainer writes `checkpoint-N/` (weights, optimizer.pt, scheduler.pt, rng_state*.pth, trainer_state.json last);
PEFT writes adapter_model.* + adapter_config.json instead of the weights; DeepSpeed writes `global_stepN/` (model
states, one ZeRO optimizer shard per data-parallel rank) and then `latest`. LLaMA-Factory's output directory is an
HF Trainer one with its own logs beside it. The world size a DeepSpeed tag needs is read from its model states
with the restricted unpickler, never by importing torch.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from envcheck.ckpt.model import CORRUPT, MISMATCH, MISSING, Checkpoint, Problem, Required
from envcheck.errors import UsageError

HF_NAME = re.compile(r"^checkpoint-(\d+)$")
DS_TAG = re.compile(r"^global_step(\d+)$")
MODEL_STATES = re.compile(r"^(?:zero_pp_rank_(\d+)_)?mp_rank_(\d+)_model_states\.pt$")
OPTIM_STATES = re.compile(r"^(bf16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt$")
RNG = re.compile(r"^rng_state(?:_(\d+))?\.pth$")
LLAMAFACTORY_MARKERS = ("training_args.yaml", "trainer_log.jsonl", "llamaboard_config.yaml", "running_log.txt")
WEIGHTS = ("model.safetensors.index.json", "pytorch_model.bin.index.json", "model.safetensors", "pytorch_model.bin")
ADAPTERS = ("adapter_model.safetensors", "adapter_model.bin")


def check_of(name: str) -> str:
    """How a file is checked, by its name: safetensors header, JSON syntax, zip CRCs, or existence only."""
    if name.endswith(".safetensors"):
        return "safetensors"
    if name.endswith(".json"):
        return "json"
    if name.endswith((".pt", ".pth", ".bin")):
        return "zip"
    return "any"


def _json(path: str) -> Any:
    """A small JSON file's content, or None when it is absent or does not parse (integrity says why)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _pickle_root(path: str) -> Any:
    from envcheck.ckpt.unpickle import read_archive_pickle

    try:
        return read_archive_pickle(path)[0].root
    except Exception:  # noqa: BLE001 - unreadable: integrity reports the file itself
        return None


def _is_ds_tag(path: str) -> bool:
    try:
        return any(MODEL_STATES.match(n) for n in os.listdir(path))
    except OSError:
        return False


def _is_hf_checkpoint(path: str) -> bool:
    names = set(os.listdir(path))
    return bool(HF_NAME.match(os.path.basename(path))) or "trainer_state.json" in names


def _has_weights(names: set[str]) -> bool:
    return any(w in names for w in WEIGHTS + ADAPTERS)


def deepspeed_tag(tag_dir: str, prefix: str) -> tuple[list[Required], list[Problem], dict[str, Any]]:
    """What a DeepSpeed tag directory needs: the model states of every MP rank and one ZeRO optimizer shard per
    data-parallel rank below the saved dp_world_size (zero_to_fp32.py's count, done before any load)."""
    tag = os.path.basename(tag_dir)
    names = sorted(os.listdir(tag_dir)) if os.path.isdir(tag_dir) else []
    states = [n for n in names if MODEL_STATES.match(n)]
    optims = [n for n in names if OPTIM_STATES.match(n)]
    facts: dict[str, Any] = {"tag": tag}
    if not states:
        why = "DeepSpeed model states (module, dp_world_size): the tag holds none"
        return [Required(f"{prefix}mp_rank_00_model_states.pt", "zip", why)], [], facts
    from envcheck.ckpt.unpickle import plain, scalar

    root = None
    for name in sorted(states, key=lambda n: (MODEL_STATES.match(n).group(1) or "0", n)):  # type: ignore[union-attr]
        root = _pickle_root(os.path.join(tag_dir, name))
        if isinstance(root, dict):
            break
    problems: list[Problem] = []
    if isinstance(root, dict):
        config = plain(root.get("ds_config"))
        config = config if isinstance(config, dict) else {}
        zero = config.get("zero_optimization") or {}
        stage = int(scalar(zero.get("stage", 0))) if isinstance(zero, dict) else 0
        bf16 = bool((config.get("bf16") or config.get("bfloat16") or {}).get("enabled", False))
        dp, mp = int(root.get("dp_world_size") or 1), int(root.get("mp_world_size") or 1)
        facts.update(zero_stage=stage, bf16=bf16, dp_world_size=dp, mp_world_size=mp,
                     global_steps=root.get("global_steps"), ds_version=root.get("ds_version"), source="model states")
    else:  # every model states file is unreadable: count from the names present
        stage = 3 if any(MODEL_STATES.match(n).group(1) for n in states) else (2 if optims else 0)  # type: ignore[union-attr]
        bf16 = any(n.startswith("bf16_") for n in optims)
        ranks = [int(OPTIM_STATES.match(n).group(2)) for n in optims]  # type: ignore[union-attr]
        dp, mp = (max(ranks) + 1 if ranks else 1), 1
        facts.update(zero_stage=stage, bf16=bf16, dp_world_size=dp, mp_world_size=mp, source="file names")
    steps, match = facts.get("global_steps"), DS_TAG.match(tag)
    if match and isinstance(steps, int) and steps != int(match.group(1)):
        problems.append(Problem(f"{prefix}{states[0]}", MISMATCH,
                                f"global_steps is {steps} but the tag is {tag}: a file from another save"))
    required = []
    for m in range(mp):
        if stage == 3:
            required += [Required(f"{prefix}zero_pp_rank_{r}_mp_rank_{m:02d}_model_states.pt", "zip",
                                  f"ZeRO-3 model states of rank {r} (dp_world_size {dp})") for r in range(dp)]
        else:
            required.append(Required(f"{prefix}mp_rank_{m:02d}_model_states.pt", "zip", "DeepSpeed model states"))
        if stage >= 1 or bf16:
            pre = "bf16_" if bf16 else ""
            required += [Required(f"{prefix}{pre}zero_pp_rank_{r}_mp_rank_{m:02d}_optim_states.pt", "zip",
                                  f"ZeRO optimizer shard of data-parallel rank {r} (dp_world_size {dp})")
                         for r in range(dp)]
    first = next((r.path for r in required if "optim_states" in r.path), None)
    if first and os.path.exists(os.path.join(tag_dir, os.path.basename(first))):
        shard = _pickle_root(os.path.join(tag_dir, os.path.basename(first)))
        state = plain(shard.get("optimizer_state_dict")) if isinstance(shard, dict) else None
        counts = state.get("partition_count") if isinstance(state, dict) else None
        counts = counts if isinstance(counts, list) else [counts] if isinstance(counts, int) else []
        if any(isinstance(c, int) and c != dp for c in counts):
            problems.append(Problem(first, MISMATCH, f"partition_count {counts} but dp_world_size {dp}"))
    return required, problems, facts


def _weights(directory: str, names: set[str], has_ds: bool) -> tuple[list[Required], list[Problem], list[str]]:
    if "adapter_config.json" in names or any(a in names for a in ADAPTERS):
        found = next((a for a in ADAPTERS if a in names), ADAPTERS[0])
        return [Required("adapter_config.json", "json", "the PEFT adapter's config"),
                Required(found, check_of(found), "the PEFT adapter weights")], [], ["peft"]
    for index in WEIGHTS[:2]:
        if index in names:
            data = _json(os.path.join(directory, index))
            required = [Required(index, "json", "the shard index")]
            problems = []
            if isinstance(data, dict) and isinstance(data.get("weight_map"), dict):
                shards = sorted(set(map(str, data["weight_map"].values())))
                required += [Required(s, check_of(s), f"a shard named in {index}") for s in shards]
            elif data is None and os.path.exists(os.path.join(directory, index)):
                pass  # integrity names the broken JSON
            else:
                problems.append(Problem(index, CORRUPT, "has no weight_map"))
            return required + [Required("config.json", "json", "the model config")], problems, ["hf-model"]
    for single in WEIGHTS[2:]:
        if single in names:
            return [Required(single, check_of(single), "the model weights"),
                    Required("config.json", "json", "the model config")], [], ["hf-model"]
    if has_ds:  # ZeRO-3 without gathered 16-bit weights: the weights live in the DeepSpeed shards
        return [], [], []
    return [Required("model.safetensors", "safetensors", "no model weights at all (model.safetensors, a sharded "
                     "index, pytorch_model.bin or adapter_model.*)")], [], []


def _save_only_model(directory: str) -> bool:
    from envcheck.ckpt.unpickle import plain

    path = os.path.join(directory, "training_args.bin")
    args = plain(_pickle_root(path)) if os.path.exists(path) else None
    return isinstance(args, dict) and args.get("save_only_model") is True


def hf_checkpoint(directory: str, name: str, extra_layouts: tuple[str, ...] = ()) -> Checkpoint:
    """An HF Trainer checkpoint-N (with PEFT or DeepSpeed inside), or a directory that only holds a model."""
    names = set(os.listdir(directory))
    match = HF_NAME.match(os.path.basename(directory))
    step = int(match.group(1)) if match else None
    resumable = bool(match) or "trainer_state.json" in names
    tags = sorted(n for n in names if DS_TAG.match(n) and os.path.isdir(os.path.join(directory, n)))
    has_ds = "latest" in names or bool(tags)
    required, problems, layouts = [], [], []
    weights, found, kinds = _weights(directory, names, has_ds)
    required += weights
    problems += found
    layouts += kinds
    facts: dict[str, Any] = {}
    if resumable and _save_only_model(directory):
        resumable = False
        facts["save_only_model"] = True
    if resumable:
        layouts.insert(0, "hf-trainer")
        required.append(Required("trainer_state.json", "json", "the Trainer writes it last: the save did not finish"))
        state = _json(os.path.join(directory, "trainer_state.json"))
        if isinstance(state, dict):
            saved = state.get("global_step")
            facts["global_step"] = saved
            if step is None and isinstance(saved, int):
                step = saved
            elif isinstance(saved, int) and saved != step:
                problems.append(Problem("trainer_state.json", MISMATCH,
                                        f"global_step is {saved} but the directory is {os.path.basename(directory)}"))
        world = None
        if has_ds:
            layouts.append("deepspeed")
            tag = None
            if "latest" in names:
                try:
                    with open(os.path.join(directory, "latest"), encoding="utf-8") as handle:
                        tag = handle.read().strip() or None
                except (OSError, UnicodeDecodeError):
                    tag = None
                if tag is None:
                    problems.append(Problem("latest", CORRUPT, "is empty or unreadable: DeepSpeed cannot find the tag"))
            else:
                required.append(Required("latest", "any", "DeepSpeed writes it last and load_checkpoint() reads it "
                                                          "to find the tag: the save did not finish"))
                tag = f"global_step{step}" if f"global_step{step}" in tags else (tags[-1] if tags else None)
            if tag is not None and not os.path.isdir(os.path.join(directory, tag)):
                problems.append(Problem(f"{tag}/", MISSING, f"`latest` names {tag}, which does not exist"))
            elif tag is not None:
                more, found, ds = deepspeed_tag(os.path.join(directory, tag), f"{tag}/")
                required += more
                problems += found
                facts["deepspeed"] = ds
                world = ds.get("dp_world_size")
        else:
            required += [Required("optimizer.pt", "zip", "the optimizer state a resume loads"),
                         Required("scheduler.pt", "zip", "the learning-rate scheduler state a resume loads")]
        ranks = sorted(int(m.group(1)) for n in names if (m := RNG.match(n)) and m.group(1) is not None)
        if "rng_state.pth" not in names or ranks:
            count = max([world or 0] + [r + 1 for r in ranks]) or 1
            required += ([Required("rng_state.pth", "zip", "the RNG state of a one-process run")] if count == 1
                         and not ranks else [Required(f"rng_state_{r}.pth", "zip", f"the RNG state of process {r} "
                                                      f"(of {count})") for r in range(count)])
    layouts += [k for k in extra_layouts if k not in layouts]
    return Checkpoint(path=directory, name=name, step=step, layouts=tuple(layouts), resumable=resumable,
                      required=tuple(required), problems=tuple(problems), facts=facts)


def ds_checkpoint(tag_dir: str, name: str) -> Checkpoint:
    required, problems, facts = deepspeed_tag(tag_dir, "")
    match = DS_TAG.match(os.path.basename(tag_dir))
    step = int(match.group(1)) if match else facts.get("global_steps")
    return Checkpoint(path=tag_dir, name=name, step=step if isinstance(step, int) else None, layouts=("deepspeed",),
                      resumable=True, required=tuple(required), problems=tuple(problems), facts={"deepspeed": facts})


def discover(path: str) -> tuple[str, list[Checkpoint], dict[str, Any]]:
    """(kind, checkpoints, run facts) for PATH: one checkpoint, an output directory of them, or a DeepSpeed save
    directory; raises UsageError when PATH is not a directory or holds no checkpoint layout envcheck knows."""
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file or directory")
    if not os.path.isdir(path):
        raise UsageError(f"{path}: not a directory (give a checkpoint or an output directory)")
    try:
        names = set(os.listdir(path))
    except OSError as error:
        raise UsageError(f"{path}: cannot be listed: {error.strerror}") from None
    root = os.path.abspath(path)
    extra = ("llamafactory",) if any(m in names for m in LLAMAFACTORY_MARKERS) else ()
    if _is_ds_tag(root) and not _is_hf_checkpoint(root):
        return "checkpoint", [ds_checkpoint(root, ".")], {}
    if _is_hf_checkpoint(root):
        return "checkpoint", [hf_checkpoint(root, ".", extra)], {}
    children = sorted((n for n in names if os.path.isdir(os.path.join(root, n))), key=_order)
    hf = [n for n in children if HF_NAME.match(n)]
    tags = [n for n in children if DS_TAG.match(n) or _is_ds_tag(os.path.join(root, n))]
    found: list[Checkpoint] = []
    facts: dict[str, Any] = {"layouts": list(extra)}
    if hf:
        found += [hf_checkpoint(os.path.join(root, n), n, extra) for n in hf]
        facts["layouts"].insert(0, "hf-trainer")
    if tags and not hf:
        found += [ds_checkpoint(os.path.join(root, n), n) for n in tags]
        facts["layouts"].insert(0, "deepspeed")
        facts["latest"] = _read_latest(root) if "latest" in names else None
    if _has_weights(names):
        from dataclasses import replace

        found.append(replace(hf_checkpoint(root, ".", extra), recursive=False))  # the final model beside them
    if not found:
        if "latest" in names:
            facts["latest"] = _read_latest(root)
            return "run", [], {**facts, "layouts": ["deepspeed"]}
        raise UsageError(f"{path}: no checkpoint here (looked for checkpoint-N/, global_stepN/, latest, "
                         f"trainer_state.json and model weights)")
    return ("run" if len(found) > 1 or hf or tags else "checkpoint"), found, facts


def _order(name: str) -> tuple[int, str]:
    match = HF_NAME.match(name) or DS_TAG.match(name)
    return (int(match.group(1)) if match else -1, name)


def _read_latest(root: str) -> str:
    try:
        with open(os.path.join(root, "latest"), encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return ""
