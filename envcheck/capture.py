"""Run every probe, in parallel where they are independent, and assemble a redacted Snapshot.

No probe raises: each returns data plus Skipped records, so the snapshot always comes out.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from envcheck import __version__, proc
from envcheck.probes.cuda_home import probe_cuda_home
from envcheck.probes.cuda_toolkit import probe_cuda_toolkits
from envcheck.probes.host import probe_host
from envcheck.probes.libraries import probe_libraries
from envcheck.probes.nvidia import probe_nvidia
from envcheck.probes.python_env import PythonProbe, finish_python_probe
from envcheck.probes.pyenv_start import start_python_probe
from envcheck.probes.runtime import IMPORT_TIMEOUT_S, probe_runtime
from envcheck.redact import Redactor, select_env
from envcheck.snapshot import SCHEMA_VERSION, Skipped, Snapshot

Progress = Callable[[str], None]


def _python_then_libraries(started: proc.Running | proc.ProcResult, python: str | None,
                           environ: dict[str, str]) -> tuple[PythonProbe, list, list[Skipped]]:  # type: ignore[type-arg]
    found = finish_python_probe(started, python)
    libraries, skipped = probe_libraries(found.wheel_libs, environ)
    return found, libraries, skipped


def capture(
    python: str | None = None,
    deep: bool | None = None,
    progress: Progress | None = None,
    import_timeout: float = IMPORT_TIMEOUT_S,
    environ: dict[str, str] | None = None,
    started_python: proc.Running | proc.ProcResult | None = None,
    examined_because: str | None = None,
) -> Snapshot:
    """Probe this machine (and `python`'s environment). `deep=None` imports in children only when a GPU is present.

    `started_python` is the interpreter probe if the caller already started it (see probes.pyenv_start).
    """
    environ = dict(os.environ) if environ is None else environ
    say = progress or (lambda _message: None)
    say("probing host, driver, CUDA toolkits and the Python environment")
    with ThreadPoolExecutor(max_workers=5) as pool:
        host_job = pool.submit(probe_host)
        nvidia_job = pool.submit(probe_nvidia)
        toolkit_job = pool.submit(probe_cuda_toolkits, environ)
        home_job = pool.submit(probe_cuda_home, environ)
        started = started_python if started_python is not None else start_python_probe(python)
        python_job = pool.submit(_python_then_libraries, started, python, environ)
        host, host_skipped = host_job.result()
        nvidia, nvidia_skipped = nvidia_job.result()
        toolkits, toolkit_skipped = toolkit_job.result()
        cuda_home = home_job.result()
        python_found, libraries, library_skipped = python_job.result()
    skipped: list[Skipped] = [*host_skipped, *nvidia_skipped, *toolkit_skipped, *python_found.skipped, *library_skipped]
    requested = deep
    if deep is None:
        deep = bool(nvidia and nvidia.gpus)
    runtime = None
    if deep and python_found.env is not None:
        say("importing torch and compiled extensions in child processes")
        runtime = probe_runtime(python or sys.executable, python_found.env, python_found.deepspeed, import_timeout)
    elif deep:
        skipped.append(Skipped("runtime", "the Python environment could not be probed"))
    elif requested is False:
        skipped.append(Skipped("runtime", "disabled with --no-deep"))
    else:
        skipped.append(Skipped("runtime", "not requested (no GPU found; use --deep to import torch and extensions)"))
    snapshot = Snapshot(
        schema_version=SCHEMA_VERSION,
        envcheck_version=__version__,
        captured_at=datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        host=host,
        nvidia=nvidia,
        cuda_toolkits=tuple(toolkits),
        cuda_home=cuda_home,
        libraries=tuple(libraries),
        python=(dataclasses.replace(python_found.env, examined_because=examined_because)
                if python_found.env is not None and examined_because else python_found.env),
        torch=python_found.torch,
        deepspeed=python_found.deepspeed,
        env=select_env(environ),
        runtime=runtime,
        skipped=tuple(skipped),
    )
    return Snapshot.from_dict(Redactor(environ=environ).tree(snapshot.to_dict()))
