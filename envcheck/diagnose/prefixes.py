"""The prefixes that launchers and log collectors put before each line a program prints.

Why: a signature anchored at a line's start (a shell's `Killed`, a compiler's `error:`) must still match when a
launcher has prefixed the line, as multi-rank and multi-node runs do. The scan tries such a signature again on the
line without these prefixes (at most three, nested: a host's prefix before a rank's).
"""

from __future__ import annotations

import re

# One launcher's prefix, then the space after it:
# - torchrun (torch.distributed.elastic's per-rank log lines): `[rank0]:`, `[default0]:`;
# - Open MPI's `mpirun --tag-output`: `[1,0]<stdout>:`, `[1,0]<stderr>:`;
# - pdsh (DeepSpeed's multi-node runner) and `srun --label`: the host or task, then `: ` (`10.0.0.7: `,
#   `worker-1: `, `0: `): a host name only in the shapes clusters name nodes (a word such as node, gpu or worker
#   and a number: `gpu-node-3`, `ip-10-0-0-7`, `dgx01`), so that `RuntimeError: `, `collect2: ` or a sweep's
#   `trial-7: ` is no prefix;
# - Ray's workers: `(RayWorkerWrapper pid=4242, ip=10.0.0.7) `, `(pid=4242) `, `(raylet) `;
# - docker compose: `app-1  | `, `vllm_1  | `;
# - docker logs -t and kubectl logs --timestamps: an RFC 3339 time, `2024-05-01T10:00:00.123456789Z `;
# - docker build's plain progress (BuildKit): the step and its seconds, `#12 34.56 `;
# - a quoted reply or an e-mail: `> `, `>> ` (not the REPL's `>>> `, whose lines are what the user typed);
# - pytest's failure report: `E   ` (an E and at least three spaces).
_HOST = (rb"(?i:(?:[a-z]+-)*(?:node|gpu|worker|host|compute|ip|dgx|master|server|machine|rank)[-_]?\d+"
         rb"(?:[-.][a-z0-9]+)*)")
_ONE = (rb"\[(?:rank|default|local_rank)?\d+\]:"
        rb"|\[\d+,\d+\]<std(?:out|err)>:"
        rb"|(?:\d{1,3}(?:\.\d{1,3}){3}|" + _HOST + rb"|\d{1,5}):(?= )"
        rb"|\((?:[\w.]+ )?pid=\d+(?:, ip=[\w.:]+)?\)|\(raylet\)"
        rb"|[\w.-]+[-_]\d+ +\|"
        rb"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"
        rb"|#\d+ \d+\.\d+(?= |$)|>{1,2}(?= |$)|E(?: {3,}(?=\S)| *$)")
_PREFIXES = re.compile(rb"^(?:[ \t]*(?:" + _ONE + rb") ?){1,3}")
_TEXT_PREFIXES = re.compile(_PREFIXES.pattern.decode())


def unprefixed(line: bytes) -> bytes:
    """LINE without the launchers' prefixes at its start (LINE itself when it has none)."""
    found = _PREFIXES.match(line)
    return line[found.end():] if found else line


def unprefixed_text(line: str) -> str:
    """The decoded LINE without the launchers' prefixes (for the structure readers, whose patterns anchor at a
    line's start: pip's resolver report, a traceback's exception line)."""
    found = _TEXT_PREFIXES.match(line)
    return line[found.end():] if found else line
