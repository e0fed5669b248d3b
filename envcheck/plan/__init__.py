"""envcheck plan: predict fine-tuning memory (GPU and host) and write the DeepSpeed config that fits."""
