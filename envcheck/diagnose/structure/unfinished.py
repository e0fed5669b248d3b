"""A paste that ends while a DeepSpeed op is being compiled: the build's command lines, its progress or its frames are
the last thing it shows, and nothing says the build finished. Users cut a log there when the compiler's output runs
on for pages; the error is gone, but what was running is not. A weak cause, as structure/cut.py's: it leads only when
nothing else was found, and it says how to see the build's error."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.build import op_name
from envcheck.diagnose.structure.model import Event, Line
from envcheck.diagnose.structure.tracebacks import Traceback

ANCHORS = (b"Building extension module ", b"building 'deepspeed.", b"op_builder", b"DS_BUILD_",
           b"deepspeed/ops/csrc", b"deepspeed\\ops\\csrc", b"Emitting ninja build file ",
           b"Loading extension module ", b"No modifications detected for re-loaded extension", b"Time to load ",
           b"Successfully installed ", b"Successfully built ", b"Finished processing dependencies for ",
           b"Installed ", b" + deepspeed==", b" DONE ", b"build time = ",
           b"Requirement already satisfied: ", b"Basic Optimizer = ", b"Using cache", b"[YES]", b"import deepspeed",
           # ninja's link step of a JIT build ("[3/3] c++ a.o b.cuda.o -shared -L... -o fused_adam.so"; on Windows
           # '[3/3] "...\\link.exe" ... /DLL ... /out:fused_adam.pyd'), and ninja finding everything built
           b" -shared ", b"link.exe", b"ninja: no work to do")
CONFIDENCE = 0.3
# What a DeepSpeed op build prints while it runs:
# - torch.utils.cpp_extension's JIT build (_jit_compile, _write_ninja_file_and_build_library): "Emitting ninja build
#   file <dir>/<op>/build.ninja...", "Building extension module <op>...", and ninja's compile lines, which carry
#   -DTORCH_EXTENSION_NAME=<op>;
# - setuptools' pre-build (DeepSpeed setup.py with DS_BUILD_OPS or DS_BUILD_<OP>): "building
#   'deepspeed.ops.<...>' extension" and compiler lines over DeepSpeed's csrc/ sources;
# - the command that starts a pre-build (DS_BUILD_<OP>=1 with setup.py or pip install), and the frames of
#   op_builder/builder.py's builder(), load() and jit_load() in a traceback the paste cut.
_ACTIVITY = re.compile(r"Building extension module (?P<op>\w+)|Emitting ninja build file \S*?[/\\](?P<dir>\w+)"
                       r"[/\\]build\.ninja|-DTORCH_EXTENSION_NAME=(?P<ext>\w+)"
                       r"|building 'deepspeed\.ops\.(?:\w+\.)*(?P<mod>\w+)'"
                       r"|(?P<src>deepspeed[/\\]ops[/\\]csrc[/\\])|op_builder[/\\]builder\.py\", line \d+, in "
                       r"(?:builder|load|jit_load)\b|(?P<cmd>\bDS_BUILD_\w+=1\b.*(?:setup\.py|pip3? install))")
# a source path counts only on a compiler's command line or in its diagnostics (not in a listing of files)
_COMPILER = re.compile(r"\b(?:nvcc|hipcc|gcc|g\+\+|c\+\+|clang\+*|cl\.exe)\s|^\W*\[\d+/\d+\] "
                       r"|: (?:warning|error|note): |\(\d+\): (?:warning|error|note)|In file included from ")
# a Dockerfile's text ("RUN DS_BUILD_OPS=1 pip install ...") says what a build would run, not that it ran: Docker's
# own output prefixes its steps ("#8 [5/7] RUN", "Step 5/7 : RUN", " > [stage 2/2] RUN")
_DOCKERFILE = re.compile(r"^\s*RUN\s")
# What says the build ended, or that nothing was to build: cpp_extension loads the module it built, or found it
# built; DeepSpeed times the load, names the optimizer it set up (runtime/engine.py "DeepSpeed Basic Optimizer = ")
# and its setup.py its build time ("deepspeed build time = N secs"); ds_report's [YES] for a pre-built op; pip's and
# uv's reports of an install that finished (of any package: the command ended) or had nothing to do; Docker's cached
# or finished build step (legacy "---> Using cache", BuildKit "#8 DONE 1432.1s"); deepspeed imported afterwards;
# ninja's last step or its "no work to do". Not the Trainer's banner or loss lines: as anchors they would make every
# line of a dense training log a candidate (a run that went on past the build is one whose log goes on past NEAR_END
# lines). pip echoes the package's name as the user spelt it (DeepSpeed): case does not matter.
_DONE = re.compile(r"Loading extension module \w+|No modifications detected for re-loaded extension module"
                   r"|Time to load \w+ op|Basic Optimizer = |deepspeed build time = |\.{2,} \[YES\]"
                   r"|Successfully (?:installed|built) |Finished processing dependencies for deepspeed"
                   r"|^\W*Installed \d+ packages? in |^\W*\+ deepspeed==|Requirement already satisfied: deepspeed"
                   r"|---> Using cache|#\d+ DONE \d|\bimport deepspeed\b"
                   # ninja (-v, as torch runs it) prints a step's line when the step ends: [N/N] is the last one done
                   r"|^\W*\[(?P<steps>\d+)/(?P=steps)\] |ninja: no work to do",
                   re.I)
# the paste must end near the build's last line, followed by at most NEAR_END lines (trailing blank lines left out): a
# log that goes on for pages after it (training, other output the readers do not keep) went past the build
NEAR_END = 30
# an error of any kind (a compiler's "error:", ninja's "FAILED:", a "fatal", an exception's "...Error")
_ERROR = re.compile(r"error|FAILED|fatal", re.I)
_QUIET = re.compile(r"\s(?:-q+|--quiet)\b")
# setuptools packing the sources into a wheel or an install ("adding 'deepspeed/ops/csrc/...'", "copying ..."): no
# compiler runs
_PACKAGING = re.compile(r"\W*(?:adding|copying) '?\S")
# Projects that build ops under DeepSpeed's names with copies of its op_builder (ColossalAI 0.2.x's NAME = "cpu_adam"
# in ~/.cache/colossalai/torch_extensions, Tencent's PatrickStar)
_NOT_DEEPSPEED = re.compile(r"colossalai|patrickstar", re.I)
# DeepSpeed op names no other project's JIT build was found to use (a sixth review searched public code)
DS_ONLY_OPS = frozenset({"random_ltd", "transformer_inference", "ragged_device_ops", "ragged_ops", "fp_quantizer",
                     "evoformer_attn", "cpu_lion", "cpu_adagrad", "inference_core_ops", "spatial_inference",
                     "stochastic_transformer", "fused_lion"})
# torch extensions that are no DeepSpeed op (other projects' JIT builds) name no DeepSpeed build
_DS_WORD = re.compile(r"deepspeed|op_builder|DS_BUILD_", re.I)


def events(lines: list[Line], parsed: list[Traceback], ends: dict[str, int]) -> list[Event]:
    """LINES: the excerpt's candidate lines in log order; PARSED: its tracebacks with an exception line; ENDS: each
    file's last non-blank line number."""
    if parsed:  # an exception in any log given: the run failed otherwise, or the build's error was not cut off
        return []
    found = []
    for file in dict.fromkeys(line.file for line in lines):
        if file not in ends:
            continue
        mine = [line for line in lines if line.file == file]
        activity = [(line, match) for line, match in ((x, _ACTIVITY.search(x.text)) for x in mine) if match]
        # DeepSpeed's name in the log, or an op no other project builds under that name (random_ltd; not cpu_adam,
        # which ColossalAI 0.2 and PatrickStar's copies of DeepSpeed's op_builder build too, nor transformer)
        if any(_NOT_DEEPSPEED.search(line.text) for line in mine):
            continue
        if not any(_DS_WORD.search(line.text) for line in mine) and not any(
                _op(match) in DS_ONLY_OPS for _, match in activity):
            continue
        activity = [(line, match) for line, match in activity if _is_ds_op(match) and not _PACKAGING.match(line.text)
                    and not (match.group("src") and not _COMPILER.search(line.text))
                    and not (match.group("cmd") and _DOCKERFILE.match(line.text))]
        if not activity:
            continue
        last, match = activity[-1]
        if last.number < ends[file] - NEAR_END:
            continue
        # a command alone starts a build: its output must follow (pip -q prints none when the build works); ENDS
        # leaves out trailing blank lines
        if match.group("cmd") and (last.number >= ends[file] or _QUIET.search(last.text)):
            continue
        # a line that says a build ended or an op loaded (before it too: the run had built its ops, and a build's
        # command after that is text, a README's steps), or an error line after it (the build's own: other readers
        # name it): the build ended, or the run failed otherwise
        if any(_DONE.search(line.text) for line in mine) or any(
                line.number > last.number and _ERROR.search(line.text) for line in mine):
            continue
        # another log given with this one that shows an error: the failure is there, whatever this one shows
        if any(x.file != file and _ERROR.search(x.text) for x in lines):
            continue
        op = _op(match) or next((o for o in (_op(m) for _, m in reversed(activity)) if o), "")
        found.append(Event(
            "unfinished_build", "deepspeed_build_failure", CONFIDENCE,
            f"The paste ends while DeepSpeed's {op or 'op'} is being built (a failing op build, likely)",
            "The last thing the log shows is a DeepSpeed op being compiled (its compiler command lines, torch's JIT "
            "build or setup.py's pre-build), and no line says the build finished: the lines cut off are usually the "
            "compiler's output and its error.",
            "Read the complete build output from its first compiler error (search for 'error'), or run ds_report; "
            "pre-building the op (e.g. DS_BUILD_CPU_ADAM=1 pip install deepspeed) shows the compiler's error at "
            "install. If the run stopped there without an error, a build killed earlier left its lock file: "
            "torch waits for <extensions root>/<op>/lock to go; delete it.",
            last.file, last.number, last.text.strip(),
            "torch/utils/cpp_extension.py (_jit_compile: 'Building extension module', 'Loading extension module', "
            "FileBaton(<build dir>/lock)); DeepSpeed setup.py and op_builder/builder.py", op))
    return found


def _extension(match: re.Match[str]) -> str | None:
    """The extension an activity line names (Building extension module X, its build folder, TORCH_EXTENSION_NAME,
    setuptools' building 'deepspeed.ops.adam.cpu_adam_op' extension)."""
    return match.group("op") or match.group("dir") or match.group("ext") or match.group("mod")


def _is_ds_op(match: re.Match[str]) -> bool:
    """An activity of a DeepSpeed op: a named extension must be one of DeepSpeed's ops (cpu_adam, cpu_adam_op)."""
    name = _extension(match)
    return name is None or bool(op_name(name))


def _op(match: re.Match[str]) -> str:
    """The DeepSpeed op an activity line names, or ""."""
    return op_name(_extension(match) or "")
