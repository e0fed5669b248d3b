"""A healthy fine-tune on a CPU: a tiny Llama built from its config (no download), HF Trainer, 20 steps, two saves."""
import sys

import torch
from torch.utils.data import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments


class Tokens(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.randint(0, 128, (32,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}


torch.manual_seed(0)
config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=2, max_position_embeddings=64)
args = TrainingArguments(output_dir=sys.argv[1], per_device_train_batch_size=4, max_steps=20, logging_steps=5,
                         save_steps=10, report_to=[], use_cpu=True, disable_tqdm=False)
Trainer(model=LlamaForCausalLM(config), args=args, train_dataset=Tokens()).train()
