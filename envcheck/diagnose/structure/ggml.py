"""llama.cpp (ggml) running out of GPU memory for good: its CUDA allocator's failed cudaMalloc, then the context that
could not be created. ggml prints the allocation failure whatever happens next, and newer llama.cpp retries without
pipeline parallelism and runs (mined review-revN-01), so the allocator's line alone is no cause (SIG327, SIG378);
with the context's failure after it and no retry, it is the run's death."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"cudaMalloc failed: out of memory", b"failed to allocate compute buffers",
           b"Failed to create llama_context", b"retrying without pipeline parallelism")
_CUDA_OOM = re.compile(r"ggml_backend_cuda_buffer_type_alloc_buffer: allocating .* cudaMalloc failed: out of memory")
# llama_new_context_with_model gives up (llama_free, return nullptr), and llama-cpp-python raises for the NULL
_NO_CONTEXT = re.compile(r"llama_new_context_with_model: failed to allocate compute buffers"
                         r"|Failed to create llama_context")
_RETRY = re.compile(r"retrying without pipeline parallelism")
SOURCE = ("github:ggerganov/llama.cpp@6481eb4ceadc8d5ab6db6819027416501e0e647f:ggml/src/ggml-cuda.cu "
          "(ggml_backend_cuda_buffer_type_alloc_buffer: '%s: allocating %.2f MiB on device %d: cudaMalloc failed: "
          "%s'); "
          "github:ggerganov/llama.cpp@4ff7fe1fb36b04ddd158b2de881c348c5f0ff5e4:src/llama.cpp (llama_new_context_with_"
          "model: 'failed to allocate compute buffers', llama_free(ctx), return nullptr); github:abetlen/llama-cpp-"
          "python@b1d23df0bbd327b774083b5cf88e67ca0dd52b92:llama_cpp/_internals.py (ValueError('Failed to create "
          "llama_context'))")


def events(lines: list[Line]) -> list[Event]:
    oom = next((line for line in lines if _CUDA_OOM.search(line.text)), None)
    if oom is None or any(_RETRY.search(line.text) for line in lines):
        return []
    if not any(_NO_CONTEXT.search(line.text) for line in lines if (line.file, line.number) > (oom.file, oom.number)):
        return []
    return [Event("ggml_oom", "gpu_oom", 0.85, "llama.cpp could not allocate its buffers on the GPU",
                  "llama.cpp (ggml) asked CUDA for a buffer (the weights, the KV cache or the compute buffers), "
                  "cudaMalloc found no GPU memory left, and the context could not be created: the model at this "
                  "quantization, context length and number of offloaded layers needs more GPU memory than is free.",
                  "Offload fewer layers (-ngl / n_gpu_layers), shorten the context (-c / n_ctx), use a smaller "
                  "quantization, or free the GPU held by another process (nvidia-smi).",
                  oom.file, oom.number, oom.text, SOURCE, "ggml-cuda")]
