"""Run the stages for one `envcheck diagnose` invocation and return a Diagnosis (no printing here)."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Callable

from envcheck.checks.model import Finding
from envcheck.diagnose import exitcodes, kernel, pasted, window
from envcheck.diagnose.combine import combine
from envcheck.diagnose.model import Diagnosis, Evidence, Ignored, ScanResult, Skipped
from envcheck.diagnose.scan import Matcher, Progress, scan
from envcheck.diagnose.source import OpenedLog, open_log
from envcheck.diagnose.structure import events as structure
from envcheck.diagnose.structure import risk, unfinished
from envcheck.errors import UsageError

_CRASH_SIGNALS = {"SIGSEGV", "SIGBUS", "SIGABRT", "SIGILL", "SIGFPE"}
# Where wrapped lines were joined by their words, the repaired view may find a rule's message, never a last-resort
# guess from the line a paste ends at (a warning, a build's lines): joining a log's last line to the warning before it
# makes the warning its end. Lines cut at the paste's width are the line as printed, joined back; stamps taken off and
# characters made plain move no line.
_GUESS = max(risk.CONFIDENCE, unfinished.CONFIDENCE)
# A reading this weak or weaker (a last-resort guess, the shell's 'Aborted' after messages it did not read) is read
# again as a paste too, and gives way to a stronger one there.
_WEAK = 0.35
# A paste with this many lines cut at its width and joined back is read as joined whatever the first reading found:
# rules matched pieces of lines (a library's name cut from its loader message, a warning's rest without the words
# that mark it harmless), and the joined lines are the lines as printed.
_CUT_LINES = 3


@dataclass(frozen=True)
class Request:
    logs: tuple[str, ...] = ()
    exit_code: int | None = None
    kernel_log: str | None = None
    core: str | None = None
    snapshot: str | None = None
    probe: bool = False
    system: bool = True  # read this machine's kernel log and core files when not given
    matrix: str | None = None
    since: datetime | None = None  # the run's window, when given (else from the logs' stamps)
    until: datetime | None = None
    pids: tuple[int, ...] = ()  # the run's process ids, besides those the logs name
    boot_time: datetime | None = None  # boot of the machine a saved --kernel-log with seconds-since-boot came from


def diagnose(request: Request, progress: Progress | None = None,
             capture: Callable[[], object] | None = None) -> Diagnosis:
    from envcheck.matrix import load_matrix

    # A snapshot's checks need the whole matrix; the logs alone need only the signatures (a fifth of start-up).
    needs_all = bool(request.snapshot or request.probe)
    matrix = load_matrix(request.matrix, only=None if needs_all else frozenset({"signatures.toml"}))
    signatures = {s.id: s for s in matrix.signatures}
    skipped: list[Skipped] = []

    matcher = Matcher(matrix.signatures)
    result = _scan(request.logs, matcher, progress) if request.logs else None
    findings = _findings(request, matrix, capture, skipped)
    diagnosis = _judge(request, signatures, result, findings, list(skipped))
    first = diagnosis.causes[0].confidence if diagnosis.causes else 0.0
    if result is None:
        return diagnosis
    weak = first <= _WEAK
    # nothing matched the log as it is, or only a weak reading did: a paste may match better once what pasting did is
    # undone (pasted.py); a paste cut at a width is read joined in any case
    again = _scan_repaired(request.logs, matcher, cut_only=not weak)
    if again is None:
        return diagnosis
    second = _judge(request, signatures, again.result, findings, list(skipped))
    if weak:
        take = bool(second.causes) and second.causes[0].confidence > first and (
            second.causes[0].confidence > _GUESS or not again.soft)
    else:  # a paste cut at its width (_scan_repaired read it only then)
        take = _primary(second) != _primary(diagnosis)
    if take:
        return replace(second, bytes_read=diagnosis.bytes_read, lines=diagnosis.lines, joined_lines=again.joined,
                       repaired=again.undone)
    return diagnosis


def _primary(diagnosis: Diagnosis) -> str | None:
    """The primary cause's name, None when no cause was found: what a second reading must change to be taken."""
    return diagnosis.causes[0].cause if diagnosis.causes else None


def _judge(request: Request, signatures: dict, result: ScanResult | None, findings: tuple[Finding, ...],
           skipped: list[Skipped]) -> Diagnosis:
    """The causes of one scan of the logs, with the kernel's events and a core of the run's window."""
    exit_info, log_pids = _exit_and_pids(request.exit_code, result)

    structured, parsed = structure.analyse(list(result.excerpt), list(result.blocks), dict(result.ends),
                                           list(result.tails), list(result.late_errors)) if result else ([], [])
    own_error = any(not tb.symptom for tb in parsed)
    run = window.build(result, request.since, request.until, (*request.pids, *log_pids))
    if request.system and not request.kernel_log and not own_error:
        # the last write stands in for the run's end, roughly: a kill of one of the run's pids stays the run's
        # outside it (window._reason), and a log with its own exception keeps every unplaced kill out (window.judge)
        run = window.from_last_write(run, request.logs)
    reference = run.until or run.since
    events = None
    if request.kernel_log:
        events = kernel.read_file(request.kernel_log, request.boot_time, reference)
    elif request.system:
        events, why = kernel.read_system(reference=reference)
        skipped += [why] if why else []
    ignored: tuple[Ignored, ...] = ()
    if events is not None:
        events, ignored, notes = window.judge(events, run, own_error)
        run = replace(run, notes=run.notes + notes)

    core_report = None
    core_path = request.core
    from envcheck.diagnose import core as core_mod  # here: most runs read no core
    if core_path is None and request.system and exit_info and exit_info.signal in _CRASH_SIGNALS:
        dirs = sorted({os.path.dirname(os.path.abspath(p)) for p in request.logs if p != "-"} | {os.getcwd()})
        core_path, why, outside = core_mod.find_core(dirs, run.lower, run.upper)
        skipped += [why] if why else []
        ignored += window.core_ignored(outside, run)
    if core_path:
        try:
            core_report = core_mod.analyse(core_path)
        except core_mod._GdbFailed as error:  # noqa: SLF001 - gdb missing or hung: data, not a crash
            skipped.append(Skipped("core", f"gdb: {error}"))
        except UsageError:
            if request.core:
                raise
    if core_report and exit_info is None and core_report.signal:
        exit_info = exitcodes.ExitInfo(None, core_report.signal, f"the core says: {core_report.signal}")

    causes = combine(result, signatures, exit_info, events, core_report, log_pids | run.pids, findings,
                     tuple(structured))
    first = structure.first_error(list(result.excerpt), parsed) if result else None
    return Diagnosis(
        causes, exit_info.code if exit_info else None, exit_info.signal if exit_info else None,
        exit_info.meaning if exit_info else None, result.files if result else (), result.bytes_read if result else 0,
        result.lines if result else 0, Evidence("log", first.number, first.text, first.file) if first else None,
        tuple(skipped), run, ignored)


@dataclass(frozen=True)
class _ReadAgain:
    """The scan of the logs with what pasting did undone, and what was, over all the logs (pasted.Repaired's counts)."""

    result: ScanResult
    joined: int
    soft: int
    undone: tuple[str, ...]


def _scan_repaired(paths: tuple[str, ...], matcher: Matcher, cut_only: bool = False) -> _ReadAgain | None:
    """The logs scanned with what pasting did undone (pasted.py); None when nothing was, the logs are longer than a
    paste, or one is standard input (read once). CUT_ONLY: only a paste cut at a width (pasted.has_width) is repaired
    at all."""
    if "-" in paths:
        return None
    opened, joined, soft, undone, total = [], 0, 0, set(), 0
    for path in paths:
        with open_log(path) as log:
            pieces = []
            for chunk in log.chunks(pasted.LIMIT):
                total += len(chunk)
                if total > pasted.LIMIT:
                    return None
                pieces.append(chunk)
            name = log.name
        opened.append((name, b"".join(pieces)))
    if cut_only and not any(pasted.has_width(data) for _, data in opened):
        return None
    for index, (name, data) in enumerate(opened):
        repair = pasted.repaired(data)
        joined, soft = joined + repair.joined, soft + repair.soft
        undone.update(repair.undone)
        opened[index] = (name, repair.data)
    if not joined and not undone or cut_only and joined - soft < _CUT_LINES:
        return None
    logs = [OpenedLog(name, io.BytesIO(data), len(data), owned=True) for name, data in opened]
    try:
        return _ReadAgain(scan(logs, matcher, None), joined, soft, tuple(sorted(undone)))
    finally:
        for log in logs:
            log.close()


def _scan(paths: tuple[str, ...], matcher: Matcher, progress: Progress | None) -> ScanResult:
    logs = [open_log(p) for p in paths]  # validate every input before the long scan starts
    try:
        return scan(logs, matcher, progress)
    finally:
        for log in logs:
            log.close()


def _exit_and_pids(code: int | None, result: ScanResult | None) -> tuple[exitcodes.ExitInfo | None, set[int]]:
    """The given --exit-code wins; else the first failure a launcher or shell reports in the log."""
    info = exitcodes.interpret(code) if code is not None else None
    pids: set[int] = set()
    if result is None:
        return info, pids
    first: tuple[int, int, exitcodes.ExitInfo] | None = None
    for found in result.by_signature.values():
        for hit in found.hits:
            pids |= exitcodes.pids(hit.text)
            parsed = exitcodes.from_text(hit.text)
            if parsed and (first is None or (hit.file, hit.line) < (result.files[first[0]], first[1])):
                first = (result.files.index(hit.file), hit.line, parsed)
    if info is None and first is not None:
        info = first[2]
    return info, pids


def _findings(request: Request, matrix: object, capture: Callable[[], object] | None,
              skipped: list[Skipped]) -> tuple[Finding, ...]:
    if not (request.snapshot or request.probe):
        return ()
    from envcheck.checks import run_checks
    from envcheck.snapshot import load_snapshot

    snapshot = load_snapshot(request.snapshot) if request.snapshot else capture() if capture else None
    if snapshot is None:
        skipped.append(Skipped("snapshot", "no snapshot to link causes to"))
        return ()
    return tuple(f for f in run_checks(snapshot, matrix, (), ()) if f.category != "other")
