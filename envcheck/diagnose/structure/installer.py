"""Installer and environment lines: pip's resolver conflicts, transformers' require_version, a CPU-only torch seen
only in its version string, a full disk outside a traceback, a DataLoader shm message in other capitals."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.compiler import NO_TOOLKIT
from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.structure.no_cuda import CUDA_TORCH, asked_for_cuda

# glibc's po/ translations of strerror(ENOSPC), the same since glibc 2.17 (zh_CN, zh_TW, ja, ko, de, fr, es, ru,
# pt_BR, it; tr, pl, uk, vi as of glibc-2.28 to 2.42): shell tools (cp, tar, dd) print them under a translated
# locale; Python's own OSError stays English
ENOSPC_TRANSLATED = ("设备上没有空间", "裝置上已無多餘空間", "デバイスに空き領域がありません", "장치에 남은 공간이 없음",
                     "Auf dem Gerät ist kein Speicherplatz mehr verfügbar",
                     "Aucun espace disponible sur le périphérique",
                     "No queda espacio en el dispositivo", "На устройстве не осталось свободного места",
                     "Não há espaço disponível no dispositivo", "Spazio esaurito sul device",
                     "Aygıt üzerinde boş yer yok", "Brak miejsca na urządzeniu", "Недостатньо місця на пристрої",
                     "Không có đủ chỗ trống trên thiết bị")
ANCHORS = (b"conflicting dependencies", b"dependency resolver", b", but you have ", b", but you'll have ",
           b"is required for a normal functioning", b"+cpu", b"space left on device", b"Errno 28",
           b"encountered in worker", b"win_amd64.whl", b"torch.version.cuda", b"Building wheel for ",
           b"Failed building wheel for ", b"Running setup.py install for ", b"Could not build wheels for ",
           b"Failed to build ", b"error while trying to install package", b"Invalid CUDA 'device=",
           # torch's collect_env report (_ENV_NO_CUDA)
           b"CUDA used to build PyTorch: ", b"Is CUDA available: ", b"ROCM used to build PyTorch: ",
           b"Nvidia driver version: ",
           *(word.encode() for word in ENOSPC_TRANSLATED))
# the scan keeps the line after it: the answer (None), the package pip names
WITH_NEXT = (b"torch.version.cuda", b"error while trying to install package")
# pip src/pip/_internal/resolution/resolvelib/factory.py and req/req_install.py (the resolver's messages).
_PIP = re.compile(r"ERROR: Cannot install (?P<what>.+?) because these package versions have conflicting|"
                  r"ERROR: pip's dependency resolver does not currently take into account.*|"
                  # install.py _warn_about_conflicts, a line per package; pip < 20.3: "ERROR: k8s 0.11.0 has
                  # requirement requests==2.13.0, but you'll have requests 2.22.0 which is incompatible."
                  # (also quoted in a reply, "> ", or under docker buildkit's step prefix, "#8 12.34 ")
                  r"^[\s>]*(?:#\d+ [\d.]+ )?(?:ERROR: )?(?P<pkg>[\w.-]+) [\w.+-]+ (?:requires|has requirement) "
                  r"(?P<req>[\w.-]+)[^,]*, "
                  r"but you(?:'ll)? have")
# transformers/utils/versions.py _compare_versions: "{req} is required for a normal functioning of this module,
# but found {pkg}=={got}".
_REQUIRE = re.compile(r"(?P<req>[\w.-]+)[<>=!~]=?[\w.*]+ is required for a normal functioning of this module, "
                      r"but found (?P<pkg>[\w.-]+)==(?P<got>\S+)")
# "torch 2.1.0+cpu", "PyTorch version: 2.1.0+cpu", "torch==2.1.0+cpu", "torch.__version__ = 2.1.0+cpu"; pip's
# "Requirement already satisfied: torch in <site-packages> (2.1.0+cpu)"; the answer to print(torch.__version__) on a
# line of its own ("2.1.0+cpu", the REPL's '2.1.0+cpu', or in a Markdown paste's backticks `2.1.0+cpu`).
_CPU_TORCH = re.compile(r"\b(?:torch|pytorch|PyTorch|Torch)(?: version|\.__version__)?\s*[:=]*\s*v?\d+\.\d+(?:\.\d+)?"
                        r"\+cpu\b|\btorch(?:vision|audio)? in \S.*\(\d+\.\d+(?:\.\d+)?\+cpu\)"
                        r"|^\W{0,4}'?\d+\.\d+\.\d+\+cpu['`]?\s*$")
# "torch-2.1.0+cpu" (pip's "Successfully installed torch-...", Ultralytics' "Python-3.10 torch-2.1.0+cpu" banner) is
# also printed by runs on a CPU on purpose and by the fix itself (pip uninstalling it): a cause only when the log
# also shows CUDA asked for and missing (Ultralytics' select_device refusing 'device=0', or one of the errors
# no_cuda reads). pip replacing a CPU build ("Found existing installation: torch 2.1.0+cpu", "Uninstalling
# torch-2.1.0+cpu") is the fix itself.
_CPU_WHEEL = re.compile(r"\btorch-\d+\.\d+(?:\.\d+)?\+cpu\b")
_UNINSTALL = re.compile(r"\b[Uu]ninstall|Found existing installation")
_WANTS_CUDA = re.compile(r"Invalid CUDA 'device=")
_NOSPACE = re.compile(r"[Nn]o space left on device|\[Errno 28\]|" + "|".join(map(re.escape, ENOSPC_TRANSLATED)))
# torch's shared-memory files are named </torch_<pid>_<n>> (as tracebacks._SHM_FILE): they live in /dev/shm
_SHM_WORDS = re.compile(r"/dev/shm|shm|shared memory|</torch_\d", re.I)
_DL_BUS = re.compile(r"Unexpected bus error encountered in worker", re.I)
# pip's "Downloading/Using cached .../torch-2.3.1-cp310-cp310-win_amd64.whl": the default index's Windows wheels of
# torch are CPU builds; PyTorch's CUDA wheels carry a local version (torch-2.3.1+cu121-..., %2B in a URL).
_WIN_WHEEL = re.compile(r"(?:Downloading|Using cached|Collecting|Processing)\b.*?\btorch-(?P<v>\d+\.\d+(?:\.\d+)?)"
                        r"-cp\d+-cp\d+m?-win_amd64\.whl")
# torch's collect_env report (torch/utils/collect_env.py; pretty_str's replace_nones writes None as 'Could not
# collect'): "CUDA used to build PyTorch: Could not collect" is torch.version.cuda None, a build without CUDA (a ROCm
# build's is None too: its "ROCM used to build PyTorch" has a version). A CPU-only torch, where the same report says
# CUDA is not available and names an NVIDIA driver (a Mac's or a CPU server's report names none).
_ENV_NO_CUDA = "CUDA used to build PyTorch: Could not collect"
_ENV_NOT_AVAILABLE = "Is CUDA available: False"
_ENV_ROCM = re.compile(r"ROCM used to build PyTorch: \d")
_ENV_DRIVER = re.compile(r"Nvidia driver version: \d")
# An interactive check that prints torch.version.cuda, answered by None on the next line: no CUDA in this build.
_VERSION_CUDA = re.compile(r"torch\.version\.cuda\b")


# The package pip was building when it failed (pip _internal/wheel_builder.py "Building wheel for %s (%s)" and
# "Failed building wheel for %s"; req/req_install.py "Running setup.py install for %s"; commands/install.py "Could not
# build wheels for %s" / "Failed to build installable wheels for some pyproject.toml based projects (%s)";
# exceptions.py's "Encountered error while trying to install package." with "╰─> <name>" on the next line).
_BUILDING = re.compile(r"Building wheel for (?P<a>[\w.-]+) \(.*\) \.\.\. error"
                       r"|Failed building wheel for (?P<b>[\w.-]+)"
                       r"|Running setup\.py install for (?P<c>[\w.-]+) \.\.\. error"
                       r"|Could not build wheels for (?P<d>[\w.-]+)"
                       r"|^\W*(?:ERROR: )?Failed to build (?:installable wheels for some pyproject\.toml based "
                       r"projects \()?(?P<e>[\w.-]+)\)?\s*$")
_INSTALL_FAILED = "error while trying to install package"
_ARROW = re.compile(r"^\W*(?:╰─>|\+->|`->)\s*(?P<pkg>[\w.-]+)\s*$")
BUILT = "built_package"  # an Event of this kind names the package whose build failed; it is no cause itself


def built_package(lines: list[Line]) -> Event | None:
    """The first package pip says it failed to build or install, as a hint for a build cause that names none."""
    for at, line in enumerate(lines):
        found = _BUILDING.search(line.text)
        name = next((g for g in found.groups() if g), "") if found else ""
        if not name and _INSTALL_FAILED in line.text and at + 1 < len(lines):
            arrow = _ARROW.match(lines[at + 1].text)
            name = arrow.group("pkg") if arrow and lines[at + 1].number == line.number + 1 else ""
        if name:
            return Event(BUILT, "", 0.0, f"pip failed to build {name}", "", "", line.file, line.number, line.text,
                         "pip (wheel_builder, req_install, exceptions)", name.lower())
    return None


def events(lines: list[Line]) -> list[Event]:
    found = []
    package = built_package(lines)
    if package is not None:
        found.append(package)
    # torch.utils.cpp_extension leaves CUDA_HOME unset in a CPU build (CUDA_HOME = _find_cuda_home() only if
    # torch.version.cuda): a build's 'no CUDA toolkit' then comes from the CPU build, whatever toolkit is installed
    no_toolkit = any(NO_TOOLKIT.search(line.text) for line in lines)
    wants_cuda = any(_WANTS_CUDA.search(line.text) for line in lines) or asked_for_cuda(lines) or no_toolkit
    for at, line in enumerate(lines):
        text = line.text
        req = _REQUIRE.search(text)
        pip = None if req else _PIP.search(text)
        if req or pip:
            # pip: "xformers 0.0.20 requires torch==2.0.0, but you have torch 2.0.1": xformers pins the other one
            lib = req.group("pkg") if req else (pip.group("pkg") or pip.group("req") or "") if pip else ""  # type: ignore[union-attr]
            found.append(Event(
                "installer", "version_conflict", 0.85 if req else 0.7, "Incompatible package versions",
                "A package requires another at a version that is not the installed one ("
                + ("transformers' require_version check" if req else "pip's resolver") + " says which).",
                "Install the versions the message asks for (pip install '<package>==<required>'), or pin the "
                "stack with a lock file.", line.file, line.number, text,
                "transformers/utils/versions.py _compare_versions" if req else
                "pip _internal/resolution (resolver conflict messages)", lib.lower()))
        elif (_CPU_TORCH.search(text) or (wants_cuda and _CPU_WHEEL.search(text))) and not _UNINSTALL.search(text):
            found.append(Event(
                "cpu_torch", "torch_cpu_only", 0.9 if no_toolkit else 0.6, "torch is a CPU-only build (+cpu)",
                "The torch version string ends in +cpu: this build has no CUDA, so every .cuda() call and GPU "
                "launcher fails" + (", and torch.utils.cpp_extension finds no CUDA toolkit (it looks for one only "
                                    "in a CUDA build), so no CUDA extension builds." if no_toolkit else "."),
                f"Install {CUDA_TORCH}.",
                line.file, line.number, text, "PyTorch wheel local version labels (+cpu, +cuXYZ)", "torch",
                ("python -c 'import torch; print(torch.__version__, torch.version.cuda)'",)))
        elif _ENV_NO_CUDA in text and _collect_env_without_cuda(lines):
            found.append(Event(
                "cpu_torch", "torch_cpu_only", 0.6, "torch is a CPU-only build (collect_env: built without CUDA)",
                "torch's environment report says the installed torch was built without CUDA (torch.version.cuda is "
                "None) and that CUDA is not available, on a machine with an NVIDIA driver: the default index's Windows "
                "wheel, or a CPU build pip or conda chose.", f"Install {CUDA_TORCH}.", line.file, line.number, text,
                "torch/utils/collect_env.py (CUDA used to build PyTorch: torch.version.cuda; None as 'Could not "
                "collect')", "torch", ("python -c 'import torch; print(torch.__version__, torch.version.cuda)'",)))
        elif _WIN_WHEEL.search(text) or (_VERSION_CUDA.search(text) and _answered_none(lines, at)):
            wheel = _WIN_WHEEL.search(text)
            found.append(Event(
                "cpu_torch", "torch_cpu_only", 0.55 if wheel else 0.8,
                "pip installed a CPU-only torch (the default index's Windows wheel)" if wheel else
                "torch.version.cuda is None: a CPU-only build of torch",
                "On Windows the default package index has only CPU builds of torch; the CUDA builds (torch-X+cuNNN) "
                "come from PyTorch's own wheel index." if wheel else
                "torch reports no CUDA version: the installed build was compiled without CUDA, so "
                "torch.cuda.is_available() is False whatever the driver.",
                f"Install {CUDA_TORCH}.",
                line.file, line.number, text,
                "PyTorch Get Started (pip on Windows installs the CPU build unless a CUDA wheel index is given)" if wheel
                else "torch/version.py (cuda = None in a CPU build)", "torch",
                ("python -c 'import torch; print(torch.__version__, torch.version.cuda)'",)))
        # watchdog's ENOSPC for its watch limit; joblib's warning that it goes on in serial mode without semaphores
        elif _NOSPACE.search(text) and "inotify" not in text and "joblib will operate in serial mode" not in text:
            shm = bool(_SHM_WORDS.search(text))
            found.append(Event(
                "disk_full" if not shm else "shm_full", "shm_too_small" if shm else "disk_full", 0.85,
                "/dev/shm is full" if shm else "The disk is full (No space left on device)",
                "A write to /dev/shm failed: it is too small (containers default to 64 MB)." if shm else
                "A write failed with ENOSPC: the file system of the output, checkpoint or cache directory (or the "
                "container's overlay) is full.",
                "Give the container more /dev/shm (--shm-size=16g or --ipc=host)." if shm else
                "Free space or write checkpoints/caches elsewhere (output_dir, HF_HOME, TMPDIR, pip's cache); "
                "in a container, mount a volume for them.", line.file, line.number, text, "errno ENOSPC (28)", "",
                ("df -h /dev/shm" if shm else "df -h . $HF_HOME /tmp",)))
        elif _DL_BUS.search(text):
            found.append(Event(
                "dataloader_bus", "shm_too_small", 0.9, "DataLoader worker bus error: /dev/shm too small",
                "A DataLoader worker got SIGBUS writing a batch to shared memory.",
                "Increase /dev/shm (docker --shm-size or --ipc=host) or reduce num_workers.",
                line.file, line.number, text, "torch/csrc/DataLoader.cpp", "torch"))
    return found


def _collect_env_without_cuda(lines: list[Line]) -> bool:
    """collect_env's report in LINES says CUDA is not available, names an NVIDIA driver and no ROCm build."""
    return (any(_ENV_NOT_AVAILABLE in x.text for x in lines) and any(_ENV_DRIVER.search(x.text) for x in lines)
            and not any(_ENV_ROCM.search(x.text) for x in lines))


def _answered_none(lines: list[Line], at: int) -> bool:
    """The line after LINES[AT] (the next one of the log, not of the excerpt) is Python's None."""
    following = lines[at + 1] if at + 1 < len(lines) else None
    return following is not None and following.file == lines[at].file and following.number == lines[at].number + 1 \
        and following.text.strip() == "None"
