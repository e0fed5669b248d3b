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


def test_a_console_link_that_ends_in_the_path_is_put_back_for_the_readers(tmp_path: Path) -> None:
    """A web console rendered NCCL's /dev/shm path as a link to itself (the link's text ends its URL): the structure
    readers see the path, and NCCL's shm failure is read as such, not as a generic NCCL error."""
    line = ("Error while creating shared memory segment [/dev/shm/nccl-EoOvZr](https://console.example.net/dev/shm/"
            "nccl-EoOvZr) (size 7340384)")
    assert unlinked(line) == "Error while creating shared memory segment /dev/shm/nccl-EoOvZr (size 7340384)"
    log = tmp_path / "nccl.log"
    log.write_text("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
                   "error.\nLast error:\n" + line + "\n", encoding="utf-8")
    assert diagnose(Request(logs=(str(log),), system=False)).causes[0].cause == "shm_too_small"


def test_a_link_to_another_page_is_left_alone_even_when_its_text_is_a_path() -> None:
    text = "the segment [/dev/shm](https://docs.example.org/shm-guide) is too small"
    assert unlinked(text) == text


def test_a_library_deleted_under_a_running_process_is_named() -> None:
    text = ("RuntimeError: /envs/u/lib/python3.11/site-packages/torchvision.libs/libcudart.7ec1eba6.so.12 (deleted): "
            "cannot open shared object file: No such file or directory")
    assert library_of(text) == "libcudart.7ec1eba6.so.12"


def test_macos_dyld_names_the_library_whose_symbol_is_missing() -> None:
    text = ("ImportError: dlopen(/Users/x/anaconda2/lib/python2.7/site-packages/torch/_C.so, 10): Symbol not found: "
            "__ZNSs4_Rep20_S_empty_rep_storageE")
    assert library_of(text) == "torch._C"
