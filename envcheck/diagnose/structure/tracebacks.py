"""Python tracebacks: the exception (type, message, continuation lines), the frames and the packages in them, and
which exceptions are only a launcher's summary of another process's failure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envcheck.diagnose.structure import numpy_api
from envcheck.diagnose.structure.build import DS_OPS
from envcheck.diagnose.structure.compiler import first_error
from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.structure.model import event_at as _event
from envcheck.diagnose.symbols import package_of

HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')
_EXC = re.compile(r"^(?P<type>(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)|"
                  r"[A-Za-z_][\w.]*\.[A-Z]\w*)(?::\s?(?P<msg>.*))?$")
# Launchers' and build drivers' summaries of a failure that happened elsewhere (torch elastic, subprocess):
# evidence, never the first exception or the root cause when another exists.
SYMPTOMS = ("ChildFailedError", "CalledProcessError", "SignalException")


@dataclass(frozen=True)
class Traceback:
    file: str
    line: int  # the exception line
    type: str
    message: str  # the exception line's message and its continuation lines, joined
    packages: tuple[str, ...]  # of the frames, outermost first
    text: str  # the exception line as printed
    paths: tuple[str, ...] = ()  # the frames' files, outermost first
    code: tuple[str, ...] = ()  # the frames' source lines as printed, stripped
    funcs: tuple[str, ...] = ()  # each frame's function name ("in jit_load"), beside paths

    @property
    def symptom(self) -> bool:
        return self.type.rsplit(".", 1)[-1] in SYMPTOMS


def parse(block: list[Line], prefix_len: int = 0) -> Traceback | None:
    """BLOCK: a header, its frames, the exception line and up to a few continuation lines (the scan's cut)."""
    packages: list[str] = []
    paths: list[str] = []
    code: list[str] = []
    funcs: list[str] = []
    first = 1 if HEADER in block[0].text else 0  # a block whose header was cut off starts at its first frame
    for i, line in enumerate(block[first:], first):
        body = line.text[prefix_len:]
        frame = _FRAME.match(body)
        if frame:
            paths.append(frame.group("path"))
            funcs.append(body.rsplit(", in ", 1)[-1].strip() if ", in " in body else "")
            pkg = package_of(frame.group("path"))
            if pkg and (not packages or packages[-1] != pkg):
                packages.append(pkg)
            continue
        if body[:1] in (" ", "\t") or not body:
            code.append(body.strip())
            continue
        found = _EXC.match(body.strip())
        if not found:
            continue
        rest = [b.text[prefix_len:].strip() for b in block[i + 1:i + 5]]
        message = " ".join([found.group("msg") or "", *[r for r in rest if r and not r.startswith(HEADER)]]).strip()
        return Traceback(line.file, line.number, found.group("type"), message, tuple(packages), line.text,
                         tuple(paths), tuple(code), tuple(funcs))
    return None


def loose(lines: list[Line], parsed: list[Traceback]) -> list[Traceback]:
    """Excerpt lines that carry a rule's message outside any traceback block (a paste of the last lines only)."""
    seen = {(tb.file, tb.line) for tb in parsed}
    found = []
    for line in lines:
        if (line.file, line.number) in seen or not any(a.decode() in line.text for a in ANCHORS):
            continue
        match = _LOOSE.match(line.text.strip())
        if match:
            found.append(Traceback(line.file, line.number, match.group("type") or "", match.group("msg"), (),
                                   line.text))
    return found


_CANNOT_IMPORT = re.compile(r"cannot import name '(?P<name>[^']+)' from '(?P<mod>[\w.]+)'")
# "No module named 'datasets.exceptions'": Python imports a dotted name part by part and reports the first part it
# cannot find, so 'datasets' was found and has no 'exceptions': another release of it. Not a private compiled module
# ('torch._C': a broken install or a run inside the source tree) nor DeepSpeed's ops (not pre-built: JIT-built).
# A private pure-Python module is one ('torch._six', removed by pytorch/pytorch#94709 for torch 2.0; 'torch._custom_ops',
# which torchvision imports from the torch it was built for): not a compiled one (_C, _ext, *_cuda), nor any of NumPy's own.
_NO_SUBMODULE = re.compile(r"No module named '(?P<pkg>[A-Za-z]\w*)\.(?P<sub>_?[A-Za-z][\w.]*)'")
_COMPILED = re.compile(r"(?:^|\.)_(?:C|ext|lib|\w*_(?:C|ext|cuda|cpp|umath))(?:\.|$)")
# A project's own modules run from another folder ('utils.datasets' of a script's checkout, a checkpoint pickled with
# its 'models.common'): a layout, not a release. So the import must come from an installed package's frame (under
# site-packages), or, in a paste without frames, name no folder name projects use for their own code.
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
_LOCAL_NAMES = frozenset({"utils", "util", "src", "models", "model", "data", "lib", "common", "core", "tools", "config",
                          "configs", "app", "modules", "helpers", "scripts", "test", "tests", "dataset", "ops",
                          "networks", "nets", "layers", "train", "options", "datasets_local",
                          # namespace packages ('google.protobuf' is the protobuf distribution, 'google.colab' only
                          # Colab's), NVIDIA's nvidia-* wheels, and PyPI's apex, which is not NVIDIA's
                          "google", "azure", "nvidia", "apex"})
# torch.load / pickle finding a class of the module a checkpoint was pickled with: the pickling project's layout
_UNPICKLING = re.compile(r"[/\\](?:serialization|pickle|_pickle)\.py$")
# (a paste may cut the message's closing quote: "has no attribute '_make_class_factory")
# DeepSpeed's own files (installed, or a source checkout's packages): an op module's missing function is a stale op
# only where DeepSpeed itself calls it, since op names are ordinary module names ('utils', 'transformer') and other
# projects build ops of the same names (ColossalAI's cpu_adam).
_DS_FRAME = re.compile(r"(?:site|dist)-packages[/\\]deepspeed[/\\]"
                       r"|[/\\]deepspeed[/\\](?:ops|runtime|inference|module_inject|moe|checkpoint|comm)[/\\]")
_NO_ATTR = re.compile(r"module '(?P<mod>[\w.]+)' has no attribute '(?P<name>\w+)(?:'|$)")
_ERRNO28 = re.compile(r"\[Errno 28\]|[Nn]o space left on device")
# /dev/shm, or torch's shared-memory files </torch_<pid>_<n>> (torch/lib/libshm): a full shm, not a full disk.
_SHM_FILE = re.compile(r"/dev/shm|</torch_\d|shared memory")
# libraries whose files live in /dev/shm (pandarallel's memory file system)
_SHM_WRITERS = ("pandarallel/core.py",)
_MACOS = re.compile(r"^/Users/|Python\.framework/|^/opt/homebrew/|^/usr/local/Cellar/|^/Applications/|^/private/var/|"
                    r"^/opt/(?:ana|mini)conda3/|^/opt/miniforge3/")
# torch/utils/cpp_extension.py CUDA_MISMATCH_MESSAGE; DeepSpeed op_builder/builder.py assert_no_cuda_mismatch;
# ColossalAI's check_system_pytorch_cuda_match (hpcaitech/ColossalAI@42d7b299:extensions/utils.py): "[extension] Failed
# to build PyTorch extension because the detected CUDA version (11.7) mismatches the version that was used to ...".
_MISMATCH = re.compile(r"[Tt]he detected CUDA version \((?P<found>[\d.]+)\) mismatches the version|"
                       r"Installed CUDA version [\d.]+ does not match the version torch was compiled with")
# DeepSpeed's assert_no_cuda_mismatch prints the same words and goes on when only the minor versions differ ("but
# since the APIs are compatible, accepting this combination") or DS_SKIP_CUDA_CHECK=1 is set ("Allowing this
# combination"): no mismatch that stops a build.
_ACCEPTED = re.compile(r"accepting this combination|Allowing this combination")
_DS_OP = re.compile(r"deepspeed[/\\]ops[/\\](?!op_builder)\w+[/\\](?P<op>\w+)\.py")
# DeepSpeed's own setup.py on the stack: pip's unpacked source (/tmp/pip-install-x/deepspeed_<hash>/setup.py), an
# sdist or checkout folder named DeepSpeed (deepspeed-0.14.0/, GitHub's DeepSpeed-master/), or a setup.py beside the source tree's
# top-level op_builder/ (the installed package has deepspeed/ops/op_builder/ instead, which runs at training time).
# Other projects' folders with DeepSpeed in their name (Megatron-DeepSpeed, DeepSpeed-MII) are not DeepSpeed.
_DS_SETUP = re.compile(r"pip-(?:install|req-build)-\w+[/\\]deepspeed_\w+[/\\]setup\.py$"
                       r"|(?:^|[/\\])(?i:deepspeed)(?:-\d[\w.]*|-master|-main)?[/\\]setup\.py$")
# An op's builder: op_builder/<NAME>.py (builder.py and __init__.py are the machinery, not an op).
_BUILDER_FILE = re.compile(r"op_builder[/\\](?P<op>\w+)\.py$")
_SOURCE_OP_BUILDER = re.compile(r"(?<![/\\]ops[/\\])(?<!^ops[/\\])\bop_builder[/\\]\w+\.py$")
# ... whose folder is DeepSpeed's (a checkout or sdist named DeepSpeed*, pip's deepspeed_<hash>): ColossalAI, ROCm's
# apex and MoE-Infinity have op_builder/ folders of their own
_DS_OP_BUILDER = re.compile(r"(?:(?i:deepspeed)[\w.-]*|pip-(?:install|req-build)-\w+[/\\]deepspeed_\w+)"
                            r"[/\\]op_builder[/\\]\w+\.py$")
# Causes of their own that an exception in DeepSpeed's setup.py or op build may carry (a CUDA mismatch, a CUDA
# library that does not load, an op built for another torch, torch's CUDA_HOME check): those rules name them; the
# install or build failure does not outrank them.
_OWN_CAUSE = re.compile(r"cannot open shared object file|mismatches the version|does not match the version torch"
                        r"|undefined symbol|Error building extension"
                        # an op DeepSpeed finds incompatible (SIG109: libaio, a GPU), a CUDA error of the device
                        r"|due to it not being compatible|CUDA error")
# Exceptions that stop whatever was running, a build or a wait for another rank's build lock: not a build's failure.
_INTERRUPTS = ("KeyboardInterrupt", "SystemExit", "SignalException")
# DeepSpeedCPUAdam.__del__ after its __init__ failed: the op's load (a build) most often, but any failure of __init__
# (an empty parameter list, Ctrl-C while waiting on a build lock) leaves the same line.
# (A loose line's leading quote may be taken by _LOOSE's punctuation: "` 'DeepSpeedCPUAdam' object ...`".)
_DS_OPT = re.compile(r"DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'")
# Loose exception lines (pasted without their traceback) that the rules above read too.
ANCHORS = (b"cannot import name", b"has no attribute", b"No module named '", b"mismatches the version",
           b"was removed in the NumPy", b"does not match the version torch", b"but the version found is")
_LOOSE = re.compile(r"^\W{0,3}(?P<type>[A-Za-z_][\w.]*(?:Error|Exception))?:?\s*(?P<msg>.*)$")


# transformers/utils/__init__.py check_min_version: "This example requires a source install from HuggingFace
# Transformers (...), but the version found is X" / "This example requires a minimum version of X, but the version
# found is Y".
_MIN_VERSION = re.compile(r"(?:requires a source install from (?:HuggingFace )?(?P<mod>\w+)|requires a minimum "
                          r"version of)[^\n]*but the version found is")


def events(tracebacks: list[Traceback]) -> list[Event]:
    found = []
    for tb in tracebacks:
        message, top = tb.message, tb.packages[-1] if tb.packages else ""
        if _DS_OPT.search(message) and not any(_init_of_cpu_adam(other) for other in tracebacks if other is not tb):
            found.append(_event(tb, "ds_opt_adam", "deepspeed_build_failure", 0.7,
                                "DeepSpeed's cpu_adam op was not built (the op build failed earlier)",
                                "DeepSpeedCPUAdam has no ds_opt_adam when its __init__ failed before it was set: almost "
                                "always loading (JIT-building) the cpu_adam op; its __del__ then fails too. The "
                                "compiler's first error, above, says why.",
                                "Read the first compiler or ninja error; install a gcc and a CUDA toolkit the DeepSpeed "
                                "release supports (nvcc's CUDA matching torch.version.cuda, CUDA_HOME set), or pre-build "
                                "the op (DS_BUILD_CPU_ADAM=1 pip install deepspeed).",
                                "github:deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641:deepspeed/ops/adam/"
                                "cpu_adam.py (__init__ sets self.ds_opt_adam = CPUAdamBuilder().load() after "
                                "super().__init__; __del__ calls self.ds_opt_adam.destroy_adam)", "cpu_adam"))
        if _in_deepspeed_jit_load(tb) and not _OWN_CAUSE.search(message):
            # a reason the compiler readers know (no toolkit, nvcc missing) names the title and fix, before the
            # build layer's event for the same line, which cannot name the op
            reason = first_error([Line(tb.file, tb.line, message)])
            found.append(_event(tb, "ds_jit_load", "deepspeed_build_failure", 0.82 if reason else 0.72,
                                "DeepSpeed could not JIT-build an op: " + (reason.reason if reason else
                                                                           tb.type or "an error"),
                                "DeepSpeed builds an op the first time it is used (op_builder's jit_load, through "
                                f"torch.utils.cpp_extension), and the build raised {tb.type or 'an error'}: "
                                + (message[:160] or "see the traceback") + ".",
                                reason.fix if reason else
                                "Read the exception: usually no CUDA toolkit where the build looks (nvcc missing, "
                                "CUDA_HOME unset or pointing at a folder without bin/nvcc); install the toolkit "
                                "matching torch.version.cuda and set CUDA_HOME, or install DeepSpeed with the op "
                                "pre-built (DS_BUILD_<OP>=1), or choose an optimizer that needs no op.",
                                "a traceback through DeepSpeed's op_builder jit_load (CPython traceback frames)",
                                _op(tb) or _builder_op(tb)))
        if _in_deepspeed_setup(tb) and not _OWN_CAUSE.search(message):
            # a reason the compiler readers know (a g++ outside CUDA's bounds, nvcc missing) names the title and fix
            reason = first_error([Line(tb.file, tb.line, message)])
            found.append(_event(tb, "ds_setup", "deepspeed_build_failure", 0.78,
                                "Installing or building DeepSpeed from source failed: "
                                + (reason.reason if reason else tb.type or "an error"),
                                "DeepSpeed's setup.py (and its op_builder, which it runs to pre-build or list ops) "
                                f"raised {tb.type or 'an error'} while pip or setup.py installed DeepSpeed from "
                                "source: " + (message[:160] or "see the traceback") + ".",
                                reason.fix if reason else
                                "Read the exception: typically torch not importable in the build environment (install "
                                "torch first, then pip install --no-build-isolation deepspeed), CUDA_HOME unset for a "
                                "CUDA or ROCm op, or a setuptools/torch pair the release predates (pin the older "
                                "setuptools, or use a newer DeepSpeed); else install a released wheel.",
                                "a traceback through DeepSpeed's setup.py and op_builder/ (CPython traceback frames)",
                                _builder_op(tb) or "deepspeed"))
        # "(unknown location)": a folder named numpy shadowing the package, not a removed name
        if numpy_api.REMOVED.search(message) and "circular import" not in message and "(unknown location)" not in message:
            found.append(numpy_api.removed(tb, message))
        elif numpy_api.ABI_IMPORT.search(message) and (blame := numpy_api.importer(tb)):
            found.append(_event(tb, "numpy_abi_import", "numpy_abi", 0.85,
                                f"{blame} was compiled against NumPy 1.x and NumPy 2 is installed",
                                f"{blame} is a compiled module built against NumPy 1.x's C API; NumPy 2 refuses to "
                                "load it.", f"Install numpy<2 (pip install 'numpy<2'), or upgrade {blame} to a release "
                                "built for NumPy 2.", "the module's import_array (NumPy 1.x's __multiarray_api.h); "
                                "numpy/core/_multiarray_umath.py (NumPy 2's warning)",
                                blame))
        elif (tb.type.endswith(("ImportError", "AttributeError")) or not tb.type) and (
                _CANNOT_IMPORT.search(message) or _NO_ATTR.search(message)):
            hit = _CANNOT_IMPORT.search(message) or _NO_ATTR.search(message)
            mod = hit.group("mod").split(".")[0]  # type: ignore[union-attr]
            # CPython's "partially initialized module ... (most likely due to a circular import)": a file of the
            # user's shadowing the package (torch.py) or an import cycle, not two versions
            if mod in ("numpy", "np") or "circular import" in message:
                continue
            op = _ds_op(hit.group("mod"), tb) if _NO_ATTR.search(message) else None  # type: ignore[union-attr]
            if op:
                found.append(_stale_op(tb, op))
                continue
            # a module of a folder name projects use for their own code ('utils'), raised outside installed
            # packages: the user's module, not a release
            if (_NO_ATTR.search(message) and mod in _LOCAL_NAMES
                    and not (tb.paths and _INSTALLED.search(tb.paths[-1]))):
                continue
            found.append(_event(tb, "import_version", "version_conflict", 0.75,
                                f"{mod} does not have '{hit.group('name')}': incompatible package versions",  # type: ignore[union-attr]
                                f"The installed {mod} lacks a name the calling code imports: the two were released "
                                "for different versions of each other (one was upgraded or pinned alone).",
                                f"Install the {mod} version the calling package requires (see its requirements), "
                                f"e.g. pip install '{mod}==<the version it was written for>'.",
                                "CPython import machinery (ImportError: cannot import name)", mod))
        elif tb.type.endswith(("ModuleNotFoundError", "ImportError")) and (
                sub := _NO_SUBMODULE.search(message)) and _another_release(tb, sub, message):
            mod = sub.group("pkg")
            found.append(_event(tb, "no_submodule", "version_conflict", 0.6,
                                f"{mod} has no module {sub.group('sub')}: another release of {mod} is installed",
                                f"Python found {mod} but not its module {sub.group('sub')}: the calling code was "
                                f"written for a release of {mod} that has it (a newer or an older one), or a folder "
                                f"named {mod} shadows the package.",
                                f"Install the {mod} release the calling package requires (see its requirements); check "
                                f"that no local folder or file named {mod} is on the path.",
                                "CPython import machinery (ModuleNotFoundError for the first part of a dotted name "
                                "that is not found)", mod))
        elif _MIN_VERSION.search(message):
            hit = _MIN_VERSION.search(message)
            mod = (hit.group("mod") or "transformers").lower()  # type: ignore[union-attr]
            found.append(_event(tb, "min_version", "version_conflict", 0.85,
                                f"the code needs a newer {mod} than the one installed",
                                "The script checks the version of a library it was written for at start-up "
                                "(transformers' check_min_version) and the installed one is older.",
                                f"Install the {mod} the script asks for (for examples of a development release, "
                                "from source: pip install git+<its repository>), or use the script of the "
                                "installed release.", "transformers/utils/__init__.py check_min_version", mod))
        # multiprocessing's Lock/Queue is a POSIX semaphore in /dev/shm: ENOSPC there is a full /dev/shm (cpython#93253;
        # on macOS, whose semaphores are no files, it is the system's semaphore limit: PyCQA/flake8#117)
        elif (_ERRNO28.search(message) and tb.paths and tb.paths[-1].endswith("multiprocessing/synchronize.py")
              and not any(_MACOS.search(path) for path in tb.paths)):
            found.append(_event(tb, "shm_semaphore", "shm_too_small", 0.9, "/dev/shm is full: no room for a semaphore",
                                "multiprocessing keeps each Lock and Queue as a POSIX semaphore in /dev/shm, and "
                                "creating one failed with ENOSPC: /dev/shm is full or tiny (a container's 64 MB).",
                                "Start the container with --shm-size=16g or --ipc=host.",
                                "multiprocessing/synchronize.py SemLock (sem_open)", top))
        # pandarallel hands each worker's data over in files under /dev/shm (its "Memory file system", core.py
        # MEMORY_FS_ROOT = "/dev/shm", nalepae/pandarallel@0b1db61e): ENOSPC writing them (its own frame innermost, not
        # a user's function it runs writing elsewhere) is a full /dev/shm
        elif _ERRNO28.search(message) and tb.paths and tb.paths[-1].endswith(_SHM_WRITERS):
            found.append(_event(tb, "shm_files", "shm_too_small", 0.9, "/dev/shm is full: no room for a worker's data",
                                "pandarallel passes the data of each worker through files in /dev/shm, and writing "
                                "one failed with ENOSPC: /dev/shm is full or tiny (a container's 64 MB).",
                                "Start the container with --shm-size=16g or --ipc=host, or initialize pandarallel "
                                "with use_memory_fs=False.", "pandarallel core.py (MEMORY_FS_ROOT)", "pandarallel"))
        # watchdog's "[Errno 28] inotify watch limit reached" (fs.inotify.max_user_watches), not a disk
        elif _ERRNO28.search(message) and not _SHM_FILE.search(message) and "inotify" not in message:
            found.append(_event(tb, "disk_full", "disk_full", 0.9, "The disk is full (No space left on device)",
                                "A write failed with ENOSPC: the file system holding the output, checkpoint or "
                                "cache directory (or the container's overlay) is full.",
                                "Free space or write checkpoints/caches elsewhere (output_dir, HF_HOME, "
                                "TMPDIR); in a container, mount a volume for them.", "errno ENOSPC (28)", top))
        elif (_MISMATCH.search(message) or _raises_mismatch(tb)) and not _ACCEPTED.search(message):
            found.append(_event(tb, "cuda_mismatch", "cuda_toolkit_mismatch", 0.9,
                                "nvcc's CUDA differs from the CUDA torch was built with",
                                "torch.utils.cpp_extension refuses to build an extension with a CUDA toolkit "
                                "whose major version differs from torch.version.cuda.",
                                "Install the toolkit matching torch.version.cuda (or torch for this toolkit) and "
                                "point CUDA_HOME at it.",
                                "torch/utils/cpp_extension.py CUDA_MISMATCH_MESSAGE; DeepSpeed op_builder/builder.py",
                                _op(tb) or (top if top not in ("torch", "deepspeed") else "")))
    return found


def _ds_op(module: str, tb: Traceback) -> str | None:
    """The DeepSpeed op a module that lacks a name is: a pre-built op's own module (deepspeed.ops.adam.cpu_adam_op),
    or a JIT-built op's bare name (cpu_adam) where the frame that raised is DeepSpeed's."""
    if module.startswith("deepspeed.ops."):
        op = module.rsplit(".", 1)[-1].removesuffix("_op")
        return op if op in DS_OPS else None
    if module in DS_OPS and tb.paths and _DS_FRAME.search(tb.paths[-1]):
        return module
    return None


def _stale_op(tb: Traceback, op: str) -> Event:
    """A DeepSpeed op's module that lacks a function DeepSpeed calls (cpu_adam without create_adam): the op was built
    by another DeepSpeed release and loaded from torch's extension cache, or its build left a module without it."""
    missing = _NO_ATTR.search(tb.message).group("name")  # type: ignore[union-attr]
    return _event(tb, "ds_stale_op", "deepspeed_build_failure", 0.78,
                  f"DeepSpeed's {op} op module lacks '{missing}': a stale or broken op build",
                  f"DeepSpeed loaded its {op} op (a compiled module) and the module lacks a function this DeepSpeed "
                  "calls: it was built by another DeepSpeed release and found in torch's extension cache "
                  "(~/.cache/torch_extensions), or its build went wrong.",
                  f"Delete the cached build (rm -rf ~/.cache/torch_extensions/*/{op}, or TORCH_EXTENSIONS_DIR's) and "
                  f"run again so that DeepSpeed rebuilds {op}, or reinstall DeepSpeed with the op pre-built "
                  "(DS_BUILD_OPS=1).", "github:deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641:"
                  "deepspeed/ops/adam/cpu_adam.py (self.ds_opt_adam = CPUAdamBuilder().load(), then "
                  "self.ds_opt_adam.create_adam(...)); torch/utils/cpp_extension.py (a JIT build is loaded from "
                  "TORCH_EXTENSIONS_DIR when its sources are unchanged)", op)


def _raises_mismatch(tb: Traceback) -> bool:
    """The innermost frame is torch's _check_cuda_version raising CUDA_MISMATCH_MESSAGE (a paste that cut the message
    itself: "RuntimeError:" and "The detected CUDA v")."""
    source = [c for c in tb.code if c.strip("^~ ")]  # not Python 3.11's ^^^ marks under it
    return bool(source) and "raise RuntimeError(CUDA_MISMATCH_MESSAGE" in source[-1]


def _another_release(tb: Traceback, sub: re.Match[str], message: str) -> bool:
    """Whether 'No module named a.b' says another release of a: an installed package's frame imports it (not a
    script's own package, nor a checkpoint unpickled), or a paste without frames names no local folder name; not
    'a' is not a package (a module of the user's named a shadows it), nor DeepSpeed's ops (JIT-built)."""
    pkg = sub.group("pkg")
    if pkg == "deepspeed" or pkg in _LOCAL_NAMES or f"'{pkg}' is not a package" in message:
        return False
    if sub.group("sub").startswith("_") and (pkg == "numpy" or _COMPILED.search(sub.group("sub"))):
        return False
    if not tb.paths:
        return True
    return bool(_INSTALLED.search(tb.paths[-1])) and not _UNPICKLING.search(tb.paths[-1])


def _in_deepspeed_setup(tb: Traceback) -> bool:
    """Whether DeepSpeed's setup.py or its source tree's op_builder/ (an install, a source build, a checkout; an
    installed DeepSpeed's is deepspeed/ops/op_builder/) is on the stack of an exception that is no interrupt."""
    if tb.type.rsplit(".", 1)[-1] in _INTERRUPTS:
        return False
    if any(_DS_SETUP.search(p) or _DS_OP_BUILDER.search(p) for p in tb.paths):
        return True  # a paste may keep only the frames inside op_builder/
    # a setup.py beside an op_builder/ (pip's pip-req-build-x/): ColossalAI's marks its own messages "[extension]"
    return (any(p.endswith("setup.py") for p in tb.paths) and any(_SOURCE_OP_BUILDER.search(p) for p in tb.paths)
            and "[extension]" not in tb.message)


def _in_deepspeed_jit_load(tb: Traceback) -> bool:
    """Whether the traceback runs through DeepSpeed's op_builder jit_load (the frame's name, or its caller's source
    line when a paste kept the source lines and dropped the frames) and ends in an error of its own, not an
    interrupt (Ctrl-C or a launcher's SIGTERM while a rank waits for another's build lock)."""
    if tb.type.rsplit(".", 1)[-1] in _INTERRUPTS:
        return False
    return "jit_load" in tb.funcs or any("self.jit_load(" in c for c in tb.code)


def _init_of_cpu_adam(tb: Traceback) -> bool:
    """Whether TB is DeepSpeedCPUAdam.__init__ failing (its own traceback says why, and the rules above read it)."""
    return any(path.endswith("cpu_adam.py") and name == "__init__" for path, name in zip(tb.paths, tb.funcs))


def _builder_op(tb: Traceback) -> str:
    """The DeepSpeed op whose builder is on the stack (op_builder/async_io.py -> async_io), innermost first."""
    for path in reversed(tb.paths):
        found = _BUILDER_FILE.search(path)
        if found and found.group("op") in DS_OPS:
            return found.group("op")
    return ""


def _op(tb: Traceback) -> str:
    """The DeepSpeed op a traceback was building (deepspeed/ops/adam/cpu_adam.py -> cpu_adam)."""
    ops = [m.group("op") for m in (_DS_OP.search(p) for p in tb.paths) if m]
    return ops[-1] if ops else ""
