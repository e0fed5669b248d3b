"""Which releases to harvest and which file of a release to read its metadata from."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envcheck.matrix.harvest.interface import IndexFile


@dataclass(frozen=True)
class IndexRelease:
    project: str
    version: str
    files: tuple[IndexFile, ...]

    @property
    def uploaded(self) -> str:
        """The day of the first upload (YYYY-MM-DD), "" when the index gives no times."""
        times = sorted(f.uploaded for f in self.files if f.uploaded)
        return times[0][:10] if times else ""

    @property
    def yanked(self) -> bool:
        return bool(self.files) and all(f.yanked for f in self.files)


def file_version(project: str, filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return None


def releases(project: str, files: tuple[IndexFile, ...]) -> list[IndexRelease]:
    """Final releases (no pre-, dev- or local versions) with their wheel and sdist files, oldest first."""
    grouped: dict[Version, list[IndexFile]] = {}
    for item in files:
        version = file_version(project, item.filename)
        if version is None or version.is_prerelease or version.is_devrelease or version.local:
            continue
        grouped.setdefault(version, []).append(item)
    return [IndexRelease(project, str(v), tuple(sorted(grouped[v], key=lambda f: f.filename))) for v in sorted(grouped)]


def _wheel_rank(filename: str) -> tuple[int, int, int, str]:
    """Higher is better: Linux x86_64 (the training-stack machine) over any-platform over the rest; a CPython
    build over others; the newest CPython; then the name, so the choice is deterministic."""
    _name, _version, _build, tags = parse_wheel_filename(filename)
    platforms = {t.platform for t in tags}
    interpreters = {t.interpreter for t in tags}
    abis = {t.abi for t in tags}
    if any(p.endswith("x86_64") and ("linux" in p) for p in platforms):
        platform_rank = 3
    elif "any" in platforms:
        platform_rank = 2
    elif any("linux" in p for p in platforms):
        platform_rank = 1
    else:
        platform_rank = 0
    free_threaded = any(a.endswith("t") and a.startswith("cp3") for a in abis)
    cpython = max((int(i[3:]) for i in interpreters if i.startswith("cp3") and i[3:].isdigit()), default=0)
    return (platform_rank, 0 if free_threaded else 1, cpython, filename)


def metadata_file(release: IndexRelease) -> IndexFile | None:
    """The wheel whose metadata stands for the release (see _wheel_rank), else its sdist, else None."""
    wheels = []
    for item in release.files:
        if item.filename.endswith(".whl"):
            try:
                wheels.append((_wheel_rank(item.filename), item))
            except InvalidWheelFilename:
                continue
    if wheels:
        return max(wheels, key=lambda pair: pair[0])[1]
    sdists = [f for f in release.files if f.filename.endswith(".tar.gz")]
    return sdists[0] if sdists else None
