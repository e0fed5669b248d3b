# syntax=docker/dockerfile:1
# The reproducible training image, built from one stack in lockfiles/ (see lockfiles/README.md), with envcheck.
#   docker build --build-arg STACK=hopper-ampere-580 --build-arg BASE_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04 -t train .
# BASE_IMAGE must be the ARG BASE_IMAGE default of lockfiles/$STACK/Dockerfile; the build fails when its CUDA differs
# from the stack's (lockfiles/$STACK/cuda.txt), and when `envcheck doctor` finds an error in the finished image.
# UV_IMAGE (default the public uv image) can name a mirror. Behind a TLS-intercepting proxy, hand the build its CA
# bundle as a secret, used only by the steps that reach the package index: --secret id=ca,src=CA_BUNDLE.pem
# Run with: docker run --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 train
#   (--ipc=host: DataLoader workers and NCCL need more than Docker's 64 MB /dev/shm; else --shm-size=16g)
ARG BASE_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9
FROM ${UV_IMAGE} AS uv

FROM ${BASE_IMAGE}
ARG STACK=hopper-ampere-580
LABEL org.opencontainers.image.description="GPU training image from envcheck lockfiles" \
      io.envcheck.run-flags="--gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 UV_PYTHON_INSTALL_DIR=/opt/python UV_NO_CACHE=1 \
    VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH CUDA_HOME=/usr/local/cuda
COPY --from=uv /uv /usr/local/bin/uv
COPY lockfiles/${STACK}/ /opt/stack/
# The base image's CUDA (CUDA_VERSION, set by nvidia/cuda images) must be the stack's: nvcc builds DeepSpeed ops.
RUN want="$(cat /opt/stack/cuda.txt)"; have="${CUDA_VERSION%.*}"; \
    if [ "$want" != "$have" ]; then echo "BASE_IMAGE has CUDA $have, stack $STACK needs $want" >&2; exit 1; fi
RUN --mount=type=secret,id=ca if [ -s /run/secrets/ca ]; then export SSL_CERT_FILE=/run/secrets/ca; fi \
    && python_version="$(sed -n 's/.*--python-version \([0-9.]*\).*/\1/p' /opt/stack/requirements.lock.txt)" \
    && uv venv --python "$python_version" /opt/venv \
    && uv pip install --require-hashes --no-deps -r /opt/stack/requirements.lock.txt
COPY pyproject.toml README.md /src/envcheck/
COPY envcheck/ /src/envcheck/envcheck/
COPY compat_matrix/ /src/envcheck/compat_matrix/
RUN --mount=type=secret,id=ca if [ -s /run/secrets/ca ]; then export SSL_CERT_FILE=/run/secrets/ca; fi \
    && uv pip install --no-deps /src/envcheck \
    && useradd --create-home --uid 1000 trainer
USER 1000
WORKDIR /home/trainer
RUN envcheck doctor --no-deep --fail-on error
