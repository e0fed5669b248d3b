"""Read each file once, in fixed-size chunks, and check what its format allows without torch.

safetensors has no checksum of its tensor bytes, so its header, offsets and size are checked (as the library does
on load); a torch.save file is a zip whose records carry CRC-32s, checked here in the same streaming pass that
hashes the file when a hash is wanted (--deep, or a manifest to compare with). Memory stays one buffer per worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from envcheck.ckpt.model import CORRUPT, MISSING, TRUNCATED, FileResult, Problem

CHUNK = 4 << 20
MAX_HEADER = 100_000_000          # safetensors' MAX_HEADER_SIZE
MAX_JSON = 64 << 20
PARALLEL = min(4, os.cpu_count() or 1)  # threads for one big file (hashlib and zlib release the GIL)
PARALLEL_BYTES = 64 << 20
DTYPE_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8,
              "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
              "F64": 64, "I64": 64, "U64": 64, "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}
Progress = Callable[[int], None]


@dataclass(frozen=True)
class Expected:
    """A manifest's record of a file."""

    size: int
    sha256: str


@dataclass
class _Span:
    """A zip record's data bytes: [start, end) in the file, with the CRC the archive recorded."""

    name: str
    start: int
    end: int
    crc: int
    running: int = 0


def _p(rel: str, kind: str, detail: str) -> Problem:
    return Problem(file=rel, kind=kind, detail=detail)


def safetensors_problems(rel: str, path: str, size: int) -> list[Problem]:
    """The header parses, every tensor's span matches dtype x shape, spans tile the buffer, the file ends there."""
    if size < 8:
        return [_p(rel, TRUNCATED, f"{size} bytes: shorter than the 8-byte header length")]
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > MAX_HEADER:
            return [_p(rel, CORRUPT, f"header length {length} is over safetensors' limit: not a safetensors file")]
        if 8 + length > size:
            return [_p(rel, TRUNCATED, f"{size} bytes, but the header alone needs {8 + length}")]
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return [_p(rel, CORRUPT, f"header is not JSON: {error}")]
    if not isinstance(header, dict):
        return [_p(rel, CORRUPT, "header is not a JSON object")]
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
            numel = 1
            for dim in shape:
                numel *= int(dim)
            bits = DTYPE_BITS[dtype]
        except (KeyError, TypeError, ValueError):
            return [_p(rel, CORRUPT, f"tensor {name!r}: unreadable header entry {info!r}"[:300])]
        if (end - begin) * 8 != numel * bits:
            return [_p(rel, CORRUPT, f"tensor {name!r}: {end - begin} bytes for {dtype} {shape}")]
        spans.append((begin, end, name))
    spans.sort()
    cursor = 0
    for begin, end, name in spans:
        if begin != cursor:
            return [_p(rel, CORRUPT, f"tensor {name!r} starts at {begin}, expected {cursor} (offsets overlap "
                                     f"or leave a hole)")]
        cursor = end
    want = 8 + length + cursor
    if size < want:
        return [_p(rel, TRUNCATED, f"{size} bytes, but its header describes {want}: the file was cut short")]
    if size > want:
        return [_p(rel, CORRUPT, f"{size - want} bytes after the last tensor (header describes {want})")]
    return []


def json_problems(rel: str, path: str, size: int) -> list[Problem]:
    if size > MAX_JSON:
        return [_p(rel, CORRUPT, f"{size} bytes: too big for a checkpoint's JSON file")]
    try:
        with open(path, "rb") as handle:
            json.loads(handle.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        kind = TRUNCATED if "Expecting" in str(error) and "char" in str(error) else CORRUPT
        return [_p(rel, kind, f"is not valid JSON: {error}")]
    return []


def zip_spans(rel: str, path: str, size: int) -> tuple[list[_Span], list[Problem], list[str]]:
    """The records of a torch.save zip and where their bytes lie, or why it cannot be read as one."""
    with open(path, "rb") as handle:
        magic = handle.read(4)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        if magic == b"PK\x03\x04":
            return [], [_p(rel, TRUNCATED, f"a zip with no end record ({error}): the file was cut short")], []
        if magic[:1] == b"\x80":
            return [], [], ["legacy (non-zip) torch.save format: no CRCs to check"]
        return [], [_p(rel, CORRUPT, f"not a zip archive (torch.save writes one): {error}")], []
    spans, notes, problems = [], [], []
    with archive:
        infos = archive.infolist()
        with open(path, "rb") as handle:
            for info in infos:
                handle.seek(info.header_offset)
                local = handle.read(30)
                if len(local) < 30 or local[:4] != b"PK\x03\x04":
                    problems.append(_p(rel, CORRUPT, f"record {info.filename}: bad local header"))
                    continue
                name_len, extra_len = struct.unpack("<HH", local[26:30])
                start = info.header_offset + 30 + name_len + extra_len
                if info.compress_type != zipfile.ZIP_STORED:
                    try:
                        with archive.open(info) as member:  # zipfile checks the CRC at the end
                            while member.read(CHUNK):
                                pass
                    except (zipfile.BadZipFile, OSError, zlib.error) as error:
                        problems.append(_p(rel, CORRUPT, f"record {info.filename}: {error}"))
                    continue
                if start + info.compress_size > size:
                    problems.append(_p(rel, TRUNCATED, f"record {info.filename} runs past the end of the file"))
                    continue
                spans.append(_Span(info.filename, start, start + info.compress_size, info.CRC))
    if spans and all(s.crc == 0 for s in spans if s.end > s.start):
        notes.append("no CRC-32s recorded (saved with compute_crc32=False): records not checked")
        spans = []
    return sorted(spans, key=lambda s: s.start), problems, notes


def _crc_spans(chunk: memoryview, offset: int, spans: list[_Span], index: int) -> int:
    """Fold the chunk at `offset` into every span it overlaps; returns the first span not yet finished."""
    end = offset + len(chunk)
    while index < len(spans) and spans[index].start < end:
        span = spans[index]
        lo, hi = max(span.start, offset), min(span.end, end)
        if hi > lo:
            span.running = zlib.crc32(chunk[lo - offset:hi - offset], span.running)
        if span.end > end:
            break
        index += 1
    return index


def _open(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    return fd


def _crc_range(path: str, spans: list[_Span], progress: Progress | None) -> int:
    """CRC-32 of a run of spans, read with pread from the first span's start to the last one's end."""
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    fd = _open(path)
    try:
        offset, stop, index = spans[0].start, spans[-1].end, 0
        while offset < stop:
            got = os.preadv(fd, [view[:min(CHUNK, stop - offset)]], offset)
            if not got:
                break
            index = _crc_spans(view[:got], offset, spans, index)
            offset += got
            if progress is not None:
                progress(got)
    finally:
        os.close(fd)
    return offset - spans[0].start


def _split(spans: list[_Span], parts: int) -> list[list[_Span]]:
    """Consecutive groups of spans with about the same number of bytes each."""
    total = sum(s.end - s.start for s in spans)
    groups: list[list[_Span]] = [[]]
    done = 0
    for span in spans:
        if groups[-1] and done >= total * len(groups) / parts and len(groups) < parts:
            groups.append([])
        groups[-1].append(span)
        done += span.end - span.start
    return groups


def stream(path: str, spans: list[_Span], want_hash: bool, progress: Progress | None,
           buffer: bytearray) -> tuple[int, str | None]:
    """Read the file once in fixed-size chunks: CRC-32 of each zip span, sha256 of everything when asked.

    sha256 must see the bytes in order, so with a hash the CRCs run beside it on a second core, chunk by chunk;
    CRCs alone are independent per record, so a big archive's records are split between threads."""
    size = os.path.getsize(path)
    if not want_hash and spans and size >= PARALLEL_BYTES and PARALLEL > 1:
        groups = [g for g in _split(spans, PARALLEL) if g]
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            return sum(pool.map(lambda g: _crc_range(path, g, progress), groups)), None
    digest = hashlib.sha256() if want_hash else None
    view = memoryview(buffer)
    offset, index = 0, 0
    helper = ThreadPoolExecutor(max_workers=1) if digest is not None and spans and size >= PARALLEL_BYTES else None
    fd = _open(path)
    try:
        while True:
            got = os.readv(fd, [view])
            if not got:
                break
            chunk = view[:got]
            if helper is not None:
                pending = helper.submit(_crc_spans, chunk, offset, spans, index)
                digest.update(chunk)  # type: ignore[union-attr]
                index = pending.result()
            else:
                if digest is not None:
                    digest.update(chunk)
                index = _crc_spans(chunk, offset, spans, index)
            offset += got
            if progress is not None:
                progress(got)
    finally:
        os.close(fd)
        if helper is not None:
            helper.shutdown()
    return offset, digest.hexdigest() if digest is not None else None


def check_file(root: str, rel: str, check: str, want_hash: bool, expected: Expected | None,
               progress: Progress | None = None, buffer: bytearray | None = None) -> FileResult:
    """Every check the file's format and the manifest allow, reading it at most once."""
    path = os.path.join(root, rel)
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return FileResult(rel, 0, 0, None, (_p(rel, MISSING, "not found"),))
    except OSError as error:
        return FileResult(rel, 0, 0, None, (_p(rel, CORRUPT, f"cannot be read: {error.strerror}"),))
    if size == 0:
        return FileResult(rel, 0, 0, None, (_p(rel, TRUNCATED, "empty (0 bytes)"),))
    problems: list[Problem] = []
    notes: list[str] = []
    spans: list[_Span] = []
    want_hash = want_hash or expected is not None
    try:
        if check == "safetensors":
            problems += safetensors_problems(rel, path, size)
        elif check == "json":
            problems += json_problems(rel, path, size)
        elif check == "zip":
            spans, found, notes = zip_spans(rel, path, size)
            problems += found
        read, sha = 0, None
        if spans or want_hash:
            read, sha = stream(path, spans, want_hash, progress, buffer or bytearray(CHUNK))
        for span in spans:
            if span.running != span.crc:
                problems.append(_p(rel, CORRUPT, f"record {span.name}: CRC-32 {span.running:08x} does not "
                                                 f"match the recorded {span.crc:08x}"))
        if check == "zip" and spans and not problems:
            problems += storage_problems(rel, path, notes)
    except OSError as error:
        return FileResult(rel, size, 0, None, (_p(rel, CORRUPT, f"read failed: {error.strerror or error}"),))
    if expected is not None:
        if size != expected.size:
            kind = TRUNCATED if size < expected.size else CORRUPT
            problems.append(_p(rel, kind, f"{size} bytes, the manifest recorded {expected.size}"))
        elif sha != expected.sha256:
            problems.append(_p(rel, CORRUPT, "sha256 differs from the manifest: its bytes changed after it "
                                             "was written"))
    return FileResult(rel, size, read, sha, tuple(problems), tuple(notes))


def storage_problems(rel: str, path: str, notes: list[str]) -> list[Problem]:
    """Every tensor storage that data.pkl names has its `data/<key>` record (read by the restricted unpickler)."""
    from envcheck.ckpt.unpickle import read_archive_pickle

    try:
        pickled, top, names = read_archive_pickle(path)
    except Exception as error:  # noqa: BLE001 - a pickle we cannot parse is our limit, not the file's fault
        notes.append(f"data.pkl not parsed ({type(error).__name__}: {error}); records checked by CRC only")
        return []
    prefix = f"{top}/data/" if top else "data/"
    gone = sorted({ref.key for ref in pickled.storages if prefix + ref.key not in names})
    if gone:
        return [_p(rel, CORRUPT, f"data.pkl names tensor storage(s) {', '.join(gone[:5])} with no record "
                                 f"in the archive")]
    return []
