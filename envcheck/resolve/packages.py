"""Choose a version range for each package of the stack from the matrix's package rows, given torch/CUDA/GPUs.

A package's range is the newest matrix row whose needs (python, torch, cuda, compute_capability, driver) hold for
the candidate stack and whose versions overlap every outer range (the user's --with, LLaMA-Factory's caps). Releases
newer than the newest row are not chosen: the matrix has not checked them.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.matrix import Matrix
from envcheck.matrix.model import LlamaFactoryRelease, PackageRelease
from envcheck.matrix.query import marker_applies, split_marker
from envcheck.resolve.specs import combine, line_matches, overlaps
from envcheck.resolve.specs import _probes  # noqa: PLC2701 - shared bound sampler

# What `--for llamafactory` adds to LLaMA-Factory's own requirements: the training stack of the issue.
STACK_EXTRAS = ("deepspeed",)
# LLaMA-Factory requirements the resolver ranges itself (the rest the lock's resolver takes from its metadata).
STACK_CORE = ("transformers", "accelerate", "peft", "trl", "datasets", "tokenizers")
# Package extras the resolver keeps to although the lock installs the bare package: every stack installs torch, so
# a package's [torch] extra states the torch pairing it was released for, and a later `pip install pkg[torch]`
# must not change the stack. The doctor, judging an installed environment, treats extras as not installed.
RESOLVER_EXTRAS = ("torch",)


@dataclass(frozen=True)
class Context:
    """The candidate stack the package rows are judged against."""

    python: str
    torch: str  # "2.5"
    cuda: str
    ccs: tuple[str, ...]
    driver: str | None


@dataclass(frozen=True)
class Choice:
    name: str
    spec: str  # the combined range handed to the lock's resolver
    why: str
    torch_spec: str = ""  # what the chosen row asks of torch (vLLM and xformers pin it)


@dataclass(frozen=True)
class Refusal:
    name: str
    why: str


def _row_top(row: PackageRelease) -> Version:
    spec = SpecifierSet(row.versions)
    hits = [v for v in _probes(spec) if spec.contains(v, prereleases=True)]
    return max(hits) if hits else Version("0")


def _need_fails(key: str, need: str, ctx: Context) -> str | None:
    """Why a row's need fails for this stack, or None when it holds (or is not the resolver's to judge)."""
    if not need:
        return None
    spec = SpecifierSet(need)
    if key == "python" and not spec.contains(Version(ctx.python), prereleases=True):
        return f"needs Python {need} (target: {ctx.python})"
    if key == "torch" and not line_matches(ctx.torch, spec):
        return f"needs torch {need} (candidate: {ctx.torch})"
    if key == "cuda" and not spec.contains(Version(ctx.cuda), prereleases=True):
        return f"needs CUDA {need} (candidate: {ctx.cuda})"
    if key == "compute_capability":
        bad = [cc for cc in ctx.ccs if not spec.contains(Version(cc), prereleases=True)]
        if bad:
            return f"needs compute capability {need} (target GPU: {', '.join(bad)})"
    if key == "driver" and ctx.driver and not spec.contains(Version(ctx.driver), prereleases=True):
        return f"needs driver {need} (target: {ctx.driver})"
    return None


def target_markers(ctx: Context) -> dict[str, str]:
    """PEP 508 marker values of the target: a Linux x86_64 CPython of the candidate's Python."""
    return {"python_version": ctx.python, "python_full_version": f"{ctx.python}.0", "sys_platform": "linux",
            "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64",
            "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def resolver_needs(row: PackageRelease, ctx: Context) -> dict[str, str]:
    """A release's base requirements plus those of RESOLVER_EXTRAS whose markers hold for the target (several
    ranges for one key are combined)."""
    needs: dict[str, list[str]] = {}
    environment = target_markers(ctx)
    for source in (row.requires, *(row.extras.get(e, {}) for e in RESOLVER_EXTRAS)):
        for key, value in source.items():
            spec, marker = split_marker(value)
            if marker_applies(marker, environment) is not False:
                needs.setdefault(key, []).append(spec)
    return {key: values[0] if len(values) == 1 else ",".join(values) for key, values in needs.items()}


def choose(matrix: Matrix, name: str, outer: tuple[tuple[str, str], ...], ctx: Context) -> Choice | Refusal:
    """`outer`: (range, where it comes from) pairs that the chosen range must overlap."""
    specs = [SpecifierSet(spec) for spec, _ in outer if spec]
    rows = sorted((r for r in matrix.package_releases if r.package == name), key=_row_top, reverse=True)
    origin = "; ".join(f"{spec} from {where}" for spec, where in outer if spec)
    if not rows:
        return Choice(name, combine(*specs), f"no matrix rows for {name}; range " + (origin or "left to the lock"))
    if specs and not overlaps(*specs):
        return Refusal(name, f"{name}: the ranges {origin} exclude each other")
    refusals: list[tuple[PackageRelease, dict[str, str]]] = []
    for row in rows:
        if specs and not overlaps(SpecifierSet(row.versions), *specs):
            continue
        needs = resolver_needs(row, ctx)
        failures = {k: w for k, n in sorted(needs.items()) if (w := _need_fails(k, n, ctx))}
        if failures:
            refusals.append((row, failures))
            continue
        why = f"newest {name} release line in the matrix that fits: {row.versions}"
        if refusals:
            newest, failed = refusals[0]
            why += f" (newer {newest.versions} {next(iter(failed.values()))})"
        if origin:
            why += f"; within {origin}"
        if not row.confirmed:
            why += " [row not confirmed]"
        return Choice(name, combine(row.versions, *specs), why, needs.get("torch", ""))
    if not refusals:
        return Refusal(name, f"{name}: no release in the matrix is inside {origin}")
    common = set.intersection(*(set(f) for _, f in refusals))
    newest, failed = refusals[0]
    if common:
        key = sorted(common)[0]
        return Refusal(name, f"every {name} release in the matrix {failed[key]}")
    return Refusal(name, f"no {name} release fits: {newest.versions} {next(iter(failed.values()))}")


def llamafactory_rows(matrix: Matrix, spec: str, python: str) -> list[LlamaFactoryRelease]:
    wanted = SpecifierSet(spec)
    rows = [r for r in matrix.llamafactory_releases
            if wanted.contains(r.version, prereleases=True) and SpecifierSet(r.python).contains(python)]
    return sorted(rows, key=lambda r: Version(r.version), reverse=True)


def llamafactory_outer(row: LlamaFactoryRelease) -> dict[str, str]:
    """LLaMA-Factory's ranges for the stack's packages: requirements, the deepspeed extra, runtime-checked caps."""
    ranges: dict[str, list[str]] = {}
    for source in (row.requires, row.checked_ranges, *(row.extras.get(e, {}) for e in STACK_EXTRAS)):
        for name, spec in source.items():
            ranges.setdefault(name, []).append(spec)
    return {name: combine(*specs) for name, specs in ranges.items()}
