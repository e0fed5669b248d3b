"""A sha256 manifest per checkpoint: the only way to catch a flipped bit in safetensors, which has no checksum.

Written last, to a temporary file in the same directory and linked into place, so a manifest that exists is whole
and its presence marks a checkpoint that was verified complete when it was sealed. Never replaces an existing one
unless asked (--force).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from typing import Any

from envcheck.ckpt.integrity import Expected
from envcheck.ckpt.model import CORRUPT, FileResult, Problem

NAME = "ENVCHECK_MANIFEST.json"
FORMAT = "envcheck-ckpt-manifest"
VERSION = 1


def load(directory: str) -> tuple[dict[str, Expected] | None, Problem | None]:
    """(the files it records, or None when there is no manifest; a problem when it cannot be read)."""
    path = os.path.join(directory, NAME)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as error:
        return None, Problem(NAME, CORRUPT, f"manifest cannot be read: {error}")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None, Problem(NAME, CORRUPT, f"not an {FORMAT} file")
    if data.get("version") != VERSION:
        return None, Problem(NAME, CORRUPT, f"manifest version {data.get('version')!r}: this envcheck reads "
                                            f"version {VERSION} (upgrade envcheck)")
    try:
        return {str(f["path"]): Expected(int(f["size"]), str(f["sha256"])) for f in data["files"]}, None
    except (KeyError, TypeError, ValueError) as error:
        return None, Problem(NAME, CORRUPT, f"manifest entry unreadable: {error!r}")


def document(results: list[FileResult]) -> dict[str, Any]:
    from envcheck import __version__

    files = sorted(({"path": r.path, "size": r.size, "sha256": r.sha256} for r in results), key=lambda f: f["path"])
    return {"format": FORMAT, "version": VERSION, "algorithm": "sha256", "envcheck_version": __version__,
            "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "files": files}


def write(directory: str, results: list[FileResult], force: bool) -> str:
    """Write the manifest atomically; FileExistsError when one exists and force is off."""
    final = os.path.join(directory, NAME)
    if any(r.sha256 is None for r in results):
        raise ValueError("every file must be hashed before a manifest is written")
    fd, temporary = tempfile.mkstemp(prefix=f".{NAME}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document(results), handle, indent=1)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        if force:
            os.replace(temporary, final)
        else:
            os.link(temporary, final)  # fails if it exists: no window in which another writer is overwritten
            os.unlink(temporary)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    return final
