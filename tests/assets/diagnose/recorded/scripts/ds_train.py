"""The same tiny fine-tune through DeepSpeed's engine on the CPU accelerator (gloo), as the deepspeed launcher runs it."""
import sys

import deepspeed
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=2, max_position_embeddings=64)
model = LlamaForCausalLM(config)
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=sys.argv[-1],
                                       optimizer=torch.optim.AdamW(model.parameters(), lr=1e-3))
for step in range(10):
    ids = torch.randint(0, 128, (4, 32))
    loss = engine(input_ids=ids, labels=ids).loss
    engine.backward(loss)
    engine.step()
    if engine.global_rank == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
