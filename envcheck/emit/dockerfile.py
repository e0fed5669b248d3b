"""A Dockerfile for the stack: CUDA devel base at torch's CUDA, uv-managed Python, the hashed lock, a non-root
user, the run flags training needs in a LABEL, and `envcheck doctor` as the last step so a broken image fails.

envcheck gets into the image as envcheck.pyz, the zipapp shipped beside the Dockerfile (envcheck/emit/zipapp.py),
never from a package index by name; it runs with the venv's Python and the lock's `packaging`."""

from __future__ import annotations

from envcheck.emit.header import header
from envcheck.emit.zipapp import NAME as ZIPAPP
from envcheck.resolve.solver import Resolution

UV_IMAGE = "ghcr.io/astral-sh/uv:0.13.9"
RUN_FLAGS = "--gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864"


def render(result: Resolution, command: str, lock: str = "requirements.lock.txt") -> str:
    if result.base_image_ref is None:
        raise ValueError(f"no CUDA {result.cuda} base image in the matrix")
    backend = "" if result.default_index else f" --torch-backend={result.torch_index}"
    lines = [
        "# syntax=docker/dockerfile:1",
        header(result, "training image", command).rstrip("\n"),
        f"# Run with: docker run {RUN_FLAGS} IMAGE",
        "# (--ipc=host: DataLoader workers and NCCL need more than Docker's 64 MB /dev/shm; use --shm-size=16g "
        "where the host IPC namespace is not allowed)",
        f"FROM {UV_IMAGE} AS uv",
        "",
        f"FROM {result.base_image_ref}",
        f'LABEL org.opencontainers.image.description="GPU training stack resolved by envcheck" \\',
        f'      io.envcheck.matrix-version="{result.matrix_version}" \\',
        f'      io.envcheck.torch="{result.pins["torch"]}" \\',
        f'      io.envcheck.cuda="{result.cuda}" \\',
        f'      io.envcheck.run-flags="{RUN_FLAGS}"',
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
        "ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 UV_PYTHON_INSTALL_DIR=/opt/python \\",
        "    VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH CUDA_HOME=/usr/local/cuda",
        "COPY --from=uv /uv /usr/local/bin/uv",
        f"RUN uv venv --python {result.python} /opt/venv",
        f"COPY {lock} /tmp/requirements.lock.txt",
        f"RUN uv pip install --require-hashes --no-deps{backend} -r /tmp/requirements.lock.txt",
        f"# envcheck: {ZIPAPP} beside this Dockerfile (written by `envcheck env`; for lockfiles/ by `python -m",
        "# envcheck.emit.lockfiles --zipapp`), run by the venv's python3 with the lock's packaging.",
        f"COPY --chmod=0755 {ZIPAPP} /usr/local/bin/envcheck",
        "RUN useradd --create-home --uid 1000 trainer",
        "USER 1000",
        "WORKDIR /home/trainer",
        "# A broken stack (driver-independent checks: Python, packages, torch/DeepSpeed/CUDA pairing) fails the build.",
        "RUN envcheck doctor --no-deep --fail-on error",
    ]
    return "\n".join(lines) + "\n"
