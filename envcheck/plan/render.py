"""A plan as text: the setup, a table of GPU components and host phases, the verdict and the assumptions."""

from __future__ import annotations

from envcheck.plan.host import PHASES
from envcheck.plan.plan import GPU_MARGIN, HOST_MARGIN, Plan

GIB = 1024**3
_PHASE_TITLE = {"load": "load", "steady": "steady state", "save": "checkpoint save", "resume": "resume"}


def _gib(count: int | None) -> str:
    return "unknown" if count is None else f"{count / GIB:.1f} GiB"


def _setup_line(plan: Plan) -> str:
    s = plan.chosen.setup
    method = s.method
    if s.method in ("lora", "qlora"):
        method += f" r={s.lora_rank} ({s.lora_targets})"
    if s.method == "qlora":
        method += f" {s.quant_bits}-bit"
    offload = {"none": "no offload", "optimizer": "optimizer offload", "all": "optimizer+parameter offload"}[s.offload]
    zero = f"ZeRO-{s.zero}" if s.zero else "no ZeRO (DDP)"
    return (f"{method}, {s.precision}, {zero}, {offload}; {s.gpus_per_node} GPU(s) x {s.nodes} node(s); "
            f"seq {s.seq_len} x micro-batch {s.batch}; grad ckpt {'on' if s.grad_ckpt else 'off'}; {s.attention} attention")


def render_text(plan: Plan) -> str:
    m, c, hw = plan.model, plan.chosen, plan.hardware
    lines = [f"WARNING    {w}" for w in plan.warnings] + [
        f"model      {m.params / 1e9:.2f}B parameters ({m.source})"
        + (f", {m.active_params / 1e9:.2f}B active" if m.active_params != m.params else "")
        + f"; {plan.trainable / 1e6:,.1f}M trainable",
        f"setup      {_setup_line(plan)}" + ("  [chosen by auto]" if plan.auto else ""),
        f"hardware   GPU {_gib(hw.gpu_bytes)} ({hw.gpu_source}"
        + (f", compute capability {hw.compute_capability}" if hw.compute_capability else "")
        + f"); host {_gib(hw.host_bytes)} ({hw.host_source})",
    ]
    lines += [f"chosen     {c}" for c in plan.choices]
    lines += [
        "",
        "GPU memory per device",
    ]
    gpu = c.gpu
    rows = [("weights", gpu.weights), ("gradients", gpu.gradients), ("optimizer states", gpu.optimizer),
            ("activations", gpu.activations), ("  of which logits/loss", gpu.logits),
            ("context, buffers, allocator", gpu.overhead), ("total", gpu.total)]
    lines += [f"  {name:<30}{_gib(value):>12}" for name, value in rows]
    lines += ["", "Host RAM per node by phase"]
    for phase in PHASES:
        lines.append(f"  {_PHASE_TITLE[phase]:<30}{_gib(c.host.phase(phase)):>12}")
        lines += [f"    {part.label:<60}{_gib(part.bytes):>12}" for part in c.host.parts
                  if part.phase == phase and part.bytes]
    lines.append("")
    gpu_verdict = "fits" if c.gpu_fits else "does NOT fit"
    lines.append(f"verdict    GPU {gpu_verdict}: {_gib(gpu.total)} of {_gib(int(hw.gpu_bytes * GPU_MARGIN))} usable "
                 f"({GPU_MARGIN:.0%} of {_gib(hw.gpu_bytes)})")
    if c.host_fits is None:
        lines.append("           host: unknown (give --host-mem)")
    else:
        host_verdict = "fits" if c.host_fits else "does NOT fit"
        lines.append(f"           host {host_verdict}: peak {_gib(c.host.total)} at {_PHASE_TITLE[c.host.peak_phase]} of "
                     f"{_gib(int(hw.host_bytes * HOST_MARGIN))} usable ({HOST_MARGIN:.0%} of {_gib(hw.host_bytes)})")
    lines.append(f"           {'FITS' if plan.fits else 'DOES NOT FIT'}")
    if plan.auto and len(plan.tried) > 1:
        tried = ", ".join(f"ZeRO-{t.setup.zero}/{t.setup.offload}" + (" fits" if t.fits else " no")
                          for t in plan.tried)
        lines.append(f"tried      {tried}")
    lines += [f"advice     {a}" for a in plan.advice]
    lines += ["", "assumptions"] + [f"  - {a}" for a in plan.assumptions]
    return "\n".join(lines) + "\n"
