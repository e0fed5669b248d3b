"""releases.toml: read the rows a previous harvest wrote, and write rows deterministically (sorted, headed)."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from packaging.version import Version

from envcheck.matrix.model import Release
from envcheck.serde import from_dict, to_dict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE_NAME = "releases.toml"
NEWEST_FILE_NAME = "newest.toml"
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def read(path: str) -> tuple[str | None, tuple[Release, ...]]:
    """(data_version, rows) of an existing file; (None, ()) when there is none."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return None, ()
    rows = tuple(from_dict(Release, item, f"release[{i}]", strict=True) for i, item in enumerate(data.get("release", [])))
    return data.get("data_version"), rows


def sort_key(row: Release) -> tuple[str, Version]:
    return (row.package, Version(row.version))


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _value(value: Any, indent: str = "") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        if not value:
            return "[]"
        if indent is None or len(value) <= 1:
            return "[" + ", ".join(_value(v) for v in value) + "]"
        return "[\n" + "".join(f"{indent}    {_value(v)},\n" for v in value) + f"{indent}]"
    raise TypeError(f"cannot write {type(value).__name__}")


def render(rows: tuple[Release, ...], data_version: str, header: list[str]) -> str:
    """The whole file. Scalars and lists of a row first, its tables after it, every list and table sorted, rows
    in (package, version) order: the same rows always give the same bytes."""
    lines = [f"# {line}" if line else "#" for line in header]
    lines += ["schema_version = 1", f'data_version = "{data_version}"', ""]
    for row in sorted(rows, key=sort_key):
        data = to_dict(row)
        lines.append("[[release]]")
        tables = []
        for name in ("package", "version", "source", "uploaded", "metadata_file", "requires_python", "sdist", "yanked",
                     "requires"):
            value = data[name]
            if value is None or (name == "yanked" and not value):
                continue
            lines.append(f"{name} = {_value(value)}")
        if data["wheel_tags"] is not None:
            tags = data["wheel_tags"]
            tables.append(("release.wheel_tags", [f"{k} = {_value(tags[k], None)}" for k in ("python", "abi", "platforms")]
                           + ([f"manylinux = {{ {', '.join(f'{_key(a)} = {_value(g)}' for a, g in tags['manylinux'].items())} }}"]
                              if tags["manylinux"] else [])))
        if data["pins"]:
            tables.append(("release.pins", [f"{_key(k)} = {_value(v)}" for k, v in data["pins"].items()]))
        if data["extras"]:
            tables.append(("release.extras", [f"{_key(k)} = {_value(v, None)}" for k, v in data["extras"].items()]))
        for title, body in tables:
            lines += [f"[{title}]", *body]
        lines.append("")
    return "\n".join(lines)


def newest(rows: tuple[Release, ...]) -> list[Release]:
    """The newest release of each package, in package order."""
    best: dict[str, Release] = {}
    for row in rows:
        if row.package not in best or Version(row.version) > Version(best[row.package].version):
            best[row.package] = row
    return [best[name] for name in sorted(best)]


def render_newest(rows: tuple[Release, ...], data_version: str, header: list[str]) -> str:
    lines = [f"# {line}" if line else "#" for line in header]
    lines += ["schema_version = 1", f'data_version = "{data_version}"', ""]
    for row in newest(rows):
        lines.append("[[newest_release]]")
        lines += [f"package = {_value(row.package)}", f"version = {_value(row.version)}", f"source = {_value(row.source)}"]
        if row.uploaded:
            lines.append(f"uploaded = {_value(row.uploaded)}")
        if row.requires_python:
            lines.append(f"requires_python = {_value(row.requires_python)}")
        lines.append("")
    return "\n".join(lines)
