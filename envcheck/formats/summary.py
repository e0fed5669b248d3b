"""One-line descriptions of each snapshot section, shared by the text and Markdown renderers."""

from __future__ import annotations

from envcheck.report import Report
from envcheck.snapshot import Snapshot
from envcheck.units import human_bytes


def examined_line(report: Report) -> str:
    """The report's first line: which environment was examined, and why that one."""
    python = report.snapshot.python
    if python is None:
        return "Examined: this machine (the Python environment could not be probed)"
    why = f", {python.examined_because}" if python.examined_because else ""
    return f"Examined: {python.prefix} ({python.kind}, Python {python.version}){why}"


def no_torch_notice(report: Report) -> str | None:
    """An environment without torch is rarely the training one: say so rather than report a clean bill."""
    python = report.snapshot.python
    if python is None or "torch" in python.packages or report.snapshot.torch is not None:
        return None
    return (f"Note: torch is not installed in {python.prefix}, so the checks of torch, CUDA builds and extensions "
            "did not apply. If training runs in another environment, activate it first or pass "
            "--python PATH/TO/ENV/bin/python.")


def machine_lines(snapshot: Snapshot) -> list[tuple[str, str]]:
    """(label, description) pairs describing the machine, in reading order; unknowns say so."""
    lines: list[tuple[str, str]] = []
    host = snapshot.host
    if host is not None:
        swap = "no swap" if host.swap_total_bytes == 0 else f"swap {human_bytes(host.swap_total_bytes)}"
        parts = [host.os or "unknown OS", f"kernel {host.kernel or '?'}", host.arch or "?", f"glibc {host.glibc or '?'}",
                 f"{host.cpu_count if host.cpu_count is not None else '?'} CPUs",
                 f"RAM {human_bytes(host.mem_total_bytes)} ({swap})", f"/dev/shm {human_bytes(host.shm_bytes)}"]
        if host.cgroup_mem_limit_bytes is not None:
            parts.append(f"cgroup limit {human_bytes(host.cgroup_mem_limit_bytes)}")
        if host.container:
            parts.append(f"in {host.container}")
        lines.append(("host", ", ".join(parts)))
    nvidia = snapshot.nvidia
    if nvidia is None:
        lines.append(("driver", "no NVIDIA driver found"))
    else:
        lines.append(("driver", f"{nvidia.driver_version or '?'} (supports CUDA {nvidia.cuda_driver_version or '?'}), "
                                f"read via {nvidia.source}"))
        for gpu in nvidia.gpus:
            memory = human_bytes(gpu.memory_total_bytes) if gpu.memory_total_bytes else "?"
            mig = ", MIG on" if gpu.mig_mode == "enabled" else ""
            lines.append((f"gpu {gpu.index}", f"{gpu.name} (compute capability {gpu.compute_capability or '?'}, "
                                             f"{memory}{mig})"))
    if snapshot.cuda_toolkits:
        for kit in snapshot.cuda_toolkits:
            where = ", ".join(kit.found_via or (("PATH",) if kit.on_path else ())) + (", first on PATH" if kit.first_on_path else "")
            lines.append(("nvcc", f"{kit.nvcc_version or '?'} at {kit.nvcc_path or kit.path}" + (f" ({where})" if where else "")))
    home = snapshot.cuda_home
    if home is not None and home.path:
        lacks = [what for what, ok in (("headers", home.headers), ("libraries", home.libraries)) if ok is False]
        lines.append(("cuda home", f"{home.path} (via {home.via}, for extension builds)"
                      + (f": no {' or '.join(lacks)}" if lacks else "")))
    else:
        lines.append(("nvcc", "none found"))
    py = snapshot.python
    if py is not None:
        lines.append(("python", f"{py.version} {py.kind} at {py.prefix} ({len(py.packages)} distributions)"))
    torch = snapshot.torch
    if torch is not None:
        variant = f"CUDA {torch.cuda}" if torch.cuda else (f"ROCm {torch.hip}" if torch.hip else "CPU-only build")
        lines.append(("torch", f"{torch.version} ({variant})"))
    ds = snapshot.deepspeed
    if ds is not None:
        ops = ", ".join(ds.installed_ops) or "none (JIT)"
        lines.append(("deepspeed", f"{ds.version}, installed with torch {ds.compiled_torch or '?'} / CUDA "
                                   f"{ds.compiled_cuda or '-'}; pre-built ops: {ops}"))
    for lib in snapshot.libraries:
        lines.append((lib.name, f"{lib.version or '?'} at {lib.path} ({lib.origin})"))
    for module, result in sorted((snapshot.runtime or {}).items()):
        if result.ok:
            state = f"imported in {result.duration_s or 0:.1f} s"
        elif result.signal:
            state = f"CRASHED ({result.signal})"
        elif result.timed_out:
            state = "HUNG (killed)"
        else:
            state = f"FAILED ({(result.error or '').splitlines()[0][:120] if result.error else 'error'})"
        lines.append((f"import {module}", state))
    return lines
