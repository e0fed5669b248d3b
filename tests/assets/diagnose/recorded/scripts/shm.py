import torch
from torch.utils.data import DataLoader, Dataset
class Big(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i): return torch.ones(4 * 1024 * 1024)  # 16 MB per sample
for epoch, batch in enumerate(DataLoader(Big(), batch_size=8, num_workers=2)):
    print("batch", epoch, batch.shape, flush=True)
