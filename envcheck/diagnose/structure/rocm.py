"""ROCm's HIP runtime finding no code object for the GPUs: ROCm's counterpart of CUDA's 'no kernel image'. The runtime
logs the device list after it, each '[Found]' or '[Not Found]'; with one device found (an integrated GPU beside a
supported card) the run goes on, so the message is a cause only when no device was found."""

from __future__ import annotations

from envcheck.diagnose.structure.model import Event, Line

# ROCm clr hipamd/src/hip_code_object.cpp (f9f995c6d): LogPrintfError "hipErrorNoBinaryForGpu: Unable to find code
# object for all current devices!", then "  Devices:" and "    <target> - [Found]" or "- [Not Found]" per device.
_NO_BINARY = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices"
_FOUND = " - [Found]"
ANCHORS = (_NO_BINARY.encode(), _FOUND.encode())


def events(lines: list[Line]) -> list[Event]:
    missing = next((line for line in lines if _NO_BINARY in line.text), None)
    if missing is None or any(line.text.rstrip().endswith(_FOUND) for line in lines):
        return []
    return [Event(
        "rocm", "cuda_arch_unsupported", 0.85, "ROCm: no kernels for this GPU's architecture (hipErrorNoBinaryForGpu)",
        "The HIP runtime found no code object built for this GPU's gfx architecture in the loaded library (torch's "
        "ROCm build or an extension): ROCm's counterpart of CUDA's 'no kernel image is available'. Consumer GPUs "
        "that ROCm does not list are the usual case.",
        "Use a ROCm build of torch (or rebuild the extension) for this GPU's gfx target (PYTORCH_ROCM_ARCH), or, for "
        "a GPU close to a supported one, set HSA_OVERRIDE_GFX_VERSION to that one's version (e.g. 10.3.0 for RDNA2 "
        "cards); with a second, unsupported GPU (an integrated one), hide it with HIP_VISIBLE_DEVICES.",
        missing.file, missing.number, missing.text,
        "ROCm clr hipamd/src/hip_code_object.cpp (hipErrorNoBinaryForGpu and its device list)", "",
        ("rocminfo | grep -m2 gfx",))]
