"""Naming the library of a loader line (envcheck/diagnose/symbols.py), also as GitHub renders a pasted line: a file
name that looks like a host name becomes a Markdown link, and copying the rendered page keeps it (dev c2341)."""

from __future__ import annotations

from pathlib import Path

from envcheck.diagnose.engine import Request, diagnose
from envcheck.diagnose.symbols import library_of, unlinked

LINKED = ("/opt/venv/lib/python3.9/site-packages/[flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so]"
          "(http://flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so/): undefined symbol: _ZN2at4_ops9_pad_enum4call")


def test_an_autolinked_file_name_is_put_back() -> None:
    assert unlinked(LINKED).startswith("/opt/venv/lib/python3.9/site-packages/flash_attn_2_cuda.cpython-39")
    assert library_of(LINKED) == "flash_attn_2_cuda"


def test_a_real_link_is_left_alone() -> None:
    text = "see [the install guide](https://github.com/Dao-AILab/flash-attention#installation)"
    assert unlinked(text) == text


def test_the_corpus_log_with_an_autolinked_extension_names_it() -> None:
    log = Path(__file__).parent / "assets" / "diagnose" / "corpus" / "dev" / "c2341.log"
    cause = diagnose(Request(logs=(str(log),), system=False)).causes[0]
    assert (cause.cause, cause.library) == ("segfault_abi_mismatch", "flash_attn_2_cuda")
