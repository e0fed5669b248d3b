"""The kernel's OOM-killer lines pasted into a log (dmesg output a user copied next to the trace): in a log they
are evidence of a host OOM kill even when no kernel log is given."""

from __future__ import annotations

import re

from envcheck.diagnose.structure.model import Event, Line

ANCHORS = (b"Killed process", b"Kill process", b"oom-kill:")
# mm/oom_kill.c: "Out of memory: Killed process %d (%s) total-vm:..." (older kernels: "Out of memory: Kill process
# %d (%s) score %u or sacrifice child", then "Killed process %d (%s) total-vm:..."); "oom-kill:constraint=...".
# programs a training box runs beside the run, whose OOM kill is not the run's death (the kernel keeps 15 characters
# of a name): a TensorBoard, an editor's remote server, a desktop, a browser
BYSTANDERS = frozenset({"tensorboard", "node", "code", "code-server", "Xorg", "gnome-shell", "chrome", "firefox",
                        "snapd", "packagekitd"})
_KILLED = re.compile(r"Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)(?:.*total-vm|.*score|.*sacrifice)|"
                     r"oom-kill:constraint=")


def events(lines: list[Line]) -> list[Event]:
    for line in lines:
        hit = _KILLED.search(line.text)
        if hit:
            comm = hit.group("comm") or ""
            if comm in BYSTANDERS:
                continue  # another program killed beside the run: the kernel's next kill may be the run's
            return [Event(
                "oom_line", "host_oom", 0.85, "the kernel's OOM killer killed a process (its record is in the log)",
                f"The log holds the kernel's own record of an OOM kill{' of ' + comm if comm else ''}: the host (or "
                "the memory cgroup) ran out of RAM and the kernel killed the largest process with SIGKILL (-9).",
                "Lower host-RAM use: fewer dataloader workers, no CPU offload, a smaller preprocessing batch; or "
                "raise the memory limit (cgroup, container) or add swap.", line.file, line.number, line.text,
                "Linux mm/oom_kill.c", "")]
    return []
