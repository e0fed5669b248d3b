"""What the harvester needs from a package index, behind one interface so tests replace it with recordings.

An index serves, per project, its files (PEP 691's JSON form of the simple API: filename, upload time,
Requires-Python, yanked, size) and, per file, the core metadata text (a wheel's `.dist-info/METADATA`, an sdist's
`PKG-INFO` with its egg-info `requires.txt` appended). How the text is fetched (HTTP range reads of the wheel,
a recorded fixture, a cache) is the implementation's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    uploaded: str  # ISO 8601 upload time as the index reports it ("" when it does not)
    requires_python: str | None = None
    yanked: bool = False
    size: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Metadata:
    text: str  # METADATA / PKG-INFO (RFC 822 headers)
    requires_txt: str | None = None  # an sdist's egg-info requires.txt, when PKG-INFO carries no Requires-Dist
    bytes_read: int = 0  # bytes fetched from the index for it (0 from a cache or a recording)


class IndexError_(Exception):  # noqa: N801 - "IndexError" is a builtin
    """The index could not be read (the message says what and why)."""


class Index(Protocol):
    description: str  # how it was configured, without credentials ("pip's configured index", "recorded fixtures")

    def files(self, project: str) -> tuple[IndexFile, ...]:
        """Every file the index serves for the project (normalized name); empty when it has none."""
        ...

    def metadata(self, project: str, file: IndexFile) -> Metadata:
        """The core metadata of one file; raises IndexError_ when it cannot be read."""
        ...
