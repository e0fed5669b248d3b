# Allocate host memory until the kernel's OOM killer ends the process (run inside a memory-limited cgroup).
import os, time
print(f"rank {os.environ.get('RANK', '0')} pid {os.getpid()}: gathering weights to save a checkpoint", flush=True)
blocks = []
while True:
    blocks.append(bytearray(16 * 1024 * 1024))
    for i in range(0, len(blocks[-1]), 4096):
        blocks[-1][i] = 1
