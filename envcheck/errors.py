"""One root error and one subclass per kind, so the CLI can map them to exit codes."""

from __future__ import annotations


class EnvcheckError(Exception):
    """Root of every error envcheck raises on purpose."""


class UsageError(EnvcheckError):
    """Bad flags or unusable input: the CLI prints one line and exits 2."""


class SnapshotError(UsageError):
    """A snapshot file that cannot be read, parsed or understood."""

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)
