"""Compiler, linker and ninja output of a source build (a DeepSpeed JIT op, flash-attn, a setup.py extension):
which library the linker cannot find, which GPU architecture nvcc rejects."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.compiler import KILLED, NO_NINJA, NO_NVCC, NO_TOOLKIT, PROBE, first_error
from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"cannot find -l", b"ld: cannot find ", b"Unsupported gpu architecture", b"nvcc fatal",
           b"error detected in the compilation of", b"' failed with exit code", b"' failed with exit status",
           b"' failed: No such file or directory", b"-Icsrc/includes", b"Building extension module ",
           b"ninja: build stopped", b"ninja: fatal: ", b"ninja: FATAL: ", b": fatal error: ", b"): error C",
           # MSVC's fatal errors ("f.h(3): fatal error C1083: Cannot open include file") and cl.exe refusing its
           # command line ("cl : Command line error D8021 : invalid numeric argument '/Wno-reorder'")
           b"): fatal error C", b"Command line error D", b"_run_ninja_build", b"unsupported GNU version",
           b"Ninja is required to load C++ extensions", b": error: ", b"): error", b"DS_BUILD_", b"deepspeed/ops/csrc",
           b"deepspeed\\ops\\csrc", b"Error compiling objects for extension", b"building 'deepspeed.",
           # the sources of DeepSpeed's inference v2 ops (op_builder/inference_core_ops.py, ragged_ops.py)
           b"deepspeed/inference/v2/kernels", b"deepspeed\\inference\\v2\\kernels",
           b"Building wheel for deepspeed", b"Running setup.py install for deepspeed", b"Collecting ",
           b"Downloading ", b"Using cached ", b"Getting requirements to build wheel", b"Preparing metadata (",
           b"Installing build dependencies", b"egg_info did not run successfully", b"generating package metadata",
           b": python setup.py egg_info",
           b"required version by CUDA", b"error LNK", b"torch_extensions",
           # a traceback through DeepSpeed's op loader (op_builder/builder.py jit_load) marks a DeepSpeed build
           b"op_builder",
           # nvcc's "'cicc' died due to signal 9": a compiler killed beside another job's error (compiler.KILLED)
           b"' died due to signal ",
           # subprocess's FileNotFoundError for CUDA_HOME/bin/nvcc (compiler.NO_NVCC)
           b"/nvcc'", b"\\nvcc.exe'",
           # no toolkit at all (compiler.NO_TOOLKIT)
           b"CUDA_HOME environment variable is not set", b"CUDA was not found on the system", b"nvcc not found at '")
# NCCL's error trace ends its lines in " -> <code>"; "NCCL INFO" alone would make every line of an NCCL_DEBUG log
# a candidate.
NINJA = (b"TORCH_EXTENSION_NAME=", *(b" -> %d\n" % code for code in range(1, 8)))
# ninja: "FAILED: <target>" ; torch.utils.cpp_extension passes -DTORCH_EXTENSION_NAME=<op> on every compile line.
# under a rank's or a timestamp's prefix too; ninja 1.13 writes "FAILED: [code=1] cpu_adam.o"
_FAILED = re.compile(r"(?:^|\s)\W{0,3}FAILED: (?:\[code=-?\d+\] )?(?P<target>\S+)")
_EXT_NAME = re.compile(r"-DTORCH_EXTENSION_NAME=(?P<name>\w+)")
# Compiler errors (gcc/clang "f.cu:16:3: error:", nvcc/MSVC "f.cu(16): error", "error C2398") in a DeepSpeed source
# tree: a path with "deepspeed", or one of the csrc/ folders only DeepSpeed has (DeepSpeed csrc/; for a compiler
# error also includes/, spatial/ and cpu/; -Icsrc/includes marks a build in _DS_CONTEXT).
_DS_FOLDERS = ("adam", "aio", "lamb", "lion", "transformer", "sparse_attention", "random_ltd",
               "fp_quantizer", "deepspeed4science", "gds")
# DeepSpeed's csrc/quantization/ is also vLLM's and llm-awq's: a DeepSpeed tree only beside another mark of DeepSpeed
_SHARED_FOLDERS = ("quantization",)
_DS_TREE = r"(?:(?i:deepspeed)|csrc[/\\](?:" + "|".join((*_DS_FOLDERS, "includes", "spatial", "cpu")) + r")[/\\])"
_SHARED_TREE = r"csrc[/\\](?:" + "|".join(_SHARED_FOLDERS) + r")[/\\]"
# DeepSpeed's own header csrc/includes/ds_kernel_utils.h (hipify's ds_kernel_utils_hip.h), in a compiler's include
# chain: a DeepSpeed op build, also where its csrc/ folder names are other projects' too (vLLM's csrc/quantization/).
ANCHORS = (*ANCHORS, b"ds_kernel_utils")
# A source of one of DeepSpeed's own csrc/ folders, in any line ("csrc/transformer/inference/csrc/pt_binding.cpp(1977):
# note: ..."): the DeepSpeed context of a build whose paste kept its notes and setuptools' last line, not the error.
ANCHORS = (*ANCHORS, b"' extension",
           *(b"csrc" + sep + name.encode() + sep for name in _DS_FOLDERS for sep in (b"/", b"\\")))
# (ROCm's hipify writes DeepSpeed's .cu sources as .hip.)
_ERROR_IN_SOURCE = r".*\.(?:cu|cuh|hip|cpp|cc|h)(?:\(\d+\)|:\d+(?::\d+)?): (?:fatal )?error"
_CC_ERROR = re.compile(_DS_TREE + _ERROR_IN_SOURCE)
_CC_ERROR_SHARED = re.compile(_SHARED_TREE + _ERROR_IN_SOURCE)
# torch.utils.cpp_extension's JIT build: "Building extension module cpu_adam...", and its failure "Error building
# extension 'cpu_adam'".
_BUILDING = re.compile(r"Building extension module (?P<op>\w+)|Error building extension '(?P<failed>\w+)'")
# torch.utils.cpp_extension builds each JIT extension in <TORCH_EXTENSIONS_DIR>/<py_cu tag>/<name>/ (the
# "Creating extension directory .../fused_adam..." and "Emitting ninja build file .../fused_adam/build.ninja").
_EXT_DIR = re.compile(r"torch_extensions(?:[/\\]torch_extensions[/\\]Cache)?[/\\][\w.-]+[/\\](?P<op>\w+)")
# The names of DeepSpeed's ops: each op_builder/*.py NAME (DeepSpeed v0.19.5-27-gedaa722), and op_builder/cpu/comm.py's
# two (CCLCommBuilder, ShareMemCommBuilder; setup.py builds them as deepspeed.ops.comm.<NAME>_op). Not the XPU-only
# op_builder/xpu/ ones: its flash_attn would read flash-attn's own build as DeepSpeed's.
DS_OPS = frozenset({
    "async_io", "cpu_adagrad", "cpu_adam", "cpu_lion", "cutlass_ops", "dc", "deepspeed_ccl_comm",
    "deepspeed_shm_comm", "evoformer_attn", "fp_quantizer",
    "fused_adam", "fused_lamb", "fused_lion", "gds", "inference_core_ops", "pin_memory", "quantizer",
    "ragged_device_ops", "ragged_ops", "random_ltd", "sparse_attn", "spatial_inference", "stochastic_transformer",
    "transformer", "transformer_inference", "utils",
})
# A build that stopped: ninja, nvcc (any fatal but the architecture, which has its own cause), a missing header.
# nvcc's host_config.h "#error -- unsupported GNU version! gcc versions later than N are not supported!"; torch's
# verify_ninja_availability "Ninja is required to load C++ extensions".
_STOPPED = re.compile(r"ninja: build stopped|nvcc fatal\s*:(?!\s*Unsupported gpu architecture)\s*|: fatal error: "
                      # torch's _run_ninja_build re-raises ninja's exit (not a launcher's CalledProcessError)
                      r"|subprocess\.CalledProcessError: Command '\['ninja'|_run_ninja_build|Error building extension"
                      r"|unsupported GNU version|" + re.escape(NO_NINJA) +
                      # torch's BuildExtension (a pip pre-build with DS_BUILD_OPS): _run_ninja_build's error_prefix
                      r"|Error compiling objects for extension"
                      # a compiler's own error line: file:line[:col]: error (gcc, clang) or file(line): error (nvcc, MSVC)
                      r"|\.(?:c|cc|cpp|cxx|cu|cuh|hip|h|hpp)(?::\d+(?::\d+)?|\(\d+\)): (?:fatal )?error\b"
                      r"|\bcl : Command line error D\d{4}\b"
                      # torch's _check_cuda_version: a gcc outside the bounds of the CUDA toolkit
                      r"|than the (?:maximum|minimum) required version by CUDA"
                      # the linker (GNU collect2, MSVC link.exe) and ninja's own errors
                      # (ninja's Error() and Fatal() in src/util.cc: "ninja: fatal: waitpid(...)", old releases'
                      # "ninja: FATAL: "; not a fork or posix_spawn without memory: the host's RAM, not the build)
                      r"|collect2: error: ld returned|\bfatal error LNK\d+|: error LNK\d+"
                      r"|(?:^|\s)ninja: (?:error: |(?:fatal|FATAL): (?!.*Cannot allocate memory))"
                      # GNU ld missing an input object: its compile step did not produce it
                      r"|\bld: cannot find \S+\.o: No such file or directory"
                      # no nvcc where the build runs it, or no CUDA toolkit at all
                      r"|" + NO_NVCC.pattern + r"|" + NO_TOOLKIT.pattern)
# torch.utils.cpp_extension's _run_ninja_build: ninja's CalledProcessError, re-raised as "Error building extension".
# A traceback through _run_ninja_build: the function raises only when ninja failed (CPython's ", in <func>", IPython's
# "<file>.py in <func>(<args>)").
_TORCH_JIT = re.compile(r"subprocess\.CalledProcessError: Command '\['ninja'|Error building extension '"
                        r"|(?:,|\.py) in _run_ninja_build\b|" + re.escape(NO_NINJA))
_DS_SRC = re.compile(r"csrc[/\\](?P<a>\w+)[/\\](?P<b>\w+)[/\\]csrc")
# A source file of an op: csrc/adam/cpu_adam_impl.cpp, csrc/lamb/fused_lamb_cuda_kernel.cu (its stem starts with the
# op's NAME).
# A source (or its object) in one of DeepSpeed's csrc/ folders; other projects' csrc/ trees are not read as ops.
_DS_FILE = re.compile(r"csrc[/\\](?:" + "|".join((*_DS_FOLDERS, "cpu", "spatial", "includes", "xpu"))
                      + r")[/\\](?:\w+[/\\])*(?P<stem>\w+)\.(?:cu|cuh|hip|cpp|cc|h|o)\b")
# DeepSpeed op names that any project's files may have (utils.cpp, dc.o): never read from a file name.
_GENERIC_OPS = frozenset({"utils", "dc"})
# setuptools/distutils "error: command 'gcc' failed with exit status 1" (Windows: "exit code N"); nvcc's summary
# "1 error detected in the compilation of "csrc/.../gelu.cu"".
_COMMAND_FAILED = re.compile(r"error: command '(?P<cmd>[^']+)' failed with exit (?:code|status) -?\d+"
                             # distutils spawn (setuptools) when the compiler is not installed at all
                             r"|error: command '[^']+' failed: No such file or directory"
                             r"|\d+ errors? detected in the compilation of \"(?P<src>[^\"]+)\"")
# pip's wheel_builder.py "Failed building wheel for %s"; setuptools' build_ext "building '%s' extension".
_OTHER_BUILD = re.compile(r"Failed building wheel for (?P<pkg>[\w.-]+)|building '(?P<ext>[\w.]+)' extension")
# A DeepSpeed op's sources: its csrc/<a>/<b>/csrc tree, setup.py's -Icsrc/includes, op_builder, DS_BUILD_* flags.
_DS_CONTEXT = re.compile(r"csrc[/\\]\w+[/\\]\w+[/\\]csrc|-Icsrc[/\\]includes|op_builder|\bDS_BUILD_|deepspeed[/\\]ops"
                         r"|deepspeed[/\\]inference[/\\]v2[/\\]kernels[/\\]|\bcsrc[/\\]includes[/\\]ds_kernel_utils"
                         r"|\bcsrc[/\\](?:" + "|".join(_DS_FOLDERS) + r")[/\\]"
                         # setuptools' "building 'deepspeed.ops.adam.cpu_adam_op' extension"; pip building deepspeed
                         r"|building 'deepspeed\.|(?:Building wheel|Running setup\.py install) for deepspeed\b")
# pip installing DeepSpeed from its source archive, and a build step of that install failing (pip's
# operations/build: "Getting requirements to build wheel ... error", "Preparing metadata (setup.py) ... error", or
# "× ... did not run successfully."): DeepSpeed's setup.py ran and stopped, before any compiler.
_PIP_PACKAGE = re.compile(r"^\W*(?:Collecting|Downloading|Using cached) (?:\S*/)?(?P<pkg>[A-Za-z][\w.]*)")
_PIP_STEP = re.compile(r"(?:Getting requirements to build wheel|Preparing metadata \([\w.]+\)|Installing build dependencies)"
                       r" (?:\.\.\. error|did not run successfully)"
                       # newer pip: "× python setup.py egg_info did not run successfully." and its metadata summary;
                       # older pip: "ERROR: Command errored out with exit status 1: python setup.py egg_info ..."
                       r"|python setup\.py egg_info did not run successfully|Encountered error while generating package "
                       r"metadata|Command errored out with exit status \d+: python setup\.py egg_info")
# NCCL's error trace: each function that returns an error logs "NCCL INFO <file>:<line> -> <ncclResult_t>".
_NCCL_TRACE = re.compile(r"NCCL INFO [\w/.]+\.(?:cc|h|cpp):\d+ -> (?P<code>[1-9])\b")
# GNU ld (binutils ld/ldfile.c): "cannot find -lNAME"; lld: "unable to find library -lNAME".
_LD = re.compile(r"(?:\bld(?:\.\w+)?|collect2|lld)\b.*?(?:cannot find|unable to find library) -l(?P<lib>[\w+.-]+)")
_CUDA_LIBS = ("cudart", "cublas", "cublasLt", "curand", "cufft", "cusparse", "cusolver", "cudnn", "nccl", "nvrtc",
              "cuda", "nvToolsExt", "cupti", "nvJitLink")
# nvcc (CUDA toolkit): "nvcc fatal   : Unsupported gpu architecture 'compute_89'".
_NVCC = re.compile(r"nvcc fatal\s*:\s*Unsupported gpu architecture '?(?P<arch>\w+)")


def _builds_another(lines: list[Line], names: list[str]) -> bool:
    """Whether the build names another package or extension than DeepSpeed's: pip's "Failed building wheel for
    xformers", setuptools' "building 'unicore_fused_adam' extension" or an extension's -DTORCH_EXTENSION_NAME (Uni-Core
    has a csrc/adam/ too): then a failed compiler command is that package's."""
    built = (m.group("pkg") or m.group("ext") for m in (_OTHER_BUILD.search(x.text) for x in lines) if m)
    return any(not name.lower().startswith("deepspeed") for name in built) or any(not op_name(n) for n in names)


def events(lines: list[Line]) -> list[Event]:
    found = []
    lines = [line for line in lines if PROBE not in line.text]  # DeepSpeed's import-time probe warnings
    names = [m.group("name") for m in (_EXT_NAME.search(line.text) for line in lines) if m]
    nccl_trace = next((line for line in lines if _NCCL_TRACE.search(line.text)), None)
    if nccl_trace is not None:
        found.append(Event(
            "nccl_trace", "nccl_error", 0.45, "An NCCL call failed (NCCL's error trace)",
            "NCCL logged the chain of functions that returned an error (`file:line -> code`); the first WARN line "
            "above it, if any, says why.", "Re-run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) and read the "
            "first NCCL WARN; check the network interface (NCCL_SOCKET_IFNAME) and IB.", nccl_trace.file,
            nccl_trace.number, nccl_trace.text, "NCCL src/include/checks.h (NCCLCHECK's INFO trace)", "nccl",
            ("export NCCL_DEBUG=INFO",)))
    # the torch extensions the log says it builds: "Building extension module X", its torch_extensions folder
    built = [m.group("op") or m.group("failed") for m in (_BUILDING.search(x.text) for x in lines) if m]
    folders = [m.group("op") for m in (_EXT_DIR.search(x.text) for x in lines) if m]
    ds_ops = [op for op in built if op in DS_OPS]
    ds_ops += [op for op in (op_name(n) for n in names) if op]
    ds_ops += [op for op in (_file_op(x.text) for x in lines) if op]
    ds_ops += [op for op in folders if op in DS_OPS]
    ds_context = any(_DS_CONTEXT.search(x.text) for x in lines)
    compile_error = next((line for line in lines if _CC_ERROR.search(line.text) or (
        (ds_context or ds_ops) and _CC_ERROR_SHARED.search(line.text))), None)
    # beside another job's compiler killed for memory (SIG152, 0.9), a compiler's own error is what more RAM would not
    # fix: it comes first
    killed = any(KILLED.search(x.text) for x in lines)
    if compile_error is not None:
        src = _DS_SRC.search(compile_error.text)
        found.append(Event(
            "compiler", "deepspeed_build_failure", 0.91 if killed else 0.7,
            "Compiling a DeepSpeed op failed" + _why(compile_error),
            "The compiler rejected a DeepSpeed op's source (often a CUDA toolkit, compiler or platform the op does "
            "not support, e.g. Windows or a newer nvcc).", "Use a DeepSpeed release that supports this toolkit/"
            "platform, skip building the op (DS_BUILD_<OP>=0), or build on Linux with a supported gcc and CUDA.",
            compile_error.file, compile_error.number, compile_error.text, "DeepSpeed csrc/ (compiler output)",
            f"{src.group('a')}_{src.group('b')}" if src else (ds_ops[0] if ds_ops else "")))
    failed_command = next((line for line in lines if _COMMAND_FAILED.search(line.text)), None)
    deepspeed = bool(ds_ops) or ds_context
    # an extension the log names that is not a DeepSpeed op (mamba's selective_scan): its build is not DeepSpeed's
    foreign = not deepspeed and any(not op_name(name) for name in built + folders + names)
    stopped = next((line for line in lines if _STOPPED.search(line.text)), None) if deepspeed else None
    reason = first_error(lines) if deepspeed or not foreign else None
    if compile_error is None and failed_command is None and stopped is not None:
        op = ds_ops[0] if ds_ops else ""
        what = f"Building the DeepSpeed op {op} failed" if op else "Building a DeepSpeed op failed"
        if reason is not None:  # the compiler's first error says why: it names the cause's title and fix
            found.append(Event(
                "compiler", "deepspeed_build_failure", 0.91 if killed else 0.81, f"{what}: {reason.reason}",
                f"torch.utils.cpp_extension could not build DeepSpeed's {op or 'op'} (a JIT build at start-up or a "
                f"pre-build). {reason.explanation}", reason.fix, reason.line.file, reason.line.number,
                reason.line.text, "the compiler's first error; torch/utils/cpp_extension.py (_run_ninja_build)", op))
        else:
            found.append(Event(
                "compiler", "deepspeed_build_failure", 0.6, what,
                f"torch.utils.cpp_extension could not build DeepSpeed's {op or 'op'} (a JIT build at start-up or a "
                "pre-build): the compiler or nvcc stopped; the first compiler error above says why (often a gcc, "
                "CUDA toolkit or platform the op does not support).",
                "Read the first compiler error; install a gcc and CUDA toolkit the DeepSpeed release supports (nvcc's "
                "CUDA matching torch.version.cuda), or avoid the op (another optimizer, DS_BUILD_<OP>=0).",
                stopped.file, stopped.number, stopped.text,
                "DeepSpeed op_builder/builder.py (jit_load); torch/utils/cpp_extension.py (_run_ninja_build)", op))
    if compile_error is None and failed_command is not None and ds_context and not _builds_another(lines, names):
        src = next((m for m in (_DS_SRC.search(x.text) for x in lines) if m), None)
        absent = "failed: No such file or directory" in failed_command.text
        found.append(Event(
            "compiler", "deepspeed_build_failure", 0.65,
            "Building a DeepSpeed op failed: the compiler is not installed" if absent
            else "Building a DeepSpeed op failed (the compiler exited)",
            "Building a DeepSpeed op needs a C++ compiler (and nvcc for CUDA ops), and the one setuptools ran is not "
            "installed." if absent else
            "The compiler or nvcc failed while building a DeepSpeed op from its csrc/ sources (a pre-build with "
            "DS_BUILD_OPS or a JIT build): often a toolkit, compiler or platform the op does not support.",
            "Install a compiler (apt install build-essential, or conda install gxx_linux-64) and, for CUDA ops, the "
            "CUDA toolkit matching torch.version.cuda; or install DeepSpeed without pre-building ops." if absent else
            "Read the first compiler error above this line; skip the op (DS_BUILD_<OP>=0, or install without "
            "DS_BUILD_OPS and let it JIT-build), or build with a gcc and CUDA toolkit the DeepSpeed release supports.",
            failed_command.file, failed_command.number, failed_command.text,
            "setuptools/distutils (error: command ... failed with exit status); DeepSpeed setup.py and op_builder/",
            f"{src.group('a')}_{src.group('b')}" if src else _op(ds_ops, names)))
    jit = next((line for line in lines if _TORCH_JIT.search(line.text)), None) if not (deepspeed or foreign) else None
    if compile_error is None and failed_command is None and jit is not None:
        # the compiler's own error, when the excerpt has it, before the traceback that reports it
        shown = reason.line if reason is not None else next(
            (x for x in lines if _STOPPED.search(x.text) and not _TORCH_JIT.search(x.text)), jit)
        found.append(Event(
            "compiler", "deepspeed_build_failure", 0.5,
            f"Building a compiled op failed: {reason.reason}" if reason is not None
            else "Building a compiled op failed (ninja)",
            "torch.utils.cpp_extension's JIT build of an unnamed extension failed: in a "
            "training run usually a DeepSpeed op built at start-up. "
            + (reason.explanation if reason is not None else "The compiler's first error above says why."),
            reason.fix if reason is not None else "Read the first compiler error; install a gcc and CUDA toolkit the "
            "extension supports (nvcc's CUDA matching torch.version.cuda), or use a prebuilt op.",
            shown.file, shown.number, shown.text, "torch/utils/cpp_extension.py (_run_ninja_build)",
            _op(ds_ops, names)))
    pip_step = next((x for x in lines if _PIP_STEP.search(x.text)), None)
    if pip_step is not None and _pip_package_before(lines, pip_step).startswith("deepspeed"):
        found.append(Event(
            "pip_build", "deepspeed_build_failure", 0.6, "pip could not prepare DeepSpeed's build",
            "pip ran DeepSpeed's setup.py to build it from source and it stopped before compiling: typically torch "
            "is not importable in pip's isolated build environment (DeepSpeed's setup.py needs it to pre-build ops), "
            "or the platform (Windows) needs DeepSpeed's own build script.",
            "Install torch first and build without isolation (pip install --no-build-isolation deepspeed), or install "
            "a DeepSpeed wheel for the platform; on Windows use DeepSpeed's build_win.bat or WSL.",
            pip_step.file, pip_step.number, pip_step.text,
            "pip operations/build (metadata and build-requirement hooks); DeepSpeed setup.py", "deepspeed"))
    for line in lines:
        failed = _FAILED.search(line.text)
        target_op = _target_op(failed.group("target")) if failed else ""
        if failed and not foreign and (names or target_op or ".cuda.o" in failed.group("target")
                                       or ".so" in failed.group("target")):
            found.append(Event(
                "ninja", "deepspeed_build_failure", 0.6, "Building a compiled op failed (ninja)",
                "ninja could not build a torch C++/CUDA extension (a DeepSpeed op JIT-build or a source install); "
                "the compiler's first error above this line says why.",
                reason.fix if reason is not None else
                "Read the first compiler error before FAILED; install the CUDA toolkit matching torch.version.cuda "
                "and a supported gcc, or install the prebuilt op (DS_BUILD_OPS=0 for JIT).",
                line.file, line.number, line.text, "ninja (FAILED: target); torch/utils/cpp_extension.py",
                target_op or _op(ds_ops, names), symptom=False))
            continue
        ld = _LD.search(line.text)
        if ld:
            lib = ld.group("lib")
            cuda = lib in _CUDA_LIBS or lib.startswith(("cu", "nv"))
            found.append(Event(
                "linker", "missing_cuda_library" if cuda else "deepspeed_build_failure", 0.92 if cuda else 0.6,
                f"The linker cannot find lib{lib} while building an extension",
                f"ld could not find lib{lib}.so while linking a compiled op (a DeepSpeed JIT op or a source "
                "build): the CUDA toolkit's library directory is not on the linker's path, or the toolkit lacks it.",
                f"Point the linker at the toolkit's libraries (export LIBRARY_PATH=$CUDA_HOME/lib64:$LIBRARY_PATH, "
                f"or symlink lib{lib}.so into it), or install the toolkit package that has lib{lib}.",
                line.file, line.number, line.text, "binutils ld/ldfile.c: \"cannot find -l%s\"", f"lib{lib}",
                ("ls $CUDA_HOME/lib64 | grep -i " + lib, "export LIBRARY_PATH=$CUDA_HOME/lib64:$LIBRARY_PATH")))
            continue
        nvcc = _NVCC.search(line.text)
        if nvcc:
            arch = nvcc.group("arch")
            found.append(Event(
                "nvcc", "cuda_arch_unsupported", 0.92, f"nvcc does not know the GPU architecture {arch}",
                f"The CUDA toolkit's nvcc is older than the GPU architecture the build asks for ({arch}): a source "
                "build (TORCH_CUDA_ARCH_LIST, or the GPU detected) needs a newer toolkit.",
                "Install a CUDA toolkit that supports this GPU (compute_89/90 need 11.8+, compute_100/120 need "
                "12.8+), or set TORCH_CUDA_ARCH_LIST to architectures this nvcc knows.",
                line.file, line.number, line.text, "CUDA toolkit nvcc: \"Unsupported gpu architecture\"",
                ds_ops[0] if ds_ops else "",  # a DeepSpeed op; another build is named by pip's package (BUILT)
                ("nvcc --version", "nvcc --list-gpu-arch")))
    return found


def _why(line: Line) -> str:
    """': <the compiler's reason>' for a compiler's error line, or ''."""
    reason = first_error([line])
    return f": {reason.reason}" if reason is not None else ""


def _op(ds_ops: list[str], names: list[str]) -> str:
    """The op a build failure is about: a DeepSpeed op when one is named, else the first TORCH_EXTENSION_NAME."""
    return ds_ops[0] if ds_ops else names[0] if names else ""


def op_name(extension: str) -> str:
    """DeepSpeed's op for a TORCH_EXTENSION_NAME: cpu_adam, or cpu_adam_op (setup.py's pre-build name)."""
    for name in (extension, extension.removesuffix("_op")):
        if name in DS_OPS:
            return name
    return ""


def _file_op(text: str) -> str:
    """The op whose sources a line names (csrc/lamb/fused_lamb_cuda_kernel.cu -> fused_lamb), the longest match."""
    found = _DS_FILE.search(text)
    if not found:
        return ""
    return _stem_op(found.group("stem"))


def _target_op(target: str) -> str:
    """The DeepSpeed op a ninja target is an object of: cpu_adam.o, fused_adam_frontend.o -> cpu_adam, fused_adam.
    Only a bare object, as torch's JIT build file names them: CMake's src/x.dir/transformer.cc.o is another
    project's."""
    bare = re.fullmatch(r"(?P<stem>\w+)\.(?:cuda\.)?o", target)
    return _stem_op(bare.group("stem")) if bare else ""


def _stem_op(stem: str) -> str:
    """The longest DeepSpeed op name a file stem is or starts (cpu_adam_impl -> cpu_adam), never a generic one."""
    return max((op for op in DS_OPS - _GENERIC_OPS if stem == op or stem.startswith(op + "_")), key=len, default="")


def _pip_package_before(lines: list[Line], step: Line) -> str:
    """The package pip was working on when STEP failed: the last 'Collecting/Downloading X' line before it."""
    package = ""
    for line in lines:
        if line is step:
            break
        found = _PIP_PACKAGE.search(line.text)
        if found and line.file == step.file:
            package = found.group("pkg").lower()
    return package
