"""A paste that stops inside a traceback, before its exception line, in DeepSpeed's optimizer set-up: the code that
JIT-builds DeepSpeed's ops. Users cut a log there when the next lines are the build's compiler output; the error is
gone, but where it happened is not. A weak cause: it says the build is the likely failure and how to see why."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

# a frame of a function, or of the module itself ("in <module>": a script constructing the optimizer at top level)
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+, in (?P<func><module>|\w+)')
# DeepSpeed op_builder/builder.py: load() -> jit_load() -> torch's load(); setup.py's builder() for a pre-build.
_BUILDER = re.compile(r"op_builder[/\\]builder\.py$")
_BUILDER_FUNCS = frozenset({"load", "jit_load", "builder"})
# The constructors of DeepSpeed's op-backed optimizers load their op (deepspeed/ops/adam/cpu_adam.py __init__:
# CPUAdamBuilder().load(); fused_adam.py, lamb/fused_lamb.py, adagrad/cpu_adagrad.py, lion/*.py alike).
_DS_OPS_FILE = re.compile(r"deepspeed[/\\]ops[/\\]\w+[/\\]\w+\.py$")
# A call constructing one: DeepSpeed's own names; FusedAdam/FusedLamb/FusedLion are also apex's, so only beside a
# torch JIT build (torch_extensions) or DeepSpeed's name in the excerpt.
_DS_OPTIMIZER = re.compile(r"\b(?:DeepSpeedCPUAdam|DeepSpeedCPUAdagrad|DeepSpeedCPULion)\(")
_FUSED_OPTIMIZER = re.compile(r"\b(?:FusedAdam|FusedLamb|FusedLion)\(")
_DS_WORD = re.compile(r"deepspeed|torch_extensions", re.I)
# deepspeed/runtime/engine.py DeepSpeedEngine.__init__ -> _configure_optimizer -> _configure_basic_optimizer, which
# constructs DeepSpeedCPUAdam/FusedAdam (or ZeRO's optimizer around one)
_ENGINE = re.compile(r"deepspeed[/\\]runtime[/\\]engine\.py$")
_ENGINE_FUNCS = frozenset({"_configure_optimizer", "_configure_basic_optimizer", "_configure_zero_optimizer"})


def events(blocks: list[tuple[list[Line], int]], lines: list[Line]) -> list[Event]:
    """BLOCKS: the traceback blocks that hold no exception line; LINES: the excerpt's candidate lines."""
    found = []
    for block, prefix in blocks:
        frames = [i for i, line in enumerate(block) if _FRAME.search(line.text[prefix:])]
        if not frames or _continued(block, lines):
            continue
        last = block[frames[-1]]
        frame = _FRAME.search(last.text[prefix:])
        assert frame is not None
        after = [line.text[prefix:].strip() for line in block[frames[-1] + 1:]]
        code = after[0] if after else ""
        # a line after the frame's source (but Python 3.11's ^^^ marks under it): the traceback did not stop there
        if any(text.strip("^~ ") for text in after[1:]):
            continue
        path, func = frame.group("path"), frame.group("func")
        engine = bool(_ENGINE.search(path)) and (func in _ENGINE_FUNCS or "_configure_optimizer(" in code)
        loading = (bool(_BUILDER.search(path)) and func in _BUILDER_FUNCS) \
            or (bool(_DS_OPS_FILE.search(path)) and func == "__init__") or bool(_DS_OPTIMIZER.search(code)) \
            or (bool(_FUSED_OPTIMIZER.search(code)) and any(_DS_WORD.search(x.text) for x in [*lines, *block]))
        if not (loading or engine):
            continue
        found.append(Event(
            "cut_build", "deepspeed_build_failure", 0.4 if loading else 0.35,
            "The paste stops inside DeepSpeed's op loading, before its error (a DeepSpeed op build, likely)",
            "The traceback ends, without its exception line, where DeepSpeed builds or loads a compiled op (an "
            "op-backed optimizer's constructor, op_builder's load, or the engine's optimizer set-up that creates "
            "one): the lines cut off are usually the JIT build's compiler output and its error.",
            "Read the complete log from the first 'Building extension module' line (the first compiler error says "
            "why), or run ds_report; pre-building the op (e.g. DS_BUILD_CPU_ADAM=1 pip install deepspeed) shows the "
            "compiler's error at install.", last.file, last.number, last.text.strip(),
            "DeepSpeed op_builder/builder.py (load, jit_load), deepspeed/ops/*/ (optimizer constructors load their "
            "op), runtime/engine.py (_configure_basic_optimizer)", ""))
    return found


def _continued(block: list[Line], lines: list[Line]) -> bool:
    """Whether the excerpt goes on after BLOCK: an error or exception line of the same file after its last line."""
    end = block[-1]
    return any(line.file == end.file and line.number > end.number for line in lines)
