"""Open a log for streaming: a file, gzip (detected by its magic bytes, not its name) or stdin.

Bad input is refused here with one clear line (exit 2): a missing file, a directory, an empty file, a binary file
(an ELF core dump passed as a log is named as such).
"""

from __future__ import annotations

import gzip
import os
import sys
import zlib
from typing import BinaryIO, Iterator

from envcheck.errors import UsageError

HEAD = 64 * 1024
FIRST_CHUNK = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_ELF_MAGIC = b"\x7fELF"


class LogInputError(UsageError):
    """A log that cannot be read or is not a text log."""


class _Prefixed:
    """A byte stream whose first bytes were already read (to sniff the format)."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            data, self._head = (self._head, b"") if size < 0 or size >= len(self._head) else \
                (self._head[:size], self._head[size:])
            return data
        return self._rest.read(size)


class OpenedLog:
    """A validated log: `chunks()` yields its (decompressed) bytes; `position()` is how far the raw file is read."""

    def __init__(self, name: str, raw: BinaryIO, size: int | None, owned: bool) -> None:
        self.name, self.size = name, size
        self.appended = 0  # a newline chunks() added at the end of a log that lacks one
        self._raw, self._owned = raw, owned
        head = _read_head(raw, name)
        self.compressed = head.startswith(_GZIP_MAGIC)
        if self.compressed:
            self._stream: object = gzip.GzipFile(fileobj=_Prefixed(head, raw), mode="rb")  # type: ignore[arg-type]
            self._first = _read_head(self._stream, name)  # type: ignore[arg-type]
        else:
            self._stream, self._first = raw, head
        _refuse_binary(self._first, name)

    def position(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def chunks(self, size: int) -> Iterator[bytes]:
        """The first chunk holds the sniffed head and what follows it up to FIRST_CHUNK: a traceback that starts in
        the head and ends after it is in one chunk (a pasted log is one chunk), and the copy that joins them stays
        small. A read that comes back short is the log's last (buffered reads fill up to EOF): it ends at a line end,
        so that a paste saved without its last newline has its last line read with the lines before it."""
        rest, want = b"", min(size, FIRST_CHUNK) - len(self._first)
        ended = len(self._first) < HEAD  # the head's read came back short: the whole log is in it
        if not ended and want > 0:
            try:
                rest = self._stream.read(want)  # type: ignore[attr-defined]
            except (OSError, EOFError, zlib.error) as error:
                raise LogInputError(f"{self.name}: cannot read: {error}") from None
            ended = len(rest) < want
        yield self._last(self._first + rest) if ended else self._first + rest
        while not ended:
            try:
                data = self._stream.read(size)  # type: ignore[attr-defined]
            except (OSError, EOFError, zlib.error) as error:
                raise LogInputError(f"{self.name}: cannot read: {error}") from None
            if not data:
                return
            ended = len(data) < size
            yield self._last(data) if ended else data

    def _last(self, data: bytes) -> bytes:
        """DATA, the log's last bytes, ending with a newline (`appended` counts one added, not read)."""
        if data.endswith(b"\n"):
            return data
        self.appended = 1
        return data + b"\n"

    def close(self) -> None:
        if self._owned:
            self._raw.close()

    def __enter__(self) -> OpenedLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_log(path: str) -> OpenedLog:
    """Open PATH (or '-' for stdin) as a log, or raise LogInputError saying why it is not one."""
    if path == "-":
        return OpenedLog("<stdin>", sys.stdin.buffer, None, owned=False)
    if not os.path.exists(path):
        raise LogInputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise LogInputError(f"{path}: is a directory; give the log file(s) inside it")
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise LogInputError(f"{path}: cannot open: {error.strerror or error}") from None
    try:
        size = os.fstat(handle.fileno()).st_size
        return OpenedLog(path, handle, size, owned=True)
    except BaseException:
        handle.close()
        raise


def _read_head(stream: BinaryIO, name: str) -> bytes:
    try:
        head = stream.read(HEAD)
    except (OSError, EOFError, zlib.error) as error:
        raise LogInputError(f"{name}: cannot read: {error}") from None
    if not head:
        raise LogInputError(f"{name}: is empty")
    return head


def _refuse_binary(head: bytes, name: str) -> None:
    if head.startswith(_ELF_MAGIC):
        raise LogInputError(f"{name}: is an ELF binary, not a log (a core dump? pass it with --core)")
    sample = head[:8192]
    # Text logs may hold stray NULs (a file cut by a crash) or colour codes, never a large share of control bytes.
    control = sum(1 for b in sample if b < 9 or 13 < b < 32 and b != 27)
    if control > len(sample) * 0.1:
        raise LogInputError(f"{name}: looks like a binary file, not a text log")
