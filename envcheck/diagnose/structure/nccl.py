"""NCCL lines: the shared-memory transport failing on /dev/shm, a remote rank that exited."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"/dev/shm/nccl", b"failed to create shared memory file", b"shmutils.cc", b"remote process exit",
           b"shm.h:", b"shared memory segment nccl-shm-",
           b"ncclRemoteError", b"Connection closed by",
           b"NCCL error in", b"InvalidUsage", b"UnhandledCudaError", b"ncclSystemError", b"ncclInternalError",
           b"Watchdog caught collective", b"Duplicate GPU detected")
# NCCL src/misc/shmutils.cc: "Error: failed to extend %s to %ld bytes" / "Error while creating shared memory segment";
# "Could not map %s" (mmap; "Error: Could not map" from 2.22) and, from 2.22, "Error: failed to create shared memory
# file %s" (mkstemp; 2.22.3 printed the path as a pointer); src/os/linux.cc in 2.30.
_SHM = re.compile(r"shmutils\.cc.*(?:failed to extend|creating shared memory segment)|"
                  r"failed to extend /dev/shm/nccl|shared memory segment /dev/shm/nccl|"
                  r"failed to create shared memory file (?:/dev/shm/nccl|0x)|Could not map /dev/shm/nccl|"
                  # NCCL <= 2.8 (v2.7.8-1 src/include/shm.h, checks.h): SYSCHECK's "Call to shm_open failed :
                  # <strerror>" (also posix_fallocate, mmap), and its segments named nccl-shm-recv-<hash>-...
                  r"shm\.h:\d+ NCCL WARN Call to (?:shm_open|posix_fallocate|mmap) failed|"
                  r"shared memory segment nccl-shm-")
# torch c10d NCCLUtils.cpp getNcclErrorDetailStr(ncclRemoteError): "A call failed possibly due to a network error or
# a remote process exiting prematurely."; NCCL net_socket/socket.cc: "Connection closed by remote peer".
# an errno other than ENOSPC in NCCL's message ("error Permission denied (13)", "Cannot allocate memory (12)")
_OTHER_ERRNO = re.compile(r"error:? (?!No space left on device)[A-Z][\w ]+ \((?!28\))\d+\)")
# NCCL <= 2.8's SYSCHECK prints strerror alone: "Call to shm_open failed : Permission denied"
_OLD_CALL = re.compile(r"NCCL WARN Call to (?:shm_open|posix_fallocate|mmap) failed : ")
_OLD_OTHER = re.compile(r"Call to \w+ failed : (?!No space left on device)")
_OLD_SEGMENT = re.compile(r"shared memory segment nccl-shm-")
_REMOTE = re.compile(r"ncclRemoteError|remote process exit(?:ed|ing)|Connection closed by (?:remote )?peer")


# torch c10d NCCLUtils.hpp C10D_NCCL_CHECK: "NCCL error in: <file>:<line>, <ncclGetErrorString>, NCCL version X";
# the result names are NCCL's ncclResult_t (src/nccl.h.in). "Duplicate GPU detected : rank 1 and rank 0 both on CUDA
# device N" is NCCL's init.cc check behind ncclInvalidUsage.
_ERROR = re.compile(r"NCCL error in: |\bnccl(?:InvalidUsage|UnhandledCudaError|SystemError|InternalError)\b")
_DUPLICATE = re.compile(r"Duplicate GPU detected")
# torch ProcessGroupNCCL.cpp: "[Rank N] Watchdog caught collective operation timeout: WorkNCCL(...)".
_WATCHDOG = re.compile(r"Watchdog caught collective")


def _error_event(line: Line) -> Event:
    if _DUPLICATE.search(line.text):
        return Event(
            "nccl_error", "nccl_error", 0.85, "NCCL: two ranks use the same GPU (invalid usage)",
            "NCCL refuses a communicator in which two ranks sit on one GPU: each process must select its own "
            "device (torch.cuda.set_device(LOCAL_RANK)) before the process group is created.",
            "Set the device from LOCAL_RANK in every rank before init_process_group, and check CUDA_VISIBLE_DEVICES "
            "is not narrowed to one GPU per node.", line.file, line.number, line.text, "NCCL src/init.cc", "nccl")
    return Event(
        "nccl_error", "nccl_error", 0.7, "an NCCL call failed",
        "A collective or the communicator's set-up returned an NCCL error (the kind is named in the line: invalid "
        "usage, an unhandled CUDA error, a system error, an internal error).",
        "Run with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL) to see which call and which rank failed; "
        "an unhandled CUDA error usually hides the real CUDA error of that rank, read its log first.",
        line.file, line.number, line.text, "torch/csrc/distributed/c10d/NCCLUtils.hpp C10D_NCCL_CHECK; NCCL nccl.h",
        "nccl", ("export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL",))


def _errno_line(line: Line, failed_call: Line | None) -> Line:
    """The line that says why LINE's segment failed: NCCL <= 2.8's segment line carries no errno, the failed call
    printed just above it (within three lines of the same log) does."""
    if _OLD_SEGMENT.search(line.text) and failed_call is not None and failed_call.file == line.file \
            and 0 < line.number - failed_call.number <= 3:
        return failed_call
    return line


def events(lines: list[Line]) -> list[Event]:
    found = []
    failed_call: Line | None = None  # NCCL <= 2.8's last "Call to X failed : <strerror>", which its segment line follows
    for line in lines:
        if _OLD_CALL.search(line.text):
            failed_call = line
        if _SHM.search(line.text):
            # ENOSPC (fallocate, or an errno NCCL prints) is a full /dev/shm; mkstemp's EACCES/ENOENT a /dev/shm that
            # is not writable or not there; mmap's ENOMEM a limit on mapped memory
            said = _errno_line(line, failed_call)
            full = not _OTHER_ERRNO.search(said.text) and not _OLD_OTHER.search(said.text)
            attach = "attaching to shared memory segment" in line.text  # opening a peer's segment, not creating one
            found.append(Event(
                # the attaching line says more than the failed call before it: its title leads
                "nccl_shm", "shm_too_small", 0.81 if attach else 0.93 if full else 0.8,
                "NCCL could not open a peer's shared-memory segment in /dev/shm" if attach else
                "NCCL could not create its shared-memory segment in /dev/shm",
                "NCCL's SHM transport maps each peer's segment from /dev/shm; this rank could not open the one its peer "
                "made: the ranks do not share one /dev/shm (containers without --ipc=host, different IPC namespaces), "
                "or the segment was removed." if attach else
                "NCCL's SHM transport allocates a segment per peer in /dev/shm; it failed (no space left there), "
                "which in containers means the 64 MB default /dev/shm." if full else
                "NCCL's SHM transport allocates a segment per peer in /dev/shm; creating or mapping it failed with the "
                "error shown: /dev/shm is not writable by this user, not mounted (a container without it), or a "
                "memory limit refused the mapping.",
                "Give the container more /dev/shm (docker --shm-size=16g or --ipc=host), or set NCCL_SHM_DISABLE=1.",
                line.file, line.number, line.text, "NCCL src/misc/shmutils.cc", "nccl",
                ("df -h /dev/shm", "export NCCL_SHM_DISABLE=1")))
        elif _REMOTE.search(line.text):
            found.append(Event(
                "nccl_remote", "nccl_error", 0.75, "NCCL: a remote rank exited or the network failed",
                "A collective failed because a peer rank went away (it crashed or was killed: read that rank's "
                "log first) or the network between them failed.",
                "Find the rank that died first (its own traceback or exit status) and fix that; if none died, check "
                "the network (NCCL_DEBUG=INFO, NCCL_SOCKET_IFNAME, IB).",
                line.file, line.number, line.text,
                "torch/csrc/distributed/c10d/NCCLUtils.cpp getNcclErrorDetailStr (ncclRemoteError)", "nccl",
                ("export NCCL_DEBUG=INFO",), symptom=True))
        elif _WATCHDOG.search(line.text):
            found.append(Event(
                "nccl_watchdog", "nccl_timeout", 0.8, "NCCL: a collective timed out (the watchdog stopped it)",
                "A rank waited for a collective longer than the process group's timeout: another rank was still "
                "busy (a slow data step, a checkpoint save), hung, or already dead.",
                "Find the rank that did not reach the collective (its last log lines); raise the timeout "
                "(init_process_group(timeout=...), or ddp_timeout in TrainingArguments) only when a long step is "
                "expected.", line.file, line.number, line.text, "torch ProcessGroupNCCL.cpp (watchdog)", "nccl",
                ("export TORCH_NCCL_ASYNC_ERROR_HANDLING=1",)))
        elif _ERROR.search(line.text) or _DUPLICATE.search(line.text):
            found.append(_error_event(line))
    return found
