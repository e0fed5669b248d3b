"""Turn the evidence into ranked causes.

Evidence from independent sources (the log's signatures, the exit status, the kernel log, a core, the doctor's
findings) is combined per cause as a noisy-OR: 1 - prod(1 - c). Inside one source only the strongest line counts,
so a message repeated by eight ranks is not eight times the proof. Signatures of cause "other" (a launcher's
summary) are context: they join the primary cause's evidence and are never a cause themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envcheck.checks.model import Finding
from envcheck.diagnose.exitcodes import PRIORS, ExitInfo
from envcheck.diagnose.kernel import KernelEvents
from envcheck.diagnose.model import Cause, Evidence, Fix, LinkedFinding, ScanResult
from envcheck.diagnose.structure.finished import FINISHED
from envcheck.diagnose.structure.installer import BUILT
from envcheck.diagnose.structure.model import Event
from envcheck.diagnose.structure.ngc import COMPAT_OK, STATUS_LINES
from envcheck.diagnose.structure.no_cuda import GPU_BUILD, WEAK
from envcheck.diagnose.structure.risk import LAST_RESORT
from envcheck.diagnose.structure.stopped import INTERRUPTED, WEAK_CRASH
from envcheck.diagnose.symbols import describe_line, library_of
from envcheck.diagnose.window import run_like

# a host_oom read from a signal 9 alone (a launcher's or a shell's report, no memory line, no kernel record)
WEAK_KILL = 0.6

if TYPE_CHECKING:  # the core-dump reader (gdb, struct) is imported only when a core is read
    from envcheck.diagnose.core import CoreReport

MAX_CONFIDENCE = 0.99
# Causes that stop a source build without naming what was built (nvcc's architecture, torch's CUDA version check).
BUILD_CAUSES = ("cuda_arch_unsupported", "cuda_toolkit_mismatch")
EVIDENCE_PER_SIGNATURE = 2
# The library a cause's own message names when it cannot name the one to blame (NumPy's message names NumPy, not the
# module compiled against NumPy 1.x): a later line that names another library wins over it.
PLACEHOLDER_LIBRARY = {"numpy_abi": "numpy"}


@dataclass
class _Draft:
    cause: str
    strength: dict[str, float] = field(default_factory=dict)  # source -> strongest confidence
    title: str = ""
    explanation: str = ""
    best: float = -1.0
    evidence: list[Evidence] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[LinkedFinding] = field(default_factory=list)
    library: tuple[int, str] | None = None  # (line, name): the earliest line that names the library to blame
    first: int = 1 << 62  # the earliest log line of its evidence

    def blame(self, line: int | None, library: str) -> None:
        if not library:
            return
        placeholder = PLACEHOLDER_LIBRARY.get(self.cause)
        if (self.library is None or ((line or 0) < self.library[0] and library != placeholder)
                or self.library[1] == placeholder != library):
            self.library = (line or 0, library)

    def support(self, source: str, confidence: float, title: str = "", explanation: str = "") -> None:
        self.strength[source] = max(self.strength.get(source, 0.0), confidence)
        if title and confidence > self.best:
            self.best, self.title, self.explanation = confidence, title, explanation

    def confidence(self) -> float:
        remaining = 1.0
        for value in self.strength.values():
            remaining *= 1.0 - value
        return round(min(MAX_CONFIDENCE, 1.0 - remaining), 3)


def combine(scan: ScanResult | None, signatures: dict[str, object], exit_info: ExitInfo | None,
            kernel: KernelEvents | None, core: CoreReport | None, log_pids: set[int],
            findings: tuple[Finding, ...] = (), events: tuple[Event, ...] = ()) -> tuple[Cause, ...]:
    drafts: dict[str, _Draft] = {}

    def draft(cause: str) -> _Draft:
        return drafts.setdefault(cause, _Draft(cause))

    context: list[Evidence] = []
    for sig_id, found in (scan.by_signature.items() if scan else ()):
        sig = signatures[sig_id]
        lines = [Evidence("log", h.line, h.text, h.file) for h in found.hits[:EVIDENCE_PER_SIGNATURE]]
        if sig.cause == "other":  # type: ignore[attr-defined]
            context.extend(lines[:1])
            continue
        d = draft(sig.cause)  # type: ignore[attr-defined]
        d.support("log", sig.confidence, sig.title, sig.explanation)  # type: ignore[attr-defined]
        d.evidence.extend(lines)
        d.signatures.append(sig_id)
        d.fixes.append(Fix(sig.fix, tuple(sig.commands)))  # type: ignore[attr-defined]
        note = describe_line(found.hits[0].text)
        if note and note not in d.notes:
            d.notes.append(note)
        # the loader's own words first (the .so that cannot be opened), then what the signature names; a cause's
        # placeholder (NumPy named in NumPy's message) yields to the library the signature knows (torch's warning)
        # a version rule's own library is the package to change, which the module its line names (distutils,
        # sklearn) is not
        loader = library_of(found.hits[0].text)
        own = sig.cause == "version_conflict" and sig.library  # type: ignore[attr-defined]
        named = "" if own or loader == PLACEHOLDER_LIBRARY.get(sig.cause) else loader  # type: ignore[attr-defined]
        d.blame(found.hits[0].line, named or _named_library(sig.pattern, found.hits[0].text)
                or sig.library or loader)  # type: ignore[attr-defined]
        d.first = min(d.first, found.hits[0].line)

    hints = [e for e in events if e.kind == BUILT]
    last_resort = tuple(e for e in events if e.kind == LAST_RESORT)
    _structure_evidence(tuple(e for e in events if not e.hint and e.kind != LAST_RESORT), draft, drafts, context)

    if exit_info and exit_info.signal in PRIORS:
        prior = PRIORS[exit_info.signal]
        d = draft(prior.cause)
        d.support("exit_code", prior.confidence, prior.title, prior.meaning)
        d.evidence.append(Evidence("exit_code", None, exit_info.meaning))
        d.fixes.append(Fix(prior.fix))

    if kernel:
        _kernel_evidence(kernel, exit_info, log_pids, draft)
    if core and core.top_library:
        d = draft("segfault_other") if "segfault_abi_mismatch" not in drafts else drafts["segfault_abi_mismatch"]
        d.support("core", 0.6 if d.cause == "segfault_other" else 0.3, "Segmentation fault in native code",
                  "The process crashed in native code; the core's stack names the library.")
        d.evidence.append(Evidence("core", None, core.describe(), core.path))
        d.notes.append(core.describe())
        d.fixes.append(Fix("Reinstall or rebuild the library the crash is in (and the extension that called it) for "
                           "the installed torch/CUDA; print the full stack with gdb.",
                           (f"gdb --batch -ex bt {core.executable or '<executable>'} {core.path}",)))

    # a warning a paste ends at: only when nothing else names a cause, the run did not exit 0 and did not finish
    finished_in = {e.file for e in events if e.kind == FINISHED}
    last_resort = tuple(e for e in last_resort if e.file not in finished_in)
    if last_resort and not any(d.strength for d in drafts.values()) and not (exit_info and exit_info.code == 0):
        _structure_evidence(last_resort, draft, drafts, context)
    cpu, builds = drafts.get("torch_cpu_only"), [e.library for e in events if e.kind == GPU_BUILD]
    if cpu is not None and builds and (cpu.confidence() <= WEAK or "rocm" in builds):
        del drafts["torch_cpu_only"]  # torch sees no GPU, but it is a CUDA (ROCm) build: not a CPU-only torch
    crash = drafts.get("segfault_other")
    _drop_what_the_stop_explains(drafts, [e for e in events if e.kind == INTERRUPTED])
    if crash is not None and "segfault_other" in drafts:
        _after_training(crash, [e for e in events if e.kind == FINISHED])
    _drop_compat_probe(drafts, [e for e in events if e.kind == COMPAT_OK])
    _drop_disk_read_as_shm(drafts)
    _drop_symbols_the_driver_explains(drafts)
    _link_findings(drafts, findings)
    for cause in BUILD_CAUSES:  # nvcc or the CUDA check stopped a build: the package pip was building is to blame
        if cause in drafts and drafts[cause].library is None and hints:
            drafts[cause].blame(hints[0].line, hints[0].library)
    causes = [_freeze(d) for d in drafts.values() if d.strength]
    order = {d.cause: d.first for d in drafts.values()}
    causes.sort(key=lambda c: (-c.confidence, order.get(c.cause, 1 << 62), c.cause))
    if causes and context:
        first = causes[0]
        causes[0] = Cause(first.cause, first.confidence, first.title, first.explanation,
                          first.evidence + tuple(e for e in context[:3] if e not in first.evidence), first.fixes,
                          first.signatures, first.findings, first.library)
    return tuple(causes)


def _drop_disk_read_as_shm(drafts: dict[str, _Draft]) -> None:
    """An ENOSPC line that a reader placed in /dev/shm (a semaphore's frame, torch's shm file) is not also a full
    disk: the general reading of the same line yields to the specific one."""
    disk, shm = drafts.get("disk_full"), drafts.get("shm_too_small")
    if disk is None or shm is None:
        return
    at = {(e.file, e.line) for e in shm.evidence if e.source == "log"}
    lines = [(e.file, e.line) for e in disk.evidence if e.source == "log"]
    if lines and all(line in at for line in lines):
        del drafts["disk_full"]


# A CUDA driver API function (cuInit, cuTensorMapEncodeTiled: "cu" and a capital; the runtime's are cudaX, the
# libraries' cublasX, cudnnX): libcuda.so, the driver, defines them (CUDA Driver API reference, docs.nvidia.com).
_DRIVER_SYMBOL = re.compile(r"undefined symbol: cu[A-Z]\w*")


def _drop_symbols_the_driver_explains(drafts: dict[str, _Draft]) -> None:
    """An extension that lacks a driver API function, in a log that also says the driver is too old: the old driver
    explains the undefined symbol (a library built for a newer CUDA calls what this libcuda does not define), and
    updating it clears both. Alone, such a line stays an ABI mismatch: the label rule's undefined symbol."""
    abi, driver = drafts.get("segfault_abi_mismatch"), drafts.get("driver_too_old")
    if abi is None or driver is None or set(abi.strength) != {"log"}:
        return
    lines = [e for e in abi.evidence if e.source == "log"]
    if lines and all(_DRIVER_SYMBOL.search(e.text) for e in lines):
        driver.evidence.extend(e for e in lines if e not in driver.evidence)
        del drafts["segfault_abi_mismatch"]


# a line that says memory ran out (not only that a process got signal 9): numpy's "Unable to allocate", MemoryError,
# ENOMEM's "[Errno 12]" and "Cannot allocate memory", bad_alloc, the kernel's and the schedulers' out-of-memory lines
_MEMORY_LINE = re.compile(r"out of memory|Cannot allocate memory|MemoryError|Unable to allocate|bad_alloc|"
                          r"\[Errno 12\]|oom[-_ ]?kill|OOMKilled|memory limit|low on memory", re.IGNORECASE)


def _drop_what_the_stop_explains(drafts: dict[str, _Draft], stops: list[Event]) -> None:
    """The user (or the scheduler) stopped the run: threads aborting at its exit are no crash to hunt, and a SIGKILL
    the stop explains is no OOM kill. A kill explained by the stop is one printed after it (a kill before it, as
    srun's "task 0: Killed" before Slurm cancels the rest, is what the stop followed) on no line about memory."""
    if not stops:
        return
    crash = drafts.get("segfault_other")
    if crash is not None and crash.confidence() <= WEAK_CRASH:
        del drafts["segfault_other"]
    kill = drafts.get("host_oom")
    # the exit status a launcher's kill line gives (exit_code) is that same line again, not more evidence
    if kill is None or max((v for source, v in kill.strength.items() if source != "exit_code"),
                           default=0.0) > WEAK_KILL:
        return
    stopped_at: dict[str | None, int] = {}  # the first stop in each file
    for stop in stops:
        stopped_at[stop.file] = min(stop.line, stopped_at.get(stop.file, stop.line))
    lines = [e for e in kill.evidence if e.source == "log"]
    if any(_MEMORY_LINE.search(e.text) for e in lines):
        return
    if any(e.file in stopped_at and e.line is not None and e.line < stopped_at[e.file] for e in lines):
        return
    del drafts["host_oom"]


# lines between the Trainer's end-of-training lines and a crash at the run's exit (the final save's lines, warnings)
AFTER_TRAINING = 20


def _after_training(crash: _Draft, finished: list[Event]) -> None:
    """A crash shortly after the training loop said it finished, in the same log: say so, and what to check of the
    run's outputs. (An earlier run's end in another log, or many lines before, is another run.)"""
    at = next(((e.file, e.line) for e in crash.evidence if e.source == "log" and e.line is not None), None)
    if at is None:
        return
    before = [e for e in finished if e.file == at[0] and 0 < at[1] - e.line <= AFTER_TRAINING]
    if not before:
        return
    crash.notes.append(f"the training loop had finished before the crash (line {before[-1].line}: "
                       f"{before[-1].text.strip()[:80]!r}): the crash is in the run's teardown or its last save")
    crash.fixes.insert(0, Fix(
        "The run's training had finished: check that its final model and checkpoint were written whole (their "
        "files and sizes; envcheck ckpt verify <dir>). A crash at exit is often a thread or a CUDA/NCCL object "
        "destroyed after the interpreter: end a distributed script with torch.distributed.destroy_process_group().",
        ("envcheck ckpt verify <output_dir>",)))


def _drop_compat_probe(drafts: dict[str, _Draft], compat: list[Event]) -> None:
    """A driver cause read only from the status lines under an NGC container's "compatibility mode ENABLED" note is
    the driver check's record of its probe, and the container runs (structure/ngc.py)."""
    d = drafts.get("driver_too_old")
    if d is None or not compat:
        return
    log = [e for e in d.evidence if e.source == "log" and e.line is not None]
    # only the banner's "[[<status>]]" lines, each under a note that a compatibility mode is enabled
    def under_note(e: Evidence) -> bool:
        return "[[" in e.text and any(c.file == e.file and 0 < (e.line or 0) - c.line <= STATUS_LINES for c in compat)

    if log and len(log) == len(d.evidence) and all(under_note(e) for e in log):
        del drafts["driver_too_old"]


def _structure_evidence(events: tuple[Event, ...], draft, drafts: dict[str, _Draft],  # type: ignore[no-untyped-def]
                        context: list[Evidence]) -> None:
    """The structure layer's events, in log order. A symptom (a peer that exited, a launcher's summary) is a cause
    only when nothing else explains the failure; a faulthandler dump makes "enable faulthandler" advice moot."""
    roots = [e for e in events if not e.symptom]
    for event in roots or events:
        d = draft(event.cause)
        d.support("log", event.confidence, event.title, event.explanation)
        d.evidence.append(Evidence("log", event.line, event.text, event.file))
        d.fixes.insert(0, Fix(event.fix, event.commands))
        d.blame(event.line, event.library)
        d.first = min(d.first, event.line)
        if event.source and f"source: {event.source}" not in d.notes:
            d.notes.append(f"source: {event.source}")
    if roots:
        context.extend(Evidence("log", e.line, e.text, e.file) for e in events if e.symptom)
    if any(e.kind == "faulthandler" for e in events):
        for d in drafts.values():
            d.fixes = [f for f in d.fixes if "faulthandler" not in f.summary]


def _kernel_evidence(kernel: KernelEvents, exit_info: ExitInfo | None, log_pids: set[int], draft) -> None:  # type: ignore[no-untyped-def]
    """A kernel record is strong proof when it names a pid the log names, falls inside the run's time window (of a
    training process, or the run died of the matching signal), or the run died of the matching signal; otherwise
    it may be an older, unrelated event and counts little. This machine's own kernel log holds every process's
    history since boot, so there an unmatched record outside a known window needs the matching signal to count."""
    signal = exit_info.signal if exit_info else None
    own_machine = kernel.source in ("dmesg", "journalctl -k")
    for kill in kernel.oom_kills[-3:]:
        matched = kill.pid in log_pids
        in_window = kernel.timed and kill.time is not None
        unattributed = signal is None and not log_pids and not own_machine
        if own_machine and not (matched or in_window or signal == "SIGKILL"):
            continue  # another process's kill, any time since boot: no evidence about this log
        strength = 0.95 if matched else 0.85 if signal == "SIGKILL" or unattributed or (
            in_window and run_like(kill.comm)) else 0.5 if in_window else 0.3
        d = draft("host_oom")
        d.support("kernel", strength, "Host out of memory: the kernel's OOM killer killed the process",
                  "Host RAM (or the container's memory limit) ran out and the kernel killed the largest process. "
                  "In training this is typically every rank loading the full model, CPU offload, dataloader "
                  "workers, or ZeRO-2/3 gathering weights to save a checkpoint.")
        d.evidence.append(Evidence("kernel", kill.line, kill.text, kernel.source))
        d.notes.append(kill.describe() + ("" if matched or not log_pids else " (this pid is not named in the log)"))
        d.fixes.append(Fix("Reduce host-RAM use (fewer dataloader/preprocessing workers, no CPU offload, "
                           "low_cpu_mem_usage loading) or raise the memory limit / add swap.",
                           ("dmesg -T | grep -i -E 'killed process|out of memory'",)))
    for fault in kernel.segfaults[-3:]:
        matched = fault.pid in log_pids
        in_window = kernel.timed and fault.time is not None and run_like(fault.comm)
        if own_machine and not (matched or in_window or signal == "SIGSEGV"):
            continue
        d = draft("segfault_other")
        d.support("kernel", 0.8 if matched else 0.6 if signal == "SIGSEGV" or in_window else 0.3,
                  "Segmentation fault in native code",
                  "The kernel recorded a segmentation fault; the faulting library is named in its record.")
        d.evidence.append(Evidence("kernel", fault.line, fault.text, kernel.source))
        d.notes.append(fault.describe())


def _link_findings(drafts: dict[str, _Draft], findings: tuple[Finding, ...]) -> None:
    """Doctor findings that predict a cause already seen confirm it ("flash-attn was built for torch 2.3")."""
    for finding in findings:
        d = drafts.get(finding.category)
        if d is None or not d.strength:
            continue
        severity = finding.severity.label
        d.findings.append(LinkedFinding(finding.id, severity, finding.title, finding.detail))
        if severity in ("error", "fatal"):
            d.support("snapshot", 0.5)
        for fix in finding.fixes:
            d.fixes.append(fix)


def _freeze(d: _Draft) -> Cause:
    explanation = d.explanation
    if d.notes:
        explanation = f"{explanation} Evidence: {'; '.join(d.notes)}."
    fixes, seen = [], set()
    for fix in d.fixes:  # a fix said by a signature and by a linked doctor finding is printed once
        keys: set[object] = {fix.summary.strip().rstrip(".").lower()}
        if fix.commands:
            keys.add(fix.commands)
        if not keys & seen:
            seen |= keys
            fixes.append(fix)
    evidence, places = [], set()
    for item in d.evidence:  # one line matched by two signatures is one piece of evidence
        place = (item.source, item.file, item.line, item.text)
        if place not in places:
            places.add(place)
            evidence.append(item)
    return Cause(d.cause, d.confidence(), d.title, explanation.strip(), tuple(evidence[:12]), tuple(fixes),
                 tuple(d.signatures), tuple(d.findings), d.library[1] if d.library else "")


def _named_library(pattern: str, text: str) -> str:
    """The `library` group of a signature's pattern in its hit, when the pattern has one."""
    if "(?P<library>" not in pattern:
        return ""
    found = re.search(pattern, text)
    return (found.group("library") or "") if found else ""
