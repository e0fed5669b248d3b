"""`envcheck matrix show`: the matrix as compact tables a person can scan."""

from __future__ import annotations

from envcheck.matrix import Matrix


def render_matrix(matrix: Matrix) -> str:
    out = [f"compat matrix {matrix.data_version} ({matrix.path})", ""]
    out.append("files: " + ", ".join(f"{name} {version}" for name, version in sorted(matrix.files.items())))
    out.append("rows:  " + ", ".join(f"{name} {count}" for name, count in matrix.counts().items()))
    if matrix.cuda_releases:
        out += ["", "CUDA -> minimum Linux driver"]
        out += [f"  {r.version:<8} >= {r.min_driver_linux}" for r in matrix.cuda_releases]
    if matrix.torch_releases:
        out += ["", "torch -> Python, CUDA variants (default)"]
        out += [f"  {r.version:<6} python {r.python:<16} cuda {', '.join(r.cuda_variants)} ({r.default_cuda or '?'})"
                for r in matrix.torch_releases]
    if matrix.torch_builds:
        out += ["", "torch build -> compiled architectures (+PTX)"]
        out += [f"  {b.torch}+cu{b.cuda.replace('.', ''):<4} {' '.join(b.arch_list)}"
                + (f" +PTX {' '.join(b.ptx)}" if b.ptx else "") for b in matrix.torch_builds]
    if matrix.gpus:
        out += ["", "GPU -> compute capability"]
        out += [f"  {g.name:<26} {g.compute_capability}" for g in matrix.gpus]
    if matrix.known_bad:
        out += ["", "known-bad combinations"]
        out += [f"  {k.id} [{k.severity}/{k.category}] {k.title}" for k in matrix.known_bad]
    return "\n".join(out) + "\n"
