"""Pure functions from what the index serves (files, metadata text) to `[[release]]` rows of releases.toml."""

from __future__ import annotations

import email.parser
import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envcheck.matrix.harvest.interface import Metadata
from envcheck.matrix.harvest.select import IndexRelease
from envcheck.matrix.model import Release, WheelTags

# An extra's requirements are kept when they name one of these (the training stack the checks judge), so the file
# stays small enough to load at doctor start-up; base requirements are always kept whole.
STACK = frozenset({
    "accelerate", "bitsandbytes", "datasets", "deepspeed", "flash-attn", "flashinfer-python", "huggingface-hub",
    "llamafactory", "numpy", "peft", "pyarrow", "pydantic", "safetensors", "tokenizers", "torch", "torchaudio",
    "torchvision", "transformers", "triton", "trl", "vllm", "xformers",
})


def on_stack(text: str) -> bool:
    name = canonicalize_name(Requirement(text).name)
    return name in STACK or name.startswith("nvidia-")


_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(.+)$")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
_MACOS = re.compile(r"^macosx_\d+_\d+_(.+)$")


def requirement_text(requirement: Requirement, marker: str | None) -> str:
    """A requirement written the same way whatever its source wrote: normalized name, sorted extras and
    specifiers (packaging's order), the marker after '; '."""
    name = canonicalize_name(requirement.name)
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    url = f" @ {requirement.url}" if requirement.url else ""
    text = f"{name}{extras}{requirement.specifier}{url}"
    return f"{text}; {marker}" if marker else text


def _strip_extra(marker: str) -> tuple[list[str], str | None]:
    """The extras a marker names and what is left of it without them, for the usual forms
    `extra == "x"`, `A and extra == "x"`, `(extra == "x" or extra == "y") and A`. Anything else keeps the
    whole marker, so nothing is lost."""
    extras = sorted(set(_EXTRA.findall(marker)))
    if not extras:
        return [], marker
    rest = marker
    alternatives = r"""\(?\s*extra\s*==\s*["'][^"']+["'](?:\s+or\s+extra\s*==\s*["'][^"']+["'])*\s*\)?"""
    rest = re.sub(rf"\s+and\s+{alternatives}", "", rest)
    rest = re.sub(rf"{alternatives}\s+and\s+", "", rest)
    rest = re.sub(rf"^\s*{alternatives}\s*$", "", rest)
    if "extra" in rest:  # an unusual shape: keep it whole
        return extras, marker
    rest = rest.strip()
    if rest.startswith("(") and rest.endswith(")") and rest.count("(") == 1:
        rest = rest[1:-1].strip()
    return extras, rest or None


def split_requirements(lines: list[str]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], list[str]]:
    """Requires-Dist lines -> (base requirements, extra -> its requirements, lines that do not parse)."""
    base: set[str] = set()
    extras: dict[str, set[str]] = {}
    bad: list[str] = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            bad.append(line)
            continue
        marker = str(requirement.marker) if requirement.marker else None
        names, rest = _strip_extra(marker) if marker else ([], None)
        if not names:
            base.add(requirement_text(requirement, marker))
            continue
        for extra in names:
            extras.setdefault(canonicalize_name(extra), set()).add(requirement_text(requirement, rest))
    return tuple(sorted(base)), {k: tuple(sorted(v)) for k, v in sorted(extras.items())}, bad


def requires_txt_lines(text: str) -> list[str]:
    """An egg-info requires.txt (sections `[extra]`, `[:marker]`, `[extra:marker]`) as Requires-Dist lines."""
    lines, extra, marker = [], None, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, marker = line[1:-1].partition(":")
            extra, marker = extra.strip() or None, marker.strip() or None
            continue
        parts = [f"({marker})" if marker and extra else marker] if marker else []
        if extra:
            parts.append(f'extra == "{extra}"')
        lines.append(f"{line}; {' and '.join(p for p in parts if p)}" if parts else line)
    return lines


def wheel_tags(filenames: list[str]) -> WheelTags | None:
    """What the release's wheels were built for: Python tags, ABIs, platforms (manylinux and macOS versions
    folded), the lowest manylinux glibc per architecture. None for a release with no wheel."""
    pythons, abis, platforms = set(), set(), set()
    floors: dict[str, tuple[int, ...]] = {}
    for filename in filenames:
        try:
            tags = parse_wheel_filename(filename)[3]
        except InvalidWheelFilename:
            continue
        for tag in tags:
            pythons.add(tag.interpreter)
            abis.add(tag.abi)
            platform = tag.platform
            found = _MANYLINUX.match(platform)
            legacy = next((v for k, v in _LEGACY_MANYLINUX.items() if platform.startswith(k + "_")), None)
            if found or legacy:
                arch = found.group(3) if found else platform.split("_", 1)[1]
                glibc = (int(found.group(1)), int(found.group(2))) if found else tuple(int(p) for p in legacy.split("."))
                floors[arch] = min(floors.get(arch, glibc), glibc)
                platforms.add(f"manylinux_{arch}")
            elif (mac := _MACOS.match(platform)) is not None:
                platforms.add(f"macosx_{mac.group(1)}")
            else:
                platforms.add(platform)
    if not pythons:
        return None
    return WheelTags(
        python=tuple(sorted(pythons, key=_python_key)),
        abi=tuple(sorted(abis, key=_python_key)),
        platforms=tuple(sorted(platforms)),
        manylinux={arch: ".".join(map(str, floor)) for arch, floor in sorted(floors.items())},
    )


def _python_key(tag: str) -> tuple[str, int, str]:
    digits = re.match(r"^([a-z]+)(\d+)(.*)$", tag)
    return (digits.group(1), int(digits.group(2)), digits.group(3)) if digits else (tag, 0, "")


def pins(requires: tuple[str, ...]) -> dict[str, str]:
    """torch's pins of its CUDA libraries (nvidia-*, cuda-toolkit) and triton, from the Linux x86_64 wheel: the
    version of an exact `==` pin, else the specifier as written (`~=3.9.0`)."""
    found = {}
    for text in requires:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if not (name.startswith("nvidia-") or name in ("triton", "pytorch-triton", "cuda-toolkit")):
            continue
        exact = [s.version for s in requirement.specifier if s.operator in ("==", "===")]
        if len(exact) == 1:
            found[name] = exact[0]
        elif requirement.specifier:
            found[name] = str(requirement.specifier)
    return dict(sorted(found.items()))


def release_row(release: IndexRelease, filename: str, metadata: Metadata) -> Release:
    """The row for one release, from the metadata of `filename` (one of its files) and the names of all its files."""
    headers = email.parser.Parser().parsestr(metadata.text, headersonly=True)
    lines = [str(v) for v in headers.get_all("Requires-Dist") or []]
    if not lines and metadata.requires_txt:
        lines = requires_txt_lines(metadata.requires_txt)
    base, extras, _bad = split_requirements(lines)
    extras = {name: kept for name, reqs in extras.items() if (kept := tuple(r for r in reqs if on_stack(r)))}
    requires_python = headers.get("Requires-Python")
    requires_python = str(requires_python).strip() if requires_python else None
    if not requires_python:  # older metadata: the index's per-file value, if any
        requires_python = next((f.requires_python for f in release.files if f.filename == filename and f.requires_python), None)
    kind = "wheel" if filename.endswith(".whl") else "sdist"
    wheels = [f.filename for f in release.files if f.filename.endswith(".whl")]
    project = canonicalize_name(release.project)
    return Release(
        package=project,
        version=release.version,
        source=f"{kind} metadata of {project}=={release.version}",
        uploaded=release.uploaded,
        metadata_file=filename,
        requires_python=requires_python,
        requires=base,
        extras=dict(sorted(extras.items())),
        wheel_tags=wheel_tags(wheels),
        sdist=any(f.filename.endswith((".tar.gz", ".zip")) for f in release.files),
        yanked=release.yanked,
        pins=pins(base) if project == "torch" else {},
    )
