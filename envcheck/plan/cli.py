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


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from envcheck.helptext import help_kwargs

    p = subparsers.add_parser(NAME, help="predict fine-tuning memory (GPU and host) and the DeepSpeed config that fits",
                              **help_kwargs(
                                  "Predict per-GPU and per-node host memory of a fine-tuning run, judge it against the "
                                  "hardware, and write a DeepSpeed config. JSON output: docs/plan-json.md.",
                                  ("envcheck plan 7B --method lora --gpu 4090",
                                   "envcheck plan ~/models/qwen2.5-7b/config.json --method full --gpus 8 --gpu H100",
                                   "envcheck plan 13B --method full --gpu A100-80GB --emit-ds-config ds.json"),
                                  (("0", "the plan fits"), ("1", "it does not fit (the advice says what would)"))))
    p.add_argument("model", metavar="MODEL", help="a parameter count (7B, 8.03e9) or a Hugging Face config.json")
    p.add_argument("--method", choices=("full", "freeze", "lora", "qlora"), default="lora", help="default: lora")
    p.add_argument("--precision", choices=("bf16", "fp16", "fp32", "pure_bf16"), default="bf16", help="default: bf16")
    p.add_argument("--gpus", type=_positive, default=None, metavar="N",
                   help="GPUs per node (default: this machine's count, else 1)")
    p.add_argument("--nodes", type=_positive, default=1, metavar="N", help="default: 1")
    gpu = p.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", metavar="NAME", help="a GPU from the matrix, e.g. H100, 'A100 40GB', 'RTX 4090'")
    gpu.add_argument("--gpu-mem", type=_gib, metavar="GIB", help="memory per GPU in GiB")
    p.add_argument("--host-mem", type=_gib, metavar="GIB", help="host RAM per node in GiB (default: this machine)")
    p.add_argument("--zero", choices=("0", "1", "2", "3", "auto"), default="auto", help="ZeRO stage (default: auto)")
    p.add_argument("--offload", choices=("none", "optimizer", "all", "auto"), default="auto",
                   help="CPU offload: optimizer states, or all (optimizer + parameters, ZeRO-3) (default: auto)")
    p.add_argument("--seq-len", type=_positive, default=2048, metavar="N", help="tokens per sample (default: 2048)")
    p.add_argument("--batch", type=_positive, default=1, metavar="N", help="micro-batch per GPU (default: 1)")
    p.add_argument("--grad-accum", type=_positive, default=1, metavar="N", help="gradient accumulation (default: 1)")
    ckpt = p.add_mutually_exclusive_group()
    ckpt.add_argument("--grad-ckpt", dest="grad_ckpt", action="store_true", default=True,
                      help="gradient checkpointing (default)")
    ckpt.add_argument("--no-grad-ckpt", dest="grad_ckpt", action="store_false")
    p.add_argument("--attention", choices=("flash", "sdpa", "eager"), default="flash", help="default: flash")
    p.add_argument("--lora-rank", type=_positive, default=8, metavar="R", help="default: 8")
    p.add_argument("--lora-targets", default="all", metavar="TARGETS",
                   help="all, attn, qv, or module names such as q_proj,v_proj (default: all)")
    p.add_argument("--quant-bits", type=int, choices=(4, 8), default=4, help="QLoRA bits (default: 4)")
    p.add_argument("--freeze-layers", type=_positive, default=2, metavar="N",
                   help="trainable last layers for --method freeze (default: 2)")
    p.add_argument("--emit-ds-config", metavar="FILE", help="write the DeepSpeed config of the plan to FILE")
    p.add_argument("--force", action="store_true", help="overwrite the --emit-ds-config FILE if it exists")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout (docs/plan-json.md)")


def _snapshot():  # type: ignore[no-untyped-def]
    from envcheck.capture import capture

    return capture(deep=False)


def run(args: argparse.Namespace) -> int:
    from envcheck.plan.hardware import resolve_hardware
    from envcheck.plan.params import load_model
    from envcheck.plan.plan import make_plan, valid
    from envcheck.plan.render import render_text
    from envcheck.plan.setup import Setup

    if args.emit_ds_config is not None and not args.emit_ds_config.strip():
        raise UsageError("--emit-ds-config: give a file name")
    if args.emit_ds_config and os.path.exists(args.emit_ds_config) and not args.force:
        raise UsageError(f"{args.emit_ds_config} exists; use --force to overwrite it")
    zero = None if args.zero == "auto" else int(args.zero)
    offload = None if args.offload == "auto" else args.offload
    if zero is not None and offload is not None and not valid(zero, offload):
        need = "ZeRO-3" if offload == "all" else "ZeRO 1, 2 or 3"
        raise UsageError(f"--offload {offload} needs {need} (got --zero {zero})")
    if args.method not in ("lora", "qlora") and args.lora_targets != "all":
        raise UsageError("--lora-targets applies to --method lora or qlora")
    model = load_model(args.model)
    if args.method in ("lora", "qlora") and model.lora_params(args.lora_rank, args.lora_targets) == 0:
        raise UsageError(f"--lora-targets {args.lora_targets!r} matches no linear layer of this model "
                         f"(its layers: {', '.join(sorted({lin.name.rsplit('.', 1)[-1] for lin in model.linears}))})")
    hardware = resolve_hardware(args.gpu, args.gpu_mem, args.host_mem, _snapshot)
    gpus = args.gpus or hardware.gpus_found or 1
    setup = Setup(method=args.method, precision=args.precision, gpus_per_node=gpus, nodes=args.nodes,
                  seq_len=args.seq_len, batch=args.batch, grad_accum=args.grad_accum, grad_ckpt=args.grad_ckpt,
                  attention=args.attention, lora_rank=args.lora_rank, lora_targets=args.lora_targets,
                  quant_bits=args.quant_bits, freeze_layers=args.freeze_layers)
    plan = make_plan(model, setup, hardware, zero, offload)
    if args.emit_ds_config:
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
