"""NVRM Xid lines: an NVIDIA driver's report of a GPU hardware or driver fault, by Xid number.

Meanings and actions from NVIDIA's Xid catalog, https://docs.nvidia.com/deploy/xid-errors/ (each entry cites its
Xid there). The driver prints `NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.`
"""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

CATALOG = "https://docs.nvidia.com/deploy/xid-errors/"
ANCHORS = (b"NVRM: ", b"fallen off the bus")
# Other NVRM lines that report a GPU needing a reset or its GSP firmware failing (open-gpu-kernel-modules).
_NVRM_FAULT = re.compile(r"NVRM: .*(?:NV_ERR_RESET_REQUIRED|Reset required|GSP.*(?:failed|timeout|Timeout)|"
                         r"RmInitAdapter failed)")
_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+)")
_BUS = re.compile(r"GPU has fallen off the bus|fallen off the bus")

# Xid -> (meaning, what to do, hardware?) per the catalog.
TABLE: dict[int, tuple[str, str, bool]] = {
    13: ("Graphics Engine Exception", "usually the application (out-of-range access, illegal instruction): run "
         "with CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer; if it follows other Xids, treat the GPU as faulty", False),
    31: ("GPU memory page fault", "usually an illegal memory access by the application or an extension; run with "
         "compute-sanitizer; if it recurs across programs, check the driver and the GPU", False),
    32: ("Invalid or corrupted push buffer stream", "driver or PCIe/hardware fault: update the driver, check the "
         "PCIe link and the GPU", True),
    43: ("GPU stopped processing", "the application's channel was reset (often after a software fault in it); "
         "if it recurs without one, check the driver", False),
    45: ("Preemptive cleanup, due to previous errors", "a consequence of an earlier error: read the Xid before it",
         False),
    48: ("Double Bit ECC Error", "uncorrectable memory error: reset the GPU (nvidia-smi -r) or reboot; if it "
         "recurs, the board needs service (RMA)", True),
    61: ("Internal micro-controller breakpoint/warning", "driver or firmware fault: update the driver; reset the "
         "GPU", True),
    62: ("Internal micro-controller halt", "driver or firmware fault: reset the GPU or reboot; update the driver; if "
         "it recurs, service the board", True),
    63: ("ECC page retirement or row remapping recording event", "a page was retired/row remapped: reset the GPU "
         "to apply it; watch the retired-page count", True),
    64: ("ECC page retirement or row remapper recording failure", "reset the GPU; if it recurs, the board needs "
         "service (RMA)", True),
    74: ("NVLink Error", "an NVLink link fault: reset the GPUs, check the NVLink bridge/baseboard; if it recurs, "
         "service the system", True),
    79: ("GPU has fallen off the bus", "the GPU stopped answering on PCIe (power, thermal, PCIe link or board "
         "fault): drain the node, check power and cooling, reseat or replace the GPU; a reboot is needed", True),
    92: ("High single-bit ECC error rate", "correctable errors are frequent: reset the GPU; if it persists, service "
         "the board", True),
    94: ("Contained ECC error", "an uncorrectable error was contained to the affected application: restart it and "
         "reset the GPU when it is idle", True),
    95: ("Uncontained ECC error", "an uncorrectable error affected every application on the GPU: reset the GPU "
         "(or reboot); if it recurs, service the board", True),
    119: ("GSP RPC timeout", "the GPU's system processor stopped answering: reset the GPU or reboot; update the "
          "driver (or disable GSP firmware where supported)", True),
    120: ("GSP error", "an error in the GPU's system processor firmware: reset the GPU or reboot; update the driver",
          True),
}


def events(lines: list[Line]) -> list[Event]:
    found = []
    for line in lines:
        match = _XID.search(line.text)
        if match is None and not _BUS.search(line.text):
            if _NVRM_FAULT.search(line.text):
                found.append(Event(
                    "nvrm", "gpu_xid", 0.7, "The NVIDIA driver reports a GPU fault (NVRM)",
                    "The driver logged a GPU that needs a reset or whose GSP firmware failed; CUDA then reports the "
                    "device busy or unavailable.", "Reset the GPU (nvidia-smi -r) or reboot; update the driver; if "
                    "it recurs, service the board.", line.file, line.number, line.text,
                    "NVIDIA open-gpu-kernel-modules (NVRM messages); " + CATALOG, "",
                    ("nvidia-smi -q | grep -i -A3 -E 'xid|retired|remapp|ecc'",)))
            continue
        xid = int(match.group("xid")) if match else 79
        meaning, action, hardware = TABLE.get(xid, ("an Xid the catalog lists", "look it up in the catalog", True))
        found.append(Event(
            "xid", "gpu_xid", 0.97 if hardware else 0.8, f"GPU fault: Xid {xid} ({meaning})",
            f"The NVIDIA driver reported Xid {xid}: {meaning} (NVIDIA's Xid catalog, Xid {xid}). "
            f"{'A hardware or driver fault, not a bug in the training code.' if hardware else ''}".strip(),
            f"Xid {xid}: {action}.", line.file, line.number, line.text, f"{CATALOG} (Xid {xid})",
            f"gpu {match.group('pci')}" if match else "",
            ("nvidia-smi -q | grep -i -A3 -E 'xid|retired|remapp|ecc'", "dmesg -T | grep -i xid")))
    return found
