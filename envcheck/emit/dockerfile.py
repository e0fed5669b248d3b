"""A Dockerfile for the stack: CUDA devel base at torch's CUDA, uv-managed Python, the hashed lock, a non-root
user, the run flags training needs in a LABEL, and `envcheck doctor` as the last step so a broken image fails.

The base and uv images are build arguments (BASE_IMAGE, UV_IMAGE) whose defaults are the public images, so a
mirror or a locally built stand-in can replace them. A TLS-intercepting proxy's CA bundle goes in as the optional
build secret `ca` (never a layer): the steps that reach the package index trust it when it is given.

envcheck gets into the image as envcheck.pyz, the zipapp shipped beside the Dockerfile (envcheck/emit/zipapp.py),
never from a package index by name; it runs with the venv's Python and the lock's `packaging`."""

from __future__ import annotations

from envcheck.emit.header import header
from envcheck.emit.zipapp import NAME as ZIPAPP
from envcheck.resolve.solver import Resolution

UV_IMAGE = "ghcr.io/astral-sh/uv:0.13.9"
CA_SECRET = "ca"
# The prefix of every RUN that reaches the package index: with `--secret id=ca,src=BUNDLE`, uv trusts BUNDLE.
TRUST_CA = (f"RUN --mount=type=secret,id={CA_SECRET} if [ -s /run/secrets/{CA_SECRET} ]; then "
            f"export SSL_CERT_FILE=/run/secrets/{CA_SECRET}; fi")
BUILD_HELP = ("# Build: docker build [--build-arg BASE_IMAGE=...] [--build-arg UV_IMAGE=...] "
              f"[--secret id={CA_SECRET},src=CA_BUNDLE.pem] -t IMAGE DIR")
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
        BUILD_HELP,
        "# (CA_BUNDLE.pem: the certificates a TLS-intercepting proxy signs with, for the steps that reach the index)",
        f"ARG BASE_IMAGE={result.base_image_ref}",
        f"ARG UV_IMAGE={UV_IMAGE}",
        "FROM ${UV_IMAGE} AS uv",
        "",
        "FROM ${BASE_IMAGE}",
        'LABEL org.opencontainers.image.description="GPU training stack resolved by envcheck" \\',
        f'      io.envcheck.matrix-version="{result.matrix_version}" \\',
        f'      io.envcheck.torch="{result.pins["torch"]}" \\',
        f'      io.envcheck.cuda="{result.cuda}" \\',
        f'      io.envcheck.run-flags="{RUN_FLAGS}"',
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
        "ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 UV_PYTHON_INSTALL_DIR=/opt/python UV_NO_CACHE=1 \\",
        "    VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH CUDA_HOME=/usr/local/cuda",
        "COPY --from=uv /uv /usr/local/bin/uv",
        f"COPY {lock} /tmp/requirements.lock.txt",
        f"{TRUST_CA} \\",
        f"    && uv venv --python {result.python} /opt/venv \\",
        f"    && uv pip install --require-hashes --no-deps{backend} -r /tmp/requirements.lock.txt",
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
