"""Import torch and compiled extensions in child processes, and record how each child ended.

This is where a binary mismatch shows itself: a segfault (the child dies by SIGSEGV), an `undefined symbol`
ImportError, or a hang. The children run in the target interpreter, in parallel, each with a timeout; envcheck's
own process never imports any of them.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from envcheck import proc
from envcheck.snapshot import DeepSpeed, PythonEnv, RuntimeResult

IMPORT_TIMEOUT_S = 60.0
_MARK = "@@envcheck-result@@"

# Each child prints one marked JSON line of facts; an exception becomes {"error": ...} and exit code 1.
_CHILD = """
import json, sys, traceback
def report(facts):
    sys.stdout.write("\\n{mark}" + json.dumps(facts, default=str) + "\\n"); sys.stdout.flush()
try:
    facts = {{}}
{body}
except BaseException as error:
    report({{"error": "%s: %s" % (type(error).__name__, error), "traceback": traceback.format_exc()[-2000:]}})
    sys.exit(1)
report(facts)
"""

# Only `import torch` decides ok/failed; each fact after it is gathered on its own, so one missing attribute
# (an old torch, a CPU build) records an error string instead of failing the import.
_TORCH_BODY = """
    import torch
    def fact(name, read):
        try:
            facts[name] = read()
        except Exception as error:
            facts[name] = "error: %s: %s" % (type(error).__name__, error)
    fact("version", lambda: torch.__version__)
    fact("cuda", lambda: torch.version.cuda)
    fact("cxx11_abi", lambda: bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    fact("cuda_available", lambda: torch.cuda.is_available())
    fact("arch_list", lambda: torch.cuda.get_arch_list())
    fact("device_count", lambda: torch.cuda.device_count() if facts.get("cuda_available") is True else 0)
    fact("capabilities", lambda: ["%d.%d" % torch.cuda.get_device_capability(i) for i in range(facts["device_count"])])
    def nccl():
        found = torch.cuda.nccl.version()  # a tuple since torch 1.x's later releases, an int (2708) before
        return ".".join(str(p) for p in found) if isinstance(found, tuple) else str(found)
    fact("nccl_version", nccl)
    fact("cudnn_version", lambda: torch.backends.cudnn.version())
"""


@dataclass(frozen=True)
class ImportTarget:
    """One thing to import in a child: its report name, the package that must be installed, the code."""

    name: str
    package: str
    body: str


def _import_body(module: str) -> str:
    return f"    import importlib\n    importlib.import_module({module!r})\n    facts['module'] = {module!r}\n"


def _deepspeed_op_body(op: str) -> str:
    return (
        "    from deepspeed.ops.op_builder.all_ops import ALL_OPS\n"
        f"    ALL_OPS[{op!r}].load(verbose=False)\n"
        f"    facts['op'] = {op!r}\n"
    )


EXTENSION_TARGETS = (
    ImportTarget("flash_attn_2_cuda", "flash-attn", _import_body("flash_attn_2_cuda")),
    ImportTarget("xformers._C", "xformers", _import_body("xformers._C")),
    ImportTarget("bitsandbytes", "bitsandbytes", _import_body("bitsandbytes")),
    ImportTarget("vllm._C", "vllm", _import_body("vllm._C")),
)


def plan_targets(env: PythonEnv, deepspeed: DeepSpeed | None) -> list[ImportTarget]:
    """What to import: torch, the extensions that are installed, and DeepSpeed's pre-built ops."""
    targets = []
    if "torch" in env.packages:
        targets.append(ImportTarget("torch", "torch", _TORCH_BODY))
    targets.extend(t for t in EXTENSION_TARGETS if t.package in env.packages)
    if deepspeed is not None:
        targets.extend(
            ImportTarget(f"deepspeed.ops.{op}", "deepspeed", _deepspeed_op_body(op)) for op in deepspeed.installed_ops
        )
    return targets


def _tail(text: str, lines: int = 8) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def _head(text: str, lines: int = 12) -> str:
    """faulthandler prints the crash, then the innermost frames first: the head says where it died."""
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(kept[:lines])


def interpret(result: proc.ProcResult) -> RuntimeResult:
    """Turn how a child ended into a RuntimeResult; a signal or a timeout is a finding, not an error."""
    facts: dict = {}  # type: ignore[type-arg]
    for line in result.stdout.splitlines():
        if line.startswith(_MARK):
            try:
                facts = json.loads(line[len(_MARK):])
            except ValueError:
                facts = {}
    error = facts.pop("error", None)
    facts.pop("traceback", None)
    if result.timed_out:
        return RuntimeResult(False, None, None, f"did not finish within {result.duration_s:.0f} s", True,
                             round(result.duration_s, 3), facts)
    if result.start_error:
        return RuntimeResult(False, None, None, f"could not start: {result.start_error}", duration_s=0.0)
    if result.signal_name:
        return RuntimeResult(False, result.returncode, result.signal_name, _head(result.stderr) or None,
                             duration_s=round(result.duration_s, 3), facts=facts)
    if result.returncode != 0:
        return RuntimeResult(False, result.returncode, None, error or _tail(result.stderr) or "no error message",
                             duration_s=round(result.duration_s, 3), facts=facts)
    return RuntimeResult(True, 0, None, None, duration_s=round(result.duration_s, 3), facts=facts)


def run_target(python: str, target: ImportTarget, timeout: float = IMPORT_TIMEOUT_S) -> RuntimeResult:
    script = _CHILD.format(mark=_MARK, body=target.body)
    return interpret(proc.run([python, "-X", "faulthandler", "-c", script], timeout=timeout))


def probe_runtime(
    python: str, env: PythonEnv, deepspeed: DeepSpeed | None, timeout: float = IMPORT_TIMEOUT_S
) -> dict[str, RuntimeResult]:
    targets = plan_targets(env, deepspeed)
    if not targets:
        return {}
    with ThreadPoolExecutor(max_workers=min(4, len(targets))) as pool:
        results = list(pool.map(lambda t: run_target(python, t, timeout), targets))
    return {target.name: result for target, result in zip(targets, results)}
