"""Which nodes: a DeepSpeed hostfile (`host slots=N`), a host list with pdsh/Slurm ranges (`node[1-4,7]`), or the
Slurm allocation (SLURM_JOB_NODELIST expanded by `scontrol show hostnames`); and the reverse, a compact name for
a group of nodes (`node[1-63]`), as dshbak -c shows them."""

from __future__ import annotations

import re
import subprocess

from envcheck.errors import UsageError

_RANGE = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<body>[^\[\]]+)\](?P<suffix>[^\[\]]*)$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: "a[1-2,4],b" -> ["a[1-2,4]", "b"]."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += char == "["
        depth -= char == "]"
        current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def expand(text: str) -> tuple[str, ...]:
    """`node[1-3,7],gpu01` -> node1 node2 node3 node7 gpu01; zero padding is kept (`n[01-03]`)."""
    hosts: list[str] = []
    for part in _split_top(text):
        match = _RANGE.match(part)
        if not match:
            if "[" in part or "]" in part:
                raise UsageError(f"cannot read the host range {part!r} (use name[1-4,7])")
            hosts.append(part)
            continue
        for item in match.group("body").split(","):
            low, sep, high = item.strip().partition("-")
            if not low.isdigit() or (sep and not high.isdigit()):
                raise UsageError(f"cannot read the host range {part!r} (use name[1-4,7])")
            width = len(low) if low.startswith("0") else 0
            for number in range(int(low), int(high if sep else low) + 1):
                hosts.append(f"{match.group('prefix')}{number:0{width}d}{match.group('suffix')}")
    return tuple(dict.fromkeys(hosts))


def read_hostfile(path: str) -> tuple[str, ...]:
    """DeepSpeed's hostfile: one `hostname slots=N` a line; `#` comments and blank lines ignored."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        raise UsageError(f"--hostfile {path}: cannot read: {error.strerror or error}") from None
    hosts = []
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *rest = line.split()
        for item in rest:
            key, sep, value = item.partition("=")
            if key != "slots" or not sep or not value.isdigit():
                raise UsageError(f"--hostfile {path}, line {number}: expected 'hostname slots=N', got {raw.strip()!r}")
        hosts.append(name)
    if not hosts:
        raise UsageError(f"--hostfile {path}: no hosts in it")
    return tuple(dict.fromkeys(hosts))


def slurm_nodes(nodelist: str) -> tuple[str, ...]:
    """Expand a Slurm node list with `scontrol show hostnames` (it knows every form Slurm writes)."""
    try:
        done = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return expand(nodelist)  # no scontrol here (a login node without Slurm's tools): the common forms
    except subprocess.TimeoutExpired:
        raise UsageError("scontrol show hostnames did not answer within 30 s") from None
    if done.returncode != 0:
        raise UsageError(f"scontrol show hostnames {nodelist}: {done.stderr.strip() or 'failed'}")
    return tuple(dict.fromkeys(done.stdout.split()))


_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<number>\d+)(?P<suffix>\D*)$")


def compress(nodes: tuple[str, ...] | list[str]) -> str:
    """node1 node2 node3 node7 gpu01 -> "gpu01,node[1-3,7]" (the reverse of expand)."""
    plain: list[str] = []
    numbered: dict[tuple[str, str, int], list[int]] = {}
    for node in nodes:
        match = _NUMBERED.match(node)
        if not match:
            plain.append(node)
            continue
        digits = match.group("number")
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        numbered.setdefault((match.group("prefix"), match.group("suffix"), width), []).append(int(digits))
    parts = list(sorted(set(plain)))
    for (prefix, suffix, width), numbers in sorted(numbered.items()):
        numbers = sorted(set(numbers))
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}{suffix}")
            continue
        spans, start, last = [], numbers[0], numbers[0]
        for number in numbers[1:] + [None]:  # type: ignore[list-item]
            if number is not None and number == last + 1:
                last = number
                continue
            spans.append(f"{start:0{width}d}" if start == last else f"{start:0{width}d}-{last:0{width}d}")
            if number is not None:
                start = last = number
        parts.append(f"{prefix}[{','.join(spans)}]{suffix}")
    return ",".join(parts)
