"""An index made of recorded answers (tests/assets/harvest/): `projects/NAME.json` holds the files of a project
as the live index listed them, `metadata/FILENAME` the metadata headers read from that file (an sdist's requires.txt
beside it as `FILENAME.requires.txt`). `RecordingIndex` wraps a live index and writes such a directory."""

from __future__ import annotations

import dataclasses
import json
import os

from envcheck.matrix.harvest.interface import IndexError_, IndexFile, Metadata


_URL_HEADERS = ("Home-page:", "Project-URL:", "Download-URL:", "Author-email:", "Maintainer-email:")


class RecordedIndex:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.description = f"recorded index answers in {directory}"
        self.bytes_read = 0

    def files(self, project: str) -> tuple[IndexFile, ...]:
        path = os.path.join(self.directory, "projects", f"{project}.json")
        if not os.path.isfile(path):
            return ()
        with open(path, encoding="utf-8") as handle:
            return tuple(IndexFile(**item) for item in json.load(handle))

    def metadata(self, project: str, file: IndexFile) -> Metadata:
        path = os.path.join(self.directory, "metadata", file.filename)
        if not os.path.isfile(path):
            raise IndexError_(f"{file.filename}: no recorded metadata")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        requires = f"{path}.requires.txt"
        requires_txt = open(requires, encoding="utf-8").read() if os.path.isfile(requires) else None
        return Metadata(text, requires_txt)


class RecordingIndex:
    """Answers from `inner`, also written under `directory` in RecordedIndex's layout (file URLs dropped)."""

    def __init__(self, inner, directory: str) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.directory = inner, directory
        self.description = inner.description

    @property
    def bytes_read(self) -> int:
        return getattr(self.inner, "bytes_read", 0)

    def files(self, project: str) -> tuple[IndexFile, ...]:
        found = self.inner.files(project)
        os.makedirs(os.path.join(self.directory, "projects"), exist_ok=True)
        with open(os.path.join(self.directory, "projects", f"{project}.json"), "w", encoding="utf-8") as handle:
            json.dump([{**dataclasses.asdict(f), "url": f.filename} for f in found], handle, indent=1, sort_keys=True)
            handle.write("\n")
        return found

    def metadata(self, project: str, file: IndexFile) -> Metadata:
        found = self.inner.metadata(project, file)
        os.makedirs(os.path.join(self.directory, "metadata"), exist_ok=True)
        path = os.path.join(self.directory, "metadata", file.filename)
        with open(path, "w", encoding="utf-8") as handle:
            headers = found.text.split("\n\n", 1)[0].splitlines()  # the long description is not needed
            handle.write("\n".join(h for h in headers if not h.startswith(_URL_HEADERS)) + "\n")
        if found.requires_txt is not None:
            with open(f"{path}.requires.txt", "w", encoding="utf-8") as handle:
                handle.write(found.requires_txt)
        return found
