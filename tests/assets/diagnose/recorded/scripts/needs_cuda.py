"""A training script that refuses to run without CUDA, the way many do (so-vits-svc's train.py, for one)."""
import torch

assert torch.cuda.is_available(), "CPU training is not allowed."
