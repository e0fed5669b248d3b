"""Write the real checkpoint fixtures of tests/test_ckpt*.py with the real libraries, on CPU, with tiny models.

Not run by the tests (CI has no torch). Run it in a throwaway venv outside the repository:

    python3 -m venv /tmp/ckptgen && /tmp/ckptgen/bin/pip install torch transformers peft accelerate safetensors deepspeed
    /tmp/ckptgen/bin/python tests/assets/ckpt/generate.py tests/assets/ckpt

It writes, from a 2-layer GPT-2 built from a config (no hub downloads, hidden size 32):
  hf_run/      HF Trainer, 4 steps, save_steps=2: checkpoint-2, checkpoint-4, and the final model saved
               in shards (model.safetensors.index.json + model-0000k-of-0000n.safetensors) with save_pretrained
  peft_run/    the same with a PEFT LoRA adapter: checkpoint-2, checkpoint-4 (adapter_model.safetensors)
  ds_zero2/    a DeepSpeed ZeRO-2 engine on 2 CPU ranks (gloo): global_step2, global_step4, latest, zero_to_fp32.py
  ds_zero3/    the same with ZeRO-3 and bf16 (partitioned model states, one per rank; bf16_ optimizer shards)
  hf_ds_zero2/ HF Trainer with DeepSpeed ZeRO-2 on the same 2 CPU ranks: checkpoint-N/{latest,global_stepN/,...}
and versions.json with the exact library versions.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")


def tiny_model():  # type: ignore[no-untyped-def]
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2, n_inner=64)
    return GPT2LMHeadModel(config)


class Tokens:
    """Eight random sequences of 16 tokens: enough for 4 steps of batch 2."""

    def __init__(self) -> None:
        import torch

        generator = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, 64, (8, 16), generator=generator)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:  # type: ignore[type-arg]
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def trainer_run(out: str, peft: bool) -> None:
    from transformers import Trainer, TrainingArguments

    model = tiny_model()
    if peft:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["c_attn"], fan_in_fan_out=True))
    args = TrainingArguments(output_dir=out, max_steps=4, save_steps=2, per_device_train_batch_size=2,
                             logging_steps=1, report_to=[], use_cpu=True, seed=0, save_total_limit=None,
                             dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Tokens())
    trainer.train()
    if not peft:  # the final model, in shards, as save_pretrained writes a big one
        model.save_pretrained(out, max_shard_size="60KB")


def _hf_ds_rank(rank: int, world: int, port: int, out: str, stage: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world), ACCELERATE_USE_DEEPSPEED="true")
    import deepspeed
    from transformers import Trainer, TrainingArguments

    deepspeed.init_distributed(dist_backend="gloo")
    config = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
              "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True,
              "optimizer": {"type": "AdamW", "params": {"lr": "auto", "torch_adam": True}}}
    args = TrainingArguments(output_dir=out, max_steps=4, save_steps=2, per_device_train_batch_size=2,
                             logging_steps=1, report_to=[], seed=0, deepspeed=config, dataloader_num_workers=0)
    Trainer(model=tiny_model(), args=args, train_dataset=Tokens()).train()


def _ds_rank(rank: int, world: int, port: int, out: str, stage: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world))
    import deepspeed
    import torch

    deepspeed.init_distributed(dist_backend="gloo")
    model = tiny_model()
    config = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
              "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
              "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 2}},
              "bf16": {"enabled": stage == 3}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    data = Tokens()
    for step in range(4):
        batch = data.ids[2 * (step % 4):2 * (step % 4) + 2]
        loss = engine(input_ids=batch, labels=batch).loss
        engine.backward(loss)
        engine.step()
        if (step + 1) % 2 == 0:
            engine.save_checkpoint(out)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def deepspeed_run(out: str, stage: int, world: int = 2, target=None) -> None:  # type: ignore[no-untyped-def]
    import multiprocessing
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=target or _ds_rank, args=(r, world, port, out, stage)) for r in range(world)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"DeepSpeed rank exited {proc.exitcode}")


def versions() -> dict[str, str]:
    from importlib.metadata import version

    names = ("torch", "transformers", "peft", "accelerate", "safetensors", "deepspeed")
    return {"python": sys.version.split()[0], **{name: version(name) for name in names}}


def prune(dest: str) -> None:
    """Keep the fixtures small: DeepSpeed's recovery scripts (38 KB each) stay only in ds_zero2/."""
    for here, _, names in os.walk(dest):
        for name in names:
            if name == "zero_to_torch.py" or (name == "zero_to_fp32.py" and os.path.basename(here) != "ds_zero2"):
                os.unlink(os.path.join(here, name))


def main(dest: str) -> None:
    os.makedirs(dest, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="ckptgen-")
    jobs = {"hf_run": lambda d: trainer_run(d, peft=False), "peft_run": lambda d: trainer_run(d, peft=True),
            "ds_zero2": lambda d: deepspeed_run(d, stage=2), "ds_zero3": lambda d: deepspeed_run(d, stage=3),
            "hf_ds_zero2": lambda d: deepspeed_run(d, stage=2, target=_hf_ds_rank)}
    only = os.environ.get("ONLY", "").split(",") if os.environ.get("ONLY") else list(jobs)
    for name in only:
        where = os.path.join(scratch, name)
        jobs[name](where)
        shutil.rmtree(os.path.join(dest, name), ignore_errors=True)
        shutil.copytree(where, os.path.join(dest, name))
    prune(dest)
    with open(os.path.join(dest, "versions.json"), "w", encoding="utf-8") as handle:
        json.dump(versions(), handle, indent=2)
        handle.write("\n")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
