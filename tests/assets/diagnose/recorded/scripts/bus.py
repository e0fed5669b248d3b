import mmap, os
fd = os.open("/dev/shm/envcheck-buf", os.O_RDWR | os.O_CREAT)
os.ftruncate(fd, 256 * 1024 * 1024)  # sparse: succeeds even on a 64 MB tmpfs
buf = mmap.mmap(fd, 256 * 1024 * 1024)
print("writing 256 MB to a shared-memory buffer", flush=True)
for i in range(0, len(buf), 4096):
    buf[i] = 1
