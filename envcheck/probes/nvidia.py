"""Driver and GPUs: NVML first, then `nvidia-smi`, then `/proc/driver/nvidia`.

NVML runs in a child process because `nvmlInit` can block on a wedged driver; each source has a timeout and
each one that fails leaves a Skipped record, so a machine with a broken driver still gets a report.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys

from envcheck import proc
from envcheck.snapshot import Gpu, Nvidia, Skipped

NVML_TIMEOUT_S = 5.0
SMI_TIMEOUT_S = 5.0
MIB = 1024 * 1024

SMI_QUERY_FIELDS = ("index", "name", "compute_cap", "memory.total", "uuid", "driver_version", "mig.mode.current")

# Runs in envcheck's own interpreter (which has the NVML binding), prints one JSON object.
_NVML_SCRIPT = r"""
import json, sys
try:
    import pynvml as n
except Exception as e:
    print(json.dumps({"error": "NVML binding not importable: %s" % e})); sys.exit(0)
def text(v):
    return v.decode() if isinstance(v, bytes) else v
try:
    n.nvmlInit()
except Exception as e:
    print(json.dumps({"error": "nvmlInit failed: %s" % (text(str(e)) or type(e).__name__)})); sys.exit(0)
out = {"driver_version": text(n.nvmlSystemGetDriverVersion()), "gpus": []}
try:
    c = n.nvmlSystemGetCudaDriverVersion_v2()
    out["cuda_driver_version"] = "%d.%d" % (c // 1000, (c % 1000) // 10)
except Exception:
    out["cuda_driver_version"] = None
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    g = {"index": i, "name": text(n.nvmlDeviceGetName(h))}
    try:
        g["compute_capability"] = "%d.%d" % tuple(n.nvmlDeviceGetCudaComputeCapability(h))
    except Exception:
        g["compute_capability"] = None
    try:
        g["memory_total_bytes"] = int(n.nvmlDeviceGetMemoryInfo(h).total)
    except Exception:
        g["memory_total_bytes"] = None
    try:
        g["uuid"] = text(n.nvmlDeviceGetUUID(h))
    except Exception:
        g["uuid"] = None
    try:
        g["mig_mode"] = "enabled" if n.nvmlDeviceGetMigMode(h)[0] else "disabled"
    except Exception:
        g["mig_mode"] = None
    out["gpus"].append(g)
n.nvmlShutdown()
print(json.dumps(out))
"""


def uuid_hash(uuid: str | None) -> str | None:
    """A stable, non-identifying handle for a GPU (the UUID itself identifies the machine)."""
    if not uuid:
        return None
    return hashlib.sha256(uuid.strip().encode()).hexdigest()[:12]


def probe_nvml(python: str = sys.executable, timeout: float = NVML_TIMEOUT_S) -> tuple[Nvidia | None, str | None]:
    result = proc.run([python, "-I", "-c", _NVML_SCRIPT], timeout=timeout)
    if not result.ok:
        return None, result.describe_failure().replace(os.path.basename(python), "NVML query", 1)
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, "NVML query printed no JSON"
    if "error" in data:
        return None, data["error"]
    gpus = tuple(
        Gpu(
            index=g["index"],
            name=g["name"],
            compute_capability=g.get("compute_capability"),
            memory_total_bytes=g.get("memory_total_bytes"),
            uuid_hash=uuid_hash(g.get("uuid")),
            mig_mode=g.get("mig_mode"),
        )
        for g in data.get("gpus", [])
    )
    return Nvidia(data.get("driver_version"), data.get("cuda_driver_version"), "nvml", gpus), None


def _na(value: str) -> str | None:
    value = value.strip()
    return None if not value or value.startswith("[") or value in ("N/A", "Not Supported") else value


def parse_smi_csv(text: str) -> tuple[str | None, tuple[Gpu, ...]]:
    """Parse `nvidia-smi --query-gpu=... --format=csv[,nounits]` with its header; columns are found by name."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None, ()
    header = [re.sub(r"\s*\[.*\]$", "", column.strip()) for column in lines[0].split(",")]
    driver = None
    gpus = []
    for position, line in enumerate(lines[1:]):
        row = dict(zip(header, (cell.strip() for cell in line.split(","))))
        driver = driver or _na(row.get("driver_version", "") or row.get("kmd_version", "") or "")
        memory = _na(row.get("memory.total", "") or "")
        memory_mib = re.match(r"(\d+)", memory) if memory else None
        mig = _na(row.get("mig.mode.current", "") or "")
        index_text = _na(row.get("index", "") or "")
        gpus.append(
            Gpu(
                index=int(index_text) if index_text and index_text.isdigit() else position,
                name=_na(row.get("name", "") or "") or "unknown",
                compute_capability=_na(row.get("compute_cap", "") or ""),
                memory_total_bytes=int(memory_mib.group(1)) * MIB if memory_mib else None,
                uuid_hash=uuid_hash(_na(row.get("uuid", "") or "")),
                mig_mode=mig.lower() if mig else None,
            )
        )
    return driver, tuple(gpus)


def parse_smi_table(text: str) -> tuple[str | None, str | None]:
    """(driver version, CUDA version) from the header of plain `nvidia-smi` output.

    The 610 driver branch renamed the fields to "KMD Version" and "CUDA UMD Version".
    """
    driver = re.search(r"(?:Driver|KMD) Version:\s*([\d.]+)", text)
    cuda = re.search(r"CUDA (?:UMD )?Version:\s*([\d.]+)", text)
    return (driver.group(1) if driver else None, cuda.group(1) if cuda else None)


def probe_smi(smi: str = "nvidia-smi", timeout: float = SMI_TIMEOUT_S) -> tuple[Nvidia | None, str | None]:
    query = proc.run(
        [smi, "--query-gpu=" + ",".join(SMI_QUERY_FIELDS), "--format=csv,nounits"], timeout=timeout
    )
    if not query.ok:
        return None, query.describe_failure()
    driver, gpus = parse_smi_csv(query.stdout)
    table = proc.run([smi], timeout=timeout)
    table_driver, cuda = parse_smi_table(table.stdout) if table.ok else (None, None)
    return Nvidia(driver or table_driver, cuda, "nvidia-smi", gpus), None


def parse_proc_version(text: str) -> str | None:
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def probe_proc(root: str = "/") -> tuple[Nvidia | None, str | None]:
    base = os.path.join(root, "proc/driver/nvidia")
    try:
        with open(os.path.join(base, "version"), encoding="utf-8", errors="replace") as handle:
            driver = parse_proc_version(handle.read())
    except OSError:
        return None, "no /proc/driver/nvidia/version (the NVIDIA kernel module is not loaded)"
    gpus = []
    for position, info in enumerate(sorted(glob.glob(os.path.join(base, "gpus", "*", "information")))):
        try:
            with open(info, encoding="utf-8", errors="replace") as handle:
                model = re.search(r"^Model:\s*(.+)$", handle.read(), re.MULTILINE)
        except OSError:
            continue
        gpus.append(Gpu(index=position, name=model.group(1).strip() if model else "unknown"))
    return Nvidia(driver, None, "proc", tuple(gpus)), None


# Any of these exists wherever NVML can work: the kernel module's /proc entry and device nodes on Linux, the
# /dev/dxg paravirtual device under WSL2 (where /proc/driver/nvidia is absent but NVML works).
_DRIVER_MARKERS = ("proc/driver/nvidia/version", "dev/nvidiactl", "dev/nvidia0", "dev/dxg")


def driver_present(root: str = "/") -> bool:
    return any(os.path.exists(os.path.join(root, marker)) for marker in _DRIVER_MARKERS)


def probe_nvidia(smi: str = "nvidia-smi", root: str = "/") -> tuple[Nvidia | None, list[Skipped]]:
    """Try each source in order of detail; the first that answers wins, the others' failures are recorded."""
    if not driver_present(root):
        reason = "no NVIDIA driver: no /proc/driver/nvidia, /dev/nvidiactl, /dev/nvidia0 or /dev/dxg"
        return None, [Skipped("nvidia", reason)]
    skipped = []
    for name, attempt in (
        ("nvidia.nvml", probe_nvml),
        ("nvidia.nvidia-smi", lambda: probe_smi(smi)),
        ("nvidia.proc", lambda: probe_proc(root)),
    ):
        found, reason = attempt()
        if found is not None:
            return found, skipped
        skipped.append(Skipped(name, reason or "no answer"))
    return None, skipped
