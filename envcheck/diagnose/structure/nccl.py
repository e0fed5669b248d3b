"""NCCL lines: the shared-memory transport failing on /dev/shm, a remote rank that exited."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"/dev/shm/nccl", b"shmutils.cc", b"remote process exit", b"ncclRemoteError", b"Connection closed by")
# NCCL src/misc/shmutils.cc: "Error: failed to extend %s to %ld bytes" / "Error while creating shared memory segment".
_SHM = re.compile(r"shmutils\.cc.*(?:failed to extend|creating shared memory segment)|"
                  r"failed to extend /dev/shm/nccl|shared memory segment /dev/shm/nccl")
# torch c10d NCCLUtils.cpp getNcclErrorDetailStr(ncclRemoteError): "A call failed possibly due to a network error or
# a remote process exiting prematurely."; NCCL net_socket/socket.cc: "Connection closed by remote peer".
_REMOTE = re.compile(r"ncclRemoteError|remote process exit(?:ed|ing)|Connection closed by (?:remote )?peer")


def events(lines: list[Line]) -> list[Event]:
    found = []
    for line in lines:
        if _SHM.search(line.text):
            found.append(Event(
                "nccl_shm", "shm_too_small", 0.93, "NCCL could not create its shared-memory segment in /dev/shm",
                "NCCL's SHM transport allocates a segment per peer in /dev/shm; it failed (no space left there), "
                "which in containers means the 64 MB default /dev/shm.",
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
    return found
