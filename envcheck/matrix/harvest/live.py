"""The configured package index, read the way pip and uv read it: the PEP 691 JSON simple API for the file
lists, and HTTP range requests into each wheel for its METADATA (the zip's central directory, then one member),
so no large wheel is downloaded. An sdist (DeepSpeed publishes no wheels) is streamed until its PKG-INFO and
egg-info requires.txt have been read.

The index is the one pip or uv is configured with (`--index-url`, PIP_INDEX_URL, pip's config, UV_DEFAULT_INDEX
/ UV_INDEX_URL, else pip's own default); no host name is written here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import ssl
import subprocess
import sys
import tarfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from envcheck.matrix.harvest.interface import IndexError_, IndexFile, Metadata

_ACCEPT = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 60


def _pip_config(key: str) -> str | None:
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "config", "get", key], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value.split()[0] if done.returncode == 0 and value else None


def _pip_default() -> str | None:
    try:
        from pip._internal.models.index import PyPI  # the default pip itself uses when nothing is configured
    except ImportError:
        return None
    return str(PyPI.simple_url)


def configured_index() -> tuple[str, str]:
    """(simple API base URL, where it was configured) from pip's or uv's configuration."""
    candidates = (
        ("PIP_INDEX_URL", lambda: os.environ.get("PIP_INDEX_URL")),
        ("pip config global.index-url", lambda: _pip_config("global.index-url")),
        ("UV_DEFAULT_INDEX", lambda: os.environ.get("UV_DEFAULT_INDEX")),
        ("UV_INDEX_URL", lambda: os.environ.get("UV_INDEX_URL")),
        ("pip's default index", _pip_default),
    )
    for where, read in candidates:
        value = read()
        if value:
            return value.rstrip("/") + "/", where
    raise IndexError_("no package index is configured for pip or uv, and pip's default cannot be read")


def _redacted(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    return urllib.parse.urlunsplit((parts.scheme, host + (f":{parts.port}" if parts.port else ""), parts.path, "", ""))


class _RangeFile(io.RawIOBase):
    """A seekable read-only view of a remote file through HTTP range requests (what pip's fast-deps does)."""

    def __init__(self, opener: urllib.request.OpenerDirector, url: str, size: int) -> None:
        self.opener, self.url, self.size, self.position, self.fetched = opener, url, size, 0, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = offset if whence == 0 else self.position + offset if whence == 1 else self.size + offset
        return self.position

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        count = min(len(buffer), self.size - self.position)
        if count <= 0:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-{self.position + count - 1}"})
        with self.opener.open(request, timeout=TIMEOUT_S) as response:
            if response.status != 206:
                raise IndexError_(f"{_redacted(self.url)}: the index does not serve byte ranges (HTTP {response.status})")
            data = response.read()
        buffer[:len(data)] = data
        self.position += len(data)
        self.fetched += len(data)
        return len(data)


class LiveIndex:
    """The configured index over HTTP(S)."""

    def __init__(self, base_url: str | None = None, cache_dir: str | None = None) -> None:
        where = "--index-url"
        if base_url is None:
            base_url, where = configured_index()
        self.base_url = base_url.rstrip("/") + "/"
        self.description = where  # never the URL: what is written and printed names no host
        cafile = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
        context = ssl.create_default_context(cafile=cafile) if cafile and os.path.isfile(cafile) else None
        self._local = threading.local()
        self._context = context
        self.cache_dir = cache_dir
        self.bytes_read = 0
        self._lock = threading.Lock()

    def _opener(self) -> urllib.request.OpenerDirector:
        opener = getattr(self._local, "opener", None)
        if opener is None:
            handlers: list[urllib.request.BaseHandler] = [urllib.request.HTTPSHandler(context=self._context)]
            opener = self._local.opener = urllib.request.build_opener(*handlers)
        return opener

    def _count(self, count: int) -> None:
        with self._lock:
            self.bytes_read += count

    def files(self, project: str) -> tuple[IndexFile, ...]:
        url = urllib.parse.urljoin(self.base_url, f"{project}/")
        request = urllib.request.Request(url, headers={"Accept": _ACCEPT})
        try:
            with self._opener().open(request, timeout=TIMEOUT_S) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return ()
            raise IndexError_(f"{_redacted(url)}: HTTP {error.code}") from None
        except (urllib.error.URLError, OSError) as error:
            raise IndexError_(f"{_redacted(url)}: {getattr(error, 'reason', error)}") from None
        self._count(len(body))
        try:
            page = json.loads(body)
        except ValueError:
            raise IndexError_(f"{_redacted(url)}: not a PEP 691 JSON page (the index must serve {_ACCEPT})") from None
        return tuple(
            IndexFile(
                filename=item["filename"], url=urllib.parse.urljoin(url, item["url"]),
                uploaded=item.get("upload-time") or "", requires_python=item.get("requires-python") or None,
                yanked=bool(item.get("yanked")), size=item.get("size"), sha256=(item.get("hashes") or {}).get("sha256"),
            )
            for item in page.get("files", [])
        )

    def _cache_path(self, file: IndexFile) -> str | None:
        if not self.cache_dir:
            return None
        key = file.sha256 or hashlib.sha256(file.url.encode()).hexdigest()
        return os.path.join(self.cache_dir, f"{file.filename}.{key[:16]}.json")

    def metadata(self, project: str, file: IndexFile) -> Metadata:
        cached = self._cache_path(file)
        if cached and os.path.isfile(cached):
            with open(cached, encoding="utf-8") as handle:
                data = json.load(handle)
            return Metadata(data["text"], data.get("requires_txt"))
        try:
            found = self._wheel(file) if file.filename.endswith(".whl") else self._sdist(file)
        except (urllib.error.URLError, OSError, zipfile.BadZipFile, tarfile.TarError) as error:
            raise IndexError_(f"{file.filename}: {getattr(error, 'reason', error)}") from None
        self._count(found.bytes_read)
        if cached:
            os.makedirs(self.cache_dir or ".", exist_ok=True)
            temporary = f"{cached}.{os.getpid()}.{threading.get_ident()}"
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump({"text": found.text, "requires_txt": found.requires_txt}, handle)
            os.replace(temporary, cached)
        return found

    def _size(self, file: IndexFile) -> int:
        if file.size:
            return int(file.size)
        request = urllib.request.Request(file.url, method="HEAD")
        with self._opener().open(request, timeout=TIMEOUT_S) as response:
            return int(response.headers["Content-Length"])

    def _wheel(self, file: IndexFile) -> Metadata:
        remote = _RangeFile(self._opener(), file.url, self._size(file))
        with zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 16)) as wheel:
            names = [n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if not names:
                raise IndexError_(f"{file.filename}: no .dist-info/METADATA")
            text = wheel.read(names[0]).decode("utf-8", "replace")
        return Metadata(text, None, remote.fetched)

    def _sdist(self, file: IndexFile) -> Metadata:
        if not file.filename.endswith(".tar.gz"):
            raise IndexError_(f"{file.filename}: only .tar.gz sdists are read")
        pkg_info = requires_txt = None
        with self._opener().open(file.url, timeout=TIMEOUT_S) as response:
            counter = _Counting(response)
            with tarfile.open(fileobj=counter, mode="r|gz") as archive:
                for member in archive:
                    parts = member.name.split("/")
                    if len(parts) == 2 and parts[1] == "PKG-INFO":
                        pkg_info = archive.extractfile(member).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                    elif len(parts) == 3 and parts[1].endswith(".egg-info") and parts[2] == "requires.txt":
                        requires_txt = archive.extractfile(member).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                    if pkg_info is not None and requires_txt is not None:
                        break
        if pkg_info is None:
            raise IndexError_(f"{file.filename}: no PKG-INFO at the top of the sdist")
        return Metadata(pkg_info, requires_txt, counter.count)


class _Counting(io.RawIOBase):
    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        self.stream, self.count = stream, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self.stream.read(len(buffer))
        buffer[:len(data)] = data
        self.count += len(data)
        return len(data)
