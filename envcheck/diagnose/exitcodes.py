"""Exit codes and signals: what a launcher's -9, a shell's 137 or torchrun's 'Signal 9 (SIGKILL)' means.

Launchers (torchrun, the deepspeed launcher, Python's subprocess) report a child killed by signal N as -N;
POSIX shells report it as 128 + N. The mapping of a signal to a likely cause is a prior only: the other evidence
(the kernel's OOM record, a core's stack) confirms or overrides it.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass


@dataclass(frozen=True)
class ExitInfo:
    code: int | None
    signal: str | None
    meaning: str


@dataclass(frozen=True)
class SignalPrior:
    cause: str
    confidence: float
    meaning: str
    title: str
    fix: str


# Why each signal usually ends a training run; the confidence is how often that is the reason.
PRIORS: dict[str, SignalPrior] = {
    "SIGKILL": SignalPrior("host_oom", 0.6, "killed by SIGKILL: most often the kernel's OOM killer after host RAM "
                                            "ran out (also: a scheduler's or a user's kill -9)",
                           "Killed by SIGKILL (likely the kernel's OOM killer)",
                           "Check the kernel log (dmesg) for 'Out of memory: Killed process'; reduce host-RAM use."),
    "SIGSEGV": SignalPrior("segfault_other", 0.5, "segmentation fault (SIGSEGV) in native code",
                           "Segmentation fault (SIGSEGV)",
                           "Allow a core (ulimit -c unlimited), reproduce, and run 'envcheck diagnose --core core'."),
    "SIGBUS": SignalPrior("shm_too_small", 0.6, "bus error (SIGBUS): shared memory (/dev/shm) that could not be "
                                                "backed, typically a 64 MB /dev/shm in a container",
                          "Bus error (SIGBUS): /dev/shm likely too small",
                          "Start the container with --shm-size=16g or --ipc=host, or lower dataloader workers."),
}

_PATTERNS = (
    re.compile(r"Signal (\d+) \((SIG[A-Z0-9]+)\) received"),  # torch elastic ProcessFailure
    re.compile(r"exitcode\s*:\s*(-?\d+)"),  # torchrun summary and 'failed (exitcode: -9)'
    re.compile(r"exits with return code = (-?\d+)"),  # deepspeed launcher
    re.compile(r"returned non-zero exit status (-?\d+)"),  # subprocess.CalledProcessError (accelerate, llamafactory-cli)
    re.compile(r"died with <Signals\.(?=SIG[A-Z0-9]+: (\d+)>)(SIG[A-Z0-9]+)"),  # CalledProcessError, killed by a signal
)
# MPICH's Hydra prints its "BAD TERMINATION" block only for a rank killed by a signal, with the raw wait status as
# "=   EXIT CODE: 9" (the signal, 128 more with a core dump): pmiserv_cb.c, SIG155
_HYDRA = re.compile(r"^[\s>]*=\s+EXIT CODE: (\d+)\s*$")  # also in a quoted reply ("> =   EXIT CODE: 9")
_SPAWN = re.compile(r"terminated with signal (SIG[A-Z0-9]+)")  # torch.multiprocessing.spawn's ProcessExitedException
# bash prints strsignal() in the locale's language: glibc's po/ translations of the three that kill training runs
_TRANSLATED = {
    "SIGKILL": ("已杀死", "Getötet", "Processus arrêté", "Убито", "強制終了", "Terminado (killed)", "죽었음", "Morto",
                "強制結束", "Ucciso"),
    "SIGSEGV": ("段错误", "Speicherzugriffsfehler", "Erreur de segmentation", "Ошибка сегментирования",
                "Violación de segmento", "세그멘테이션 오류", "Falha de segmentação", "程式記憶體區段錯誤",
                "Errore di segmentazione"),
    "SIGBUS": ("总线错误", "Bus-Zugriffsfehler", "Erreur du bus", "Ошибка шины", "バスエラー", "Error del bus",
               "버스 오류", "Erro no barramento", "匯流排錯誤", "Errore di bus", "Veri yolu hatası", "Błąd szyny",
               "Помилка каналу обміну даними", "Lỗi bus"),
}
_SHELL_SIGNALS = {"Killed": "SIGKILL", "Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS", "Aborted": "SIGABRT",
                  **{word: name for name, words in _TRANSLATED.items() for word in words}}
# not gcc's "fatal error: Killed signal terminated program cc1plus": that is the compiler's death, not the run's
# zsh's own words (Src/signames2.awk), after "zsh: " or a job number (Src/jobs.c printjob)
_ZSH_SIGNALS = {"killed": "SIGKILL", "segmentation fault": "SIGSEGV", "bus error": "SIGBUS"}
_ZSH = re.compile(r"(?:\bzsh: |\[\d+\] +[+ -] )(" + "|".join(_ZSH_SIGNALS) + r") +\S")
_SHELL = re.compile(r"(?:^|\s|\])(?:\d+\s+)?(" + "|".join(re.escape(w) for w in _SHELL_SIGNALS) + r")(?:\s|\(|$)"
                    r"(?!signal terminated program)")


def signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def interpret(code: int) -> ExitInfo:
    """Meaning of an exit status as a launcher (-N) or a shell (128 + N) reports it."""
    if code < 0:
        name = signal_name(-code)
        return ExitInfo(code, name, f"{code}: killed by signal {-code}" + (f" ({name})" if name else ""))
    if 128 < code < 128 + 65:
        name = signal_name(code - 128)
        if name:
            return ExitInfo(code, name, f"{code} = 128 + {code - 128}: a shell's report of a process killed by {name}")
    if code == 0:
        return ExitInfo(0, None, "0: the process exited normally")
    return ExitInfo(code, None, f"{code}: the process exited with an error (see its traceback)")


def from_text(text: str) -> ExitInfo | None:
    """The exit status or signal a log line reports, if any (a zero status is not a failure, so None)."""
    for pattern in _PATTERNS:
        found = pattern.search(text)
        if found:
            if found.lastindex == 2:
                return ExitInfo(-int(found.group(1)), found.group(2), f"{found.group(2)} (signal {found.group(1)})")
            code = int(found.group(1))
            return interpret(code) if code else None
    hydra = _HYDRA.search(text)
    number = int(hydra.group(1)) & 0x7F if hydra else 0  # the signal, without Hydra's core-dump bit
    if number and (name := signal_name(number)):
        return ExitInfo(-number, name, f"MPI's Hydra: a rank was killed by signal {number} ({name})")
    spawn = _SPAWN.search(text)
    if spawn and hasattr(signal, spawn.group(1)):
        number = int(getattr(signal, spawn.group(1)))
        return ExitInfo(-number, spawn.group(1), f"a spawned process was terminated with {spawn.group(1)}")
    zsh = _ZSH.search(text)
    if zsh:
        name = _ZSH_SIGNALS[zsh.group(1)]
        return ExitInfo(-int(getattr(signal, name)), name, f"zsh reports '{zsh.group(1)}': killed by {name}")
    shell = _SHELL.search(text)
    if shell:
        name = _SHELL_SIGNALS[shell.group(1)]
        number = int(getattr(signal, name))
        return ExitInfo(-number, name, f"the shell reports '{shell.group(1)}': killed by {name}")
    return None


PID = re.compile(r"(?:pid:? ?|PID |subprocess |process )(\d{2,})")


def pids(text: str) -> set[int]:
    """Process ids a launcher's line names (to match them with the kernel's records)."""
    return {int(p) for p in PID.findall(text)}
