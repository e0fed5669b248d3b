"""Select a CUDA device the way training code does (a device context, then a stream) on a torch without CUDA."""
import torch

try:
    with torch.cuda.device(0):
        pass
except RuntimeError as error:
    print(f"RuntimeError: {error}")
torch.cuda.Stream()
