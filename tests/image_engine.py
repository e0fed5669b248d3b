"""Real image builds on this machine: podman/buildah from Debian packages as root, overlay storage in a private
directory, chroot isolation, a base image made from Debian packages with mmdebstrap, and a uv tool image holding
the uv this checkout tests with. Used by tests/test_image_build.py and benchmarks/bench_image_build.py.

Nothing comes from an image registry: the emitted Dockerfiles take their base and uv images as build arguments
(BASE_IMAGE, UV_IMAGE), pointed here at the local images. A host that re-signs TLS (a corporate proxy, or this
network) is trusted inside a build through the Dockerfiles' optional `ca` secret, the host's own CA bundle."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = ("podman", "buildah", "mmdebstrap")
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates", "passwd")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


class EngineError(RuntimeError):
    """A command of the engine failed; the message ends with its output."""


def missing() -> str | None:
    """Why real builds cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "image builds run as root (overlay storage, chroot isolation)"
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install podman buildah mmdebstrap uidmap)"
    return None


def host_apt_sources() -> list[str]:
    """The host's own apt source files (deb822 and one-line), which mmdebstrap pastes into the new root."""
    found = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    return [str(p) for p in found if p.is_file() and p.suffix in (".sources", ".list") and p.stat().st_size > 0]


def host_codename() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    raise EngineError("/etc/os-release names no VERSION_CODENAME")


def lock_pins(lock: str) -> set[tuple[str, str]]:
    """(normalized name, version) for every `name==version` in a requirements lock."""
    from packaging.utils import canonicalize_name

    return {(canonicalize_name(m.group(1)), m.group(2)) for m in map(PIN.match, lock.splitlines()) if m}


@dataclass
class Build:
    image: str
    seconds: float
    log: str


@dataclass
class Engine:
    """podman and buildah on private overlay storage under `root`; every image it makes is removed by close()."""

    root: Path
    images: list[str] = field(default_factory=list)

    def _storage(self) -> list[str]:
        return ["--root", str(self.root / "storage"), "--runroot", str(self.root / "run"),
                "--storage-driver", "overlay"]

    def run(self, tool: str, *args: str, timeout: float = 1800,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([tool, *self._storage(), *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            output = (done.stdout + done.stderr)[-4000:]
            raise EngineError(f"{tool} {' '.join(args[:3])} exit {done.returncode}:\n{output}")
        return done

    def make_base(self, rootfs: Path, image: str, env: dict[str, str]) -> str:
        """A base image from Debian packages: the host's release with its Python, imported with `env` set."""
        if not rootfs.exists():
            partial = rootfs.with_name(f"partial-{rootfs.name}")  # mmdebstrap picks the format by the suffix
            done = subprocess.run(["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                                   host_codename(), str(partial), *host_apt_sources()], capture_output=True,
                                  text=True, timeout=900, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise EngineError(f"mmdebstrap exit {done.returncode}:\n{done.stderr[-3000:]}")
            partial.rename(rootfs)
        changes = [a for key, value in env.items() for a in ("--change", f"ENV {key}={value}")]
        self.run("podman", "import", *changes, str(rootfs), image)
        self.images.append(image)
        return image

    def make_uv(self, uv: str, image: str, scratch: Path) -> str:
        """A uv tool image laid out as the public one (/uv), holding the given uv binary."""
        scratch.mkdir(parents=True, exist_ok=True)
        shutil.copy(uv, scratch / "uv")
        (scratch / "Containerfile").write_text("FROM scratch\nCOPY uv /uv\n")
        self.run("podman", "build", "--isolation", "chroot", "-q", "-t", image, "-f",
                 str(scratch / "Containerfile"), str(scratch))
        self.images.append(image)
        return image

    def build(self, context: Path, image: str, build_args: dict[str, str], dockerfile: Path | None = None,
              no_cache: bool = False, check: bool = True) -> Build:
        """`podman build` with chroot isolation and the host network; the host's CA bundle as the `ca` secret."""
        args = ["build", "--isolation", "chroot", "--network", "host", "--format", "docker", "-t", image]
        args += [a for key, value in build_args.items() for a in ("--build-arg", f"{key}={value}")]
        if os.path.exists(HOST_CA_BUNDLE):
            args += ["--secret", f"id=ca,src={HOST_CA_BUNDLE}"]
        args += ["--no-cache"] if no_cache else []
        args += ["-f", str(dockerfile or context / "Dockerfile"), str(context)]
        started = time.monotonic()
        self.images.append(image)
        done = self.run("podman", *args, check=check)
        return Build(image, time.monotonic() - started, done.stdout + done.stderr)

    def inside(self, image: str, *command: str) -> str:
        """stdout of `command` run in a container of `image` (buildah, chroot isolation: no OCI runtime needed)."""
        container = self.run("buildah", "from", "--pull-never", image).stdout.strip().splitlines()[-1]
        try:
            return self.run("buildah", "run", "--isolation", "chroot", container, "--", *command).stdout
        finally:
            self.run("buildah", "rm", container, check=False)

    def freeze(self, image: str) -> set[tuple[str, str]]:
        """(normalized name, version) of every distribution in the image's /opt/venv, from `uv pip freeze` there."""
        return lock_pins(self.inside(image, "uv", "pip", "freeze", "--python", "/opt/venv/bin/python"))

    def history(self, image: str) -> list[str]:
        """The instructions that made the image's layers, newest first."""
        done = self.run("podman", "history", "--no-trunc", "--format", "{{.CreatedBy}}", image)
        return done.stdout.splitlines()

    def size(self, image: str) -> int:
        return int(self.run("podman", "image", "inspect", "--format", "{{.Size}}", image).stdout.strip())

    def remove(self, image: str) -> None:
        self.run("podman", "rmi", "--force", image, check=False)
        self.images = [i for i in self.images if i != image]

    def close(self) -> None:
        """Remove every container and image this engine made, then its storage."""
        self.run("buildah", "rm", "--all", check=False)
        for image in reversed(self.images):
            self.run("podman", "rmi", "--force", image, check=False)
        self.run("podman", "rmi", "--all", "--force", check=False)
        subprocess.run(["umount", "-R", str(self.root / "storage" / "overlay")], capture_output=True)
        shutil.rmtree(self.root / "storage", ignore_errors=True)
        shutil.rmtree(self.root / "run", ignore_errors=True)
