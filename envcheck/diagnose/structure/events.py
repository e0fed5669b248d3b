"""Read the scan's excerpt into Events: every structure module over the same lines, in one call."""

from __future__ import annotations

from envcheck.diagnose.prefixes import unprefixed_text
from envcheck.diagnose.structure import (build, cut, faulthandler, finished, ggml, installer, nccl, ngc, no_cuda,
                                         oomlines, risk, rocm, stopped, tracebacks, unfinished, xid)
from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.structure.tracebacks import Traceback

# Error lines of any kind, for the honest unknown: the first one is shown when no known cause matched.
ERRORS = (b"Error: ", b"FAILED: ", b"fatal: ")
ANCHORS: tuple[bytes, ...] = (*xid.ANCHORS, *build.ANCHORS, *nccl.ANCHORS, *faulthandler.ANCHORS, *installer.ANCHORS,
                              *oomlines.ANCHORS, *no_cuda.ANCHORS, *rocm.ANCHORS,
                              *tracebacks.ANCHORS, *build.NINJA, *unfinished.ANCHORS, *finished.ANCHORS,
                              *ngc.ANCHORS, *risk.ANCHORS, *stopped.ANCHORS, *ggml.ANCHORS, *ERRORS)


# Anchors whose line is a question and the next line its answer (`>>> print(torch.version.cuda)` then `None`).
WITH_NEXT: tuple[bytes, ...] = (*installer.WITH_NEXT, *faulthandler.WITH_NEXT)


def analyse(lines: list[Line], blocks: list[tuple[list[Line], int]], ends: dict[str, int] | None = None,
            tails: list[Line] | None = None, late_errors: list[Line] | None = None
            ) -> tuple[list[Event], list[Traceback]]:
    """LINES: candidate lines in log order; BLOCKS: traceback blocks with the length of their rank prefix; ENDS: each
    file's last non-blank line number (unknown: readers that need a log's end read nothing); TAILS: each file's last
    non-blank lines, whatever they hold; LATE_ERRORS: the error lines among each file's last bytes."""
    # the readers see each line as its program printed it, without a launcher's prefix (torchrun's `[rank0]:`)
    lines, tails, late_errors = ([Line(x.file, x.number, unprefixed_text(x.text)) for x in group or []]
                                 for group in (lines, tails, late_errors))
    read = [(block, prefix, tracebacks.parse(block, prefix)) for block, prefix in blocks]
    parsed = [tb for _, _, tb in read if tb is not None]
    found: list[Event] = cut.events([(block, prefix) for block, prefix, tb in read if tb is None], lines)
    for module in (xid, build, nccl, faulthandler, installer, oomlines, no_cuda, rocm, finished, ngc, ggml):
        found += module.events(lines)
    found += tracebacks.events(parsed + tracebacks.loose(lines, parsed))
    # a fallback: where another reader found the build's failure, that reader says why and what to do
    built = {e.file for e in found if e.cause == "deepspeed_build_failure"}
    found += [e for e in unfinished.events(lines, parsed, ends or {}) if e.file not in built]
    found += stopped.interrupted(lines + [line for block, _ in blocks for line in block])
    found += stopped.events(lines)
    if not any(e.cause for e in found):  # a last resort: a paste that ends at a warning naming a risk
        found += risk.events(lines, parsed, ends or {}, tails, late_errors)
    found.sort(key=lambda e: (e.file, e.line))
    return found, parsed


def first_error(lines: list[Line], parsed: list[Traceback]) -> Line | None:
    """The first real exception (a launcher's summary is not one) or, without any, the first error line."""
    real = [tb for tb in parsed if not tb.symptom]
    if real:
        first = min(real, key=lambda tb: (tb.file, tb.line))
        return Line(first.file, first.line, first.text)
    fatal = [line for line in lines if "Fatal Python error: " in line.text]  # a faulthandler dump: the crash itself
    if fatal:
        return fatal[0]
    errors = [line for line in lines if any(e.decode() in line.text for e in ERRORS)
              and not any(s in line.text for s in tracebacks.SYMPTOMS)]  # a launcher's summary is a symptom
    return errors[0] if errors else (Line(parsed[0].file, parsed[0].line, parsed[0].text) if parsed else None)
