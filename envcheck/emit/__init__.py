"""Emitters: one Resolution -> environment.yml, a hashed requirements lock, conda-lock inputs, a Dockerfile.

Each emitter is a pure function returning text (the lock runs uv, a real resolver); writer.py puts files on disk and
refuses to overwrite without force. Output is deterministic: sorted, no timestamps, a provenance header.
"""
