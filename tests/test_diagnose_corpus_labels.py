"""Well-formedness of the labelled public-log corpus (tests/assets/diagnose/corpus)."""

import hashlib
import re
import tomllib
from pathlib import Path

CORPUS = Path(__file__).parent / "assets" / "diagnose" / "corpus"
TAXONOMY = {
    "host_oom", "gpu_oom", "segfault_abi_mismatch", "segfault_other", "cuda_arch_unsupported",
    "driver_too_old", "cuda_toolkit_mismatch", "missing_cuda_library", "nccl_error", "nccl_timeout",
    "shm_too_small", "numpy_abi", "torch_cpu_only", "deepspeed_build_failure", "version_conflict",
    "gpu_xid", "disk_full",
}
MIN_LOGS = 150


def _labels():
    return tomllib.loads((CORPUS / "labels.toml").read_text(encoding="utf-8"))["log"]


def _split(url):
    return "test" if int(hashlib.sha256(url.encode()).hexdigest(), 16) % 2 == 0 else "dev"


def test_labels_are_well_formed():
    ids = set()
    for entry in _labels():
        assert set(entry) >= {"id", "file", "url", "cause", "library", "evidence", "split"}, entry
        assert entry["id"] not in ids, entry["id"]
        ids.add(entry["id"])
        assert entry["url"].startswith("https://github.com/"), entry
        assert entry["cause"] in TAXONOMY, entry
        assert isinstance(entry["library"], str)
        assert entry["evidence"].strip() and "https://" in entry["evidence"], entry
        assert entry["split"] == _split(entry["url"]), entry
        assert entry["file"] == f"{entry['split']}/{entry['id']}.log", entry
        path = CORPUS / entry["file"]
        assert path.is_file(), path
        assert 0 < path.stat().st_size < 20_000, path


def test_no_duplicate_urls():
    urls = [e["url"] for e in _labels()]
    assert len(urls) == len(set(urls))


def test_no_unlisted_files():
    listed = {e["file"] for e in _labels()}
    present = {p.relative_to(CORPUS).as_posix() for p in CORPUS.glob("*/*.log")}
    assert present == listed


def test_public_fixture_threads_not_reused():
    text = (CORPUS.parent / "PROVENANCE.md").read_text(encoding="utf-8")
    used = set(re.findall(r"https://github\.com/[^\s)`|]+", text))
    for entry in _labels():
        assert entry["url"].rstrip("/") not in used, entry["url"]


def test_corpus_size():
    assert len(_labels()) >= MIN_LOGS


# A package index's address in a pip/uv/conda command or log line: its /simple or /whl path (the host is replaced by
# <registry> in the corpus, in logs and in the evidence quotes alike).
_INDEX_URL = re.compile(r"https?://(?!<registry>)[^/\s\"'<>]+/(?:simple|whl)(?:/|\b)")


def test_no_package_index_address_in_the_corpus():
    texts = {"labels.toml": (CORPUS / "labels.toml").read_text(encoding="utf-8")}
    texts.update({str(p.relative_to(CORPUS)): p.read_text(encoding="utf-8", errors="replace")
                  for p in sorted(CORPUS.glob("*/*.log"))})
    found = {name: _INDEX_URL.findall(text) for name, text in texts.items() if _INDEX_URL.search(text)}
    assert not found
