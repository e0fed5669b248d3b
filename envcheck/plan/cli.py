"""`envcheck plan`: the command line of the memory planner (CONTRACT.md). Only this module prints.

Exit 0 when the plan fits, 1 when it does not, 2 for bad input (raised as UsageError, mapped by envcheck.cli).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from envcheck.errors import UsageError

NAME = "plan"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _gib(text: str) -> float:
    try:
        value = float(text.upper().removesuffix("GIB").removesuffix("GB").removesuffix("G"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size in GiB (e.g. 80)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive size in GiB")
    return value


# Plan options a LLaMA-Factory YAML may fix; a flag given on the command line wins. None = not given.
DEFAULTS = {"method": "lora", "precision": "auto", "seq_len": 2048, "batch": 1, "grad_accum": 1, "grad_ckpt": True,
            "attention": "auto", "lora_rank": 8, "lora_targets": "all", "quant_bits": 4, "freeze_layers": 2,
            "zero": "auto", "offload": "auto", "fused_loss": False}


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from envcheck.helptext import help_kwargs

    p = subparsers.add_parser(NAME, help="predict fine-tuning memory (GPU and host) and the DeepSpeed config that fits",
                              **help_kwargs(
                                  "Predict per-GPU and per-node host memory of a fine-tuning run, judge it against the "
                                  "hardware, and write a DeepSpeed config HF Trainer accepts. MODEL is a hub id "
                                  "(local Hugging Face cache, else a bundled table), a config.json, a LLaMA-Factory "
                                  "training YAML or a parameter count. JSON output: docs/plan-json.md.",
                                  ("envcheck plan Qwen/Qwen2.5-7B --gpu 4090 --host-mem 64",
                                   "envcheck plan examples/train_lora/llama3_lora_sft.yaml --gpu T4 --host-mem 32",
                                   "envcheck plan ~/models/qwen2.5-7b/config.json --method full --gpus 8 "
                                   "--gpu H100-80GB --host-mem 1024",
                                   "envcheck plan 13B --method full --gpus 4 --gpu A100-80GB --host-mem 512 "
                                   "--emit-ds-config ds.json"),
                                  (("0", "the plan fits"), ("1", "it does not fit (the advice says what would)"))))
    p.add_argument("model", metavar="MODEL",
                   help="a hub id (Qwen/Qwen2.5-7B), a config.json, a LLaMA-Factory YAML, or a count (7B, 8.03e9)")
    p.add_argument("--method", choices=("full", "freeze", "lora", "qlora"), help="default: lora")
    p.add_argument("--precision", choices=("auto", "bf16", "fp16", "fp32", "pure_bf16"),
                   help="default: auto (bf16 where the GPU has it, else fp16)")
    p.add_argument("--gpus", type=_positive, default=None, metavar="N",
                   help="GPUs per node (default: this machine's count, else 1)")
    p.add_argument("--nodes", type=_positive, default=1, metavar="N", help="default: 1")
    gpu = p.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", metavar="NAME", help="a GPU from the matrix, e.g. H100, 'A100 40GB', 'RTX 4090'")
    gpu.add_argument("--gpu-mem", type=_gib, metavar="GIB", help="memory per GPU in GiB")
    p.add_argument("--host-mem", type=_gib, metavar="GIB",
                   help="host RAM per node in GiB (default: this machine, with a warning when planning other hardware)")
    p.add_argument("--zero", choices=("0", "1", "2", "3", "auto"), help="ZeRO stage (default: auto)")
    p.add_argument("--offload", choices=("none", "optimizer", "all", "auto"),
                   help="CPU offload: optimizer states, or all (optimizer + parameters, ZeRO-3) (default: auto)")
    p.add_argument("--seq-len", type=_positive, metavar="N", help="tokens per sample (default: 2048)")
    p.add_argument("--batch", type=_positive, metavar="N", help="micro-batch per GPU (default: 1)")
    p.add_argument("--grad-accum", type=_positive, metavar="N", help="gradient accumulation (default: 1)")
    ckpt = p.add_mutually_exclusive_group()
    ckpt.add_argument("--grad-ckpt", dest="grad_ckpt", action="store_true", default=None,
                      help="gradient checkpointing (default)")
    ckpt.add_argument("--no-grad-ckpt", dest="grad_ckpt", action="store_false")
    p.add_argument("--attention", choices=("auto", "flash", "sdpa", "eager"),
                   help="default: auto (FlashAttention-2 where the GPU has it, else SDPA)")
    p.add_argument("--fused-loss", action="store_true", default=None,
                   help="a fused or chunked cross entropy (Liger kernel, LLaMA-Factory enable_liger_kernel)")
    p.add_argument("--lora-rank", type=_positive, metavar="R", help="default: 8")
    p.add_argument("--lora-targets", metavar="TARGETS",
                   help="all, attn, qv, or module names such as q_proj,v_proj (default: all)")
    p.add_argument("--quant-bits", type=int, choices=(4, 8), help="QLoRA bits (default: 4)")
    p.add_argument("--freeze-layers", type=_positive, metavar="N",
                   help="trainable last layers for --method freeze (default: 2)")
    p.add_argument("--emit-ds-config", metavar="FILE",
                   help="write the DeepSpeed config of the plan to FILE (only when it fits, unless --force)")
    p.add_argument("--force", action="store_true",
                   help="write --emit-ds-config FILE even if it exists or the plan does not fit")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout (docs/plan-json.md)")


def _snapshot():  # type: ignore[no-untyped-def]
    from envcheck.capture import capture

    return capture(deep=False)


def _options(args: argparse.Namespace) -> tuple[str, dict[str, object], list[str], dict[str, str]]:
    """(MODEL to resolve, merged options, notes, where explicit precision/attention came from)."""
    from envcheck.plan.lfyaml import is_yaml, training_setup

    model, fixed, notes, origin = args.model, {}, [], {}
    if is_yaml(args.model):
        if not os.path.isfile(args.model):
            raise UsageError(f"{args.model}: no such file")
        model, fixed, notes = training_setup(args.model)
        origin = {"precision": f"{fixed['precision']}: true in {args.model}",
                  "attention": f"flash_attn: fa2 in {args.model}"}
    merged: dict[str, object] = {}
    for key, default in DEFAULTS.items():
        flag = getattr(args, key)
        if flag is not None:
            merged[key] = flag
            origin.pop(key, None)
        else:
            merged[key] = fixed.get(key, default)
    return model, merged, notes, origin


def run(args: argparse.Namespace) -> int:
    from envcheck.plan.capability import choose
    from envcheck.plan.hardware import resolve_hardware
    from envcheck.plan.plan import make_plan, valid
    from envcheck.plan.render import render_text
    from envcheck.plan.setup import Setup
    from envcheck.plan.source import resolve_model

    if args.emit_ds_config is not None and not args.emit_ds_config.strip():
        raise UsageError("--emit-ds-config: give a file name")
    if args.emit_ds_config and os.path.exists(args.emit_ds_config) and not args.force:
        raise UsageError(f"{args.emit_ds_config} exists; use --force to overwrite it")
    name, o, notes, origin = _options(args)
    zero = None if o["zero"] == "auto" else int(str(o["zero"]))
    offload = None if o["offload"] == "auto" else str(o["offload"])
    if zero is not None and offload is not None and not valid(zero, offload):
        need = "ZeRO-3" if offload == "all" else "ZeRO 1, 2 or 3"
        raise UsageError(f"--offload {offload} needs {need} (got --zero {zero})")
    if args.lora_targets is not None and o["method"] not in ("lora", "qlora"):
        raise UsageError("--lora-targets applies to --method lora or qlora")
    model = resolve_model(name)
    targets = str(o["lora_targets"])
    if o["method"] in ("lora", "qlora") and model.lora_params(int(str(o["lora_rank"])), targets) == 0:
        raise UsageError(f"--lora-targets {targets!r} matches no linear layer of this model "
                         f"(its layers: {', '.join(sorted({lin.name.rsplit('.', 1)[-1] for lin in model.linears}))})")
    hardware = resolve_hardware(args.gpu, args.gpu_mem, args.host_mem, _snapshot, args.gpus, args.nodes)
    precision, attention, why, warnings = choose(str(o["precision"]), str(o["attention"]), hardware, origin)
    gpus = args.gpus or hardware.gpus_found or 1
    setup = Setup(method=str(o["method"]), precision=precision, gpus_per_node=gpus, nodes=args.nodes,
                  seq_len=int(str(o["seq_len"])), batch=int(str(o["batch"])), grad_accum=int(str(o["grad_accum"])),
                  grad_ckpt=bool(o["grad_ckpt"]), attention=attention, lora_rank=int(str(o["lora_rank"])),
                  lora_targets=targets, quant_bits=int(str(o["quant_bits"])),
                  freeze_layers=int(str(o["freeze_layers"])),
                  fused_loss=bool(o["fused_loss"]))
    plan = make_plan(model, setup, hardware, zero, offload, tuple(notes + why), tuple(warnings))
    if args.emit_ds_config and not plan.fits and not args.force:
        print(f"envcheck: {args.emit_ds_config} not written: the plan does NOT fit; --force writes it anyway",
              file=sys.stderr)
    elif args.emit_ds_config:
        try:
            with open(args.emit_ds_config, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(plan.deepspeed_config(), indent=2) + "\n")
        except OSError as error:
            raise UsageError(f"cannot write {args.emit_ds_config}: {error.strerror or error}") from None
        print(f"envcheck: DeepSpeed config written to {args.emit_ds_config}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(plan.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(plan))
    return 0 if plan.fits else 1
