"""envcheck.pyz: envcheck itself as one file that an emitted Dockerfile COPYs, so no image installs envcheck from a
package index by name (the name there belongs to another project).

The archive holds the installed envcheck package (its .py files, the JSON schema, and the bundled compatibility
matrix as envcheck/compat_matrix) and a `__main__` that unpacks it into a private temporary directory, runs
envcheck.cli:main and removes the directory again: envcheck reads its matrix and probe script as files, which a
zip on sys.path cannot serve. The bytes depend only on those files: entries sorted, a fixed timestamp and mode,
stored uncompressed (zlib builds differ between machines; stored bytes do not). Its one runtime dependency,
`packaging` (and `tomli` below Python 3.11), comes from the stack's lock; nvidia-ml-py is optional (without it
the probe reads nvidia-smi and /proc/driver/nvidia).
"""

from __future__ import annotations

import io
import os
import zipfile

NAME = "envcheck.pyz"
SHEBANG = b"#!/usr/bin/env python3\n"
# What a Python interpreter needs beside the archive: packaging always, tomli where tomllib is missing.
RUNTIME_REQUIREMENTS = ("packaging",)
_STAMP = (1980, 1, 1, 0, 0, 0)
_PACKAGE_SUFFIXES = (".py", ".json")
_MATRIX_SUFFIXES = (".py", ".toml", ".md")

MAIN = '''\
"""envcheck in one file: unpack into a private temporary directory, run envcheck.cli:main, remove it."""
import atexit
import os
import shutil
import sys
import tempfile
import zipfile

archive = os.path.dirname(os.path.abspath(__file__))
target = tempfile.mkdtemp(prefix="envcheck-pyz-")
atexit.register(shutil.rmtree, target, True)
with zipfile.ZipFile(archive) as bundle:
    bundle.extractall(target, [n for n in bundle.namelist() if n.startswith("envcheck/")])
sys.path[:] = [target] + [p for p in sys.path if os.path.abspath(p or ".") != archive]
from envcheck.cli import main  # noqa: E402

raise SystemExit(main())
'''


def runtime_requirements(python: str) -> tuple[str, ...]:
    """Distributions the archive needs in an interpreter of version `python` ("3.11")."""
    major, minor = (int(part) for part in python.split(".")[:2])
    return RUNTIME_REQUIREMENTS + (("tomli",) if (major, minor) < (3, 11) else ())


def _walk(root: str, prefix: str, suffixes: tuple[str, ...], skip: tuple[str, ...] = ()) -> dict[str, str]:
    found = {}
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__" and not d.startswith(".")
                            and os.path.relpath(os.path.join(directory, d), root) not in skip)
        for name in names:
            if name.endswith(suffixes):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root).replace(os.sep, "/")
                found[f"{prefix}/{relative}"] = path
    return found


def sources() -> dict[str, str]:
    """Archive name -> file on disk, from the envcheck this interpreter imports (installed or a checkout)."""
    import envcheck
    from envcheck.matrix import bundled_matrix_dir

    package = os.path.dirname(os.path.abspath(envcheck.__file__))
    found = _walk(package, "envcheck", _PACKAGE_SUFFIXES, skip=("compat_matrix",))
    found.update(_walk(bundled_matrix_dir(), "envcheck/compat_matrix", _MATRIX_SUFFIXES))
    return found


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_STAMP)
    info.compress_type = zipfile.ZIP_STORED
    info.create_system = 3  # Unix, so the mode below is what unzip restores
    info.external_attr = 0o100644 << 16
    return info


def build() -> bytes:
    """The archive's bytes: the same for the same envcheck files on any machine, any day."""
    buffer = io.BytesIO()
    buffer.write(SHEBANG)
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(_entry("__main__.py"), MAIN.encode())
        for name, path in sorted(sources().items()):
            with open(path, "rb") as handle:
                archive.writestr(_entry(name), handle.read())
    return buffer.getvalue()
