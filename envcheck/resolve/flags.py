"""The TARGET flags of CONTRACT.md, shared by `resolve` and `env` (argparse only: cheap to import)."""

from __future__ import annotations

import argparse


def add_target_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", metavar="FILE", help="take the target machine from a snapshot (envcheck probe -o)")
    parser.add_argument("--driver", metavar="VERSION", help="the target's NVIDIA driver, e.g. 535.104.05")
    parser.add_argument("--gpu", metavar="NAME", action="append", help="a target GPU, e.g. H100 or 'RTX 4090' "
                                                                      "(repeatable for mixed machines)")
    parser.add_argument("--compute-capability", metavar="X.Y", action="append", dest="compute_capability",
                        help="a target GPU by compute capability (repeatable)")
    parser.add_argument("--python", metavar="X.Y", help="Python of the environment (default: the best supported)")
    parser.add_argument("--cuda", metavar="X.Y", help="pin torch's CUDA variant, e.g. 12.1")
    parser.add_argument("--torch", metavar="SPEC", help="pin torch: a release line (2.4) or a range (>=2.4,<2.6)")
    parser.add_argument("--with", metavar="PKG[SPEC]", action="append", dest="with_",
                        help="add a package (repeatable): deepspeed, flash-attn, transformers, bitsandbytes, vllm, ...")
    parser.add_argument("--for", metavar="llamafactory[==X]", dest="for_",
                        help="a whole training stack: LLaMA-Factory with its ranges, torch and DeepSpeed")
    parser.add_argument("--policy", choices=("full", "compat"), default="full",
                        help="full (default): prefer torch builds the driver fully supports; compat: the newest torch "
                             "that runs, also through CUDA minor-version compatibility (the doctor warns about it)")
    parser.add_argument("--matrix", metavar="DIR", help="use the compatibility matrix in DIR")


def target_flags_given(args: argparse.Namespace) -> bool:
    return any(getattr(args, name, None) for name in ("snapshot", "driver", "gpu", "compute_capability"))
