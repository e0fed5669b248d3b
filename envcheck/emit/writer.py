"""Put emitted files on disk: never overwrite an existing file unless forced, and say what was written."""

from __future__ import annotations

import os

from envcheck.errors import UsageError


def check_free(directory: str, names: list[str], force: bool) -> None:
    """Refuse before anything is written, so a refused run leaves no half-written set of files."""
    if not directory:
        raise UsageError("-o: give a directory")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"-o {directory}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(directory))
    if not os.path.isdir(directory) and not os.path.isdir(parent):
        raise UsageError(f"-o {directory}: its parent {parent} does not exist (only the last directory is created)")
    existing = [n for n in names if os.path.exists(os.path.join(directory, n))]
    if existing and not force:
        raise UsageError(f"{os.path.join(directory, existing[0])} exists; use --force to overwrite "
                         f"({len(existing)} file(s) would be replaced)")


def write(directory: str, files: dict[str, str | bytes]) -> list[str]:
    """Text files as UTF-8 with LF; bytes as they are (envcheck.pyz, made executable so it runs as a command)."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create {directory}: {error.strerror or error}") from None
    written = []
    for name in sorted(files):
        path = os.path.join(directory, name)
        content = files[name]
        try:
            if isinstance(content, bytes):
                with open(path, "wb") as handle:
                    handle.write(content)
                os.chmod(path, 0o755)
            else:
                with open(path, "w", encoding="utf-8", newline="\n") as handle:
                    handle.write(content)
        except OSError as error:
            raise UsageError(f"cannot write {path}: {error.strerror or error}") from None
        written.append(path)
    return written
