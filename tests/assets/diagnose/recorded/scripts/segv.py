import ctypes, os
print(f"rank {os.environ.get('RANK', '0')}: loading extension", flush=True)
ctypes.string_at(0)
