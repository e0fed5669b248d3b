"""NVIDIA's NGC containers check the host driver at start-up and say what they found. When they say compatibility
mode is ENABLED (minor-version, forward or legacy compatibility), the CUDA error text of the status line under it
('[[Forward compatibility was attempted on non supported HW (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
cuInit()=804]]') is the probe's record of what it tried, and the container runs: no driver cause. A hint."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"Compatibility mode ENABLED",)
COMPAT_OK = "ngc_compat_ok"
# NGC's start-up scripts (/opt/nvidia/entrypoint.d, the driver-version check): "WARNING: CUDA Minor Version
# Compatibility mode ENABLED.", "NOTE: CUDA Forward Compatibility mode ENABLED.", "NOTE: Legacy NVIDIA Driver
# detected.  Compatibility mode ENABLED." (a review's excerpt of PyTorch 22.12's banner, and the scripts read
# through the search index)
_OK = re.compile(r"\b(?:NOTE|WARNING): (?:CUDA Minor Version |CUDA Forward |Legacy NVIDIA Driver detected\.\s+)?"
                 r"Compatibility mode ENABLED", re.I)
# the banner's status lines that follow it
STATUS_LINES = 6


def events(lines: list[Line]) -> list[Event]:
    return [Event(COMPAT_OK, "", 0.0, "the container's driver check enabled a compatibility mode", "", "", line.file,
                  line.number, line.text, "NGC containers' start-up driver check (/opt/nvidia/entrypoint.d)")
            for line in lines if _OK.search(line.text)]
