"""A full-size stack image built for real: lockfiles/<stack>/Dockerfile with its whole lock (torch and its CUDA
wheels), with podman (overlay storage, chroot isolation) on a base image made from Debian packages and a local uv
image standing in for the public ones (build arguments BASE_IMAGE and UV_IMAGE). Reports the build's wall time,
the image's size, and its distributions against the lock's pins; removes the images and storage afterwards.

    python benchmarks/bench_image_build.py [--stack hopper-ampere-580] [--scratch DIR]

Needs root, podman, buildah, mmdebstrap and the package index (see tests/image_engine.py)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from image_engine import Engine, lock_pins, missing  # noqa: E402

from envcheck.emit import lockfiles, zipapp  # noqa: E402
from envcheck.emit.requirements import find_uv  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="hopper-ampere-580", choices=[s.name for s in lockfiles.STACKS])
    parser.add_argument("--scratch", default=None, help="a directory for storage and the build context")
    args = parser.parse_args(argv)
    why = missing()
    uv = find_uv()
    if why or uv is None:
        print(f"bench_image_build: {why or 'uv is not installed'}", file=sys.stderr)
        return 2
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="envcheck-bench-image-"))
    context = scratch / "context"
    shutil.copytree(Path(lockfiles.ROOT) / args.stack, context, dirs_exist_ok=True)
    (context / zipapp.NAME).write_bytes(zipapp.build())
    lock = (context / "requirements.lock.txt").read_text()
    engine = Engine(scratch)
    try:
        started = time.monotonic()
        base = engine.make_base(scratch / "rootfs.tar", "localhost/envcheck-bench-base:latest", {})
        uv_image = engine.make_uv(uv, "localhost/envcheck-bench-uv:latest", scratch / "uv")
        prepared = time.monotonic() - started
        build = engine.build(context, f"localhost/envcheck-bench-{args.stack}:latest",
                             {"BASE_IMAGE": base, "UV_IMAGE": uv_image})
        installed, pinned = engine.freeze(build.image), lock_pins(lock)
        size = engine.size(build.image)
        last = engine.history(build.image)[0]
        print(f"stack {args.stack}: base + uv images {prepared:.1f} s, build {build.seconds:.1f} s, "
              f"image {size / 2**30:.2f} GiB, {len(installed)} distributions installed, {len(pinned)} in the lock, "
              f"identical: {installed == pinned}; last layer: {last}")
        for name, version in sorted(installed ^ pinned):
            print(f"  differs: {name}=={version} ({'installed' if (name, version) in installed else 'lock'})")
        return 0 if installed == pinned else 1
    finally:
        engine.close()
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"removed images and storage ({os.path.basename(str(scratch))})", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
