"""Shared fixtures: throwaway Python environments with chosen distributions, and snapshot helpers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ASSETS = Path(__file__).parent / "assets"
REPO = Path(__file__).parent.parent
SCHEMA_PATH = REPO / "envcheck" / "schema" / "snapshot.schema.json"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_gpu = shutil.which("nvidia-smi") is not None and os.path.exists("/proc/driver/nvidia/version")
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU with a working driver")
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(skip_gpu)


@dataclass
class FakeEnv:
    """A real venv (real interpreter, real site-packages) whose installed distributions the test chooses."""

    root: Path
    python: Path
    site: Path

    def add_dist(self, name: str, version: str, requires: tuple[str, ...] = (), files: dict[str, str] | None = None,
                 site: Path | None = None, metadata: str | None = None) -> Path:
        target = site or self.site
        dist_info = target / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir(parents=True)
        if metadata is None:
            lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
            lines += [f"Requires-Dist: {r}" for r in requires]
            metadata = "\n".join(lines) + "\n\nA long description that the probe must not need to parse.\n"
        (dist_info / "METADATA").write_text(metadata)
        record = []
        for relative, content in (files or {}).items():
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            record.append(f"{relative},,")
        (dist_info / "RECORD").write_text("\n".join(record) + "\n")
        return dist_info


def make_venv(root: Path) -> FakeEnv:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    return FakeEnv(root, python, site)


@pytest.fixture
def fake_env(tmp_path: Path) -> FakeEnv:
    return make_venv(tmp_path / "venv")


def torch_version_file(version: str, cuda: str | None) -> str:
    """torch/version.py in the shape torch's build writes it."""
    return textwrap.dedent(f"""\
        from typing import Optional

        __all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
        __version__ = '{version}'
        debug = False
        cuda: Optional[str] = {cuda!r}
        git_version = '0123456789abcdef0123456789abcdef01234567'
        hip: Optional[str] = None
        xpu: Optional[str] = None
        """)


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def assert_valid_snapshot(data: dict) -> None:
    import jsonschema

    jsonschema.validate(data, schema())


def load_asset_snapshot(name: str):  # type: ignore[no-untyped-def]
    from envcheck.snapshot import load_snapshot

    return load_snapshot(str(ASSETS / "snapshots" / name))
