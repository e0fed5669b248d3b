"""Package-level rules from the matrix that installed metadata does not carry.

pip check (EC201-EC203) already compares what distributions declare. These add what they do not declare: the
Python range of a torch release, a package's GPU/CUDA needs (flash-attn 2 needs Ampere), torch floors that a
package enforces at import time, LLaMA-Factory's start-up version checks, and which NCCL is really loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from packaging.utils import canonicalize_name

from envcheck.checks import check
from envcheck.checks.facts import cc_key, gpu_capabilities, marker_environment
from envcheck.checks.known_bad import known_bad_floors
from envcheck.checks.requirements import parse_requirement
from envcheck.checks.model import Evidence, Finding, Fix, Severity, Unevaluated
from envcheck.checks.versions import major_minor
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.matrix.model import PackageRelease
from envcheck.snapshot import Snapshot


def _declared(snapshot: Snapshot, package: str) -> set[str]:
    """Names a distribution's own base metadata constrains with a version (so pip check covers them)."""
    names = set()
    environment = marker_environment(snapshot)
    for text in (snapshot.python.requires.get(package, ()) if snapshot.python else ()):
        requirement = parse_requirement(text)
        if requirement is None:
            continue
        marker = str(requirement.marker) if requirement.marker else None
        if requirement.specifier and query.marker_applies(marker, environment) is not False:
            names.add(canonicalize_name(requirement.name))
    return names


def requested_extra(snapshot: Snapshot, package: str, extra: str) -> str | None:
    """The installed distribution whose own (base) requirements ask for `package[extra]`, if any: the evidence
    that the extra was installed for a purpose, since metadata does not record which extras pip was given."""
    environment = marker_environment(snapshot)
    for requester, texts in sorted((snapshot.python.requires if snapshot.python else {}).items()):
        for text in texts:
            requirement = parse_requirement(text)
            if requirement is None:
                continue
            marker = str(requirement.marker) if requirement.marker else None
            if (canonicalize_name(requirement.name) == package and extra in requirement.extras
                    and query.marker_applies(marker, environment) is True):
                return requester
    return None


@dataclass(frozen=True)
class Need:
    """One requirement of a matrix release row, with the extra it sits under (None: the bare install's)."""

    key: str
    spec: str
    extra: str | None


def row_needs(row: PackageRelease, environment: dict[str, str]) -> list[Need]:
    """The row's requirements whose markers hold for the target; a marker that cannot be judged keeps its need."""
    groups = [(None, row.requires), *sorted(row.extras.items())]
    needs = []
    for extra, requirements in groups:
        for key, value in sorted(requirements.items()):
            spec, marker = query.split_marker(value)
            if query.marker_applies(marker, environment) is not False:
                needs.append(Need(key, spec, extra))
    return needs


@check("EC506", needs_matrix=True)
def python_outside_torch_range(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    torch, python = snapshot.torch, snapshot.python
    if torch is None or python is None:
        return
    row = query.torch_release(matrix, torch.version)
    if row is None:
        yield Unevaluated("Python vs torch release", f"the matrix has no torch {major_minor(torch.version)} release")
        return
    if query.satisfies(python.version, row.python) is False:
        yield Finding(
            "EC506", Severity.ERROR if row.confirmed else Severity.INFO, "version_conflict",
            f"Python {python.version} is outside torch {row.version}'s supported range {row.python}",
            "No official wheel exists for this pair: the installed torch is a source build, a nightly or a copy from "
            "another interpreter, and its compiled modules may fail to import.",
            (Evidence("python.version", python.version, row.python, row.source), Evidence("torch.version", torch.version)),
            (Fix("Use a Python inside the range, or a torch release that supports this Python",
                 (f"uv venv --python {row.python.split(',')[0].lstrip('>=')} && uv pip install torch",)),))


def _gpu_fact(snapshot: Snapshot, matrix: Matrix) -> tuple[str, ...]:
    return tuple(sorted({g.cc for g in gpu_capabilities(snapshot, matrix) if g.cc}, key=cc_key))


def _floors(spec: str) -> list[str]:
    """The lower bounds of a specifier set: '>=2.1,<2.7' -> ['2.1']."""
    return [part.strip()[2:].strip() for part in spec.split(",") if part.strip().startswith(">=")]


def _observed(snapshot: Snapshot, ccs: tuple[str, ...], need: Need) -> tuple[str | None, str] | None:
    """(what was found, the category) when the need is unmet; None when it holds or cannot be judged."""
    python = snapshot.python
    assert python is not None
    if need.key == "compute_capability":
        bad = [cc for cc in ccs if query.satisfies(cc, need.spec) is False]
        return (", ".join(bad), "cuda_arch_unsupported") if bad else None
    if need.key == "cuda":
        found = snapshot.torch.cuda if snapshot.torch else None
        return (found, "cuda_toolkit_mismatch") if found and query.satisfies(found, need.spec) is False else None
    found = python.version if need.key == "python" else python.packages.get(need.key)
    return (found, "version_conflict") if found is not None and query.satisfies(found, need.spec) is False else None


@check("EC507", needs_matrix=True)
def package_needs_not_met(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    python = snapshot.python
    if python is None:
        return
    ccs = _gpu_fact(snapshot, matrix)
    environment = marker_environment(snapshot)
    told = known_bad_floors(snapshot, matrix)  # (package, key, floor) that a known-bad entry already reports
    for package, installed in sorted(python.packages.items()):
        declared = _declared(snapshot, package)
        rows = query.package_releases(matrix, package, installed)
        newest = query.newer_than_known(matrix, package, installed) if not rows else None
        if newest is not None:  # newer than the matrix knows (EC517): judge from the newest known release's rows
            rows = query.package_releases(matrix, package, newest.version)
        for row in rows:
            for need in row_needs(row, environment):
                if need.extra is None and need.key in declared:
                    continue  # the distribution declares it: EC201/EC203 judge it from the real metadata
                if any((package, need.key, floor) in told for floor in _floors(need.spec)):
                    continue  # one fact, one finding: the known-bad entry carries the symptom and the fix
                unmet = _observed(snapshot, ccs, need)
                if unmet is None:
                    continue
                observed, category = unmet
                if need.extra is not None:
                    yield _judged(_extra_finding(snapshot, package, installed, need, observed, category, row), newest)
                    continue
                if need.key in row.wheel_keys:
                    wheel_finding = _no_prebuilt_wheel(snapshot, package, installed, need.key, need.spec, observed, row)
                    if wheel_finding is not None:
                        yield _judged(wheel_finding, newest)
                    continue
                severity = Severity.ERROR if row.confirmed else Severity.INFO
                yield _judged(Finding(
                    "EC507", severity, category,
                    f"{package} {installed} needs {need.key} {need.spec}, found {observed}",
                    (row.note or f"{package} {installed} does not declare this in its metadata, so pip does not "
                     "check it; it fails at import or at run time instead."),
                    (Evidence(f"python.packages.{package}", installed),
                     Evidence(need.key, observed, need.spec, row.source)),
                    (Fix(f"Install a {package} release that supports this {need.key}, or change the {need.key}",
                         (f'pip install "{package}" --upgrade  # then check the release notes for {need.key} {need.spec}',)),)), newest)


def _judged(finding: Finding, newest) -> Finding:  # type: ignore[no-untyped-def]
    """A finding judged from the newest release the matrix knows, not the installed (newer) one, says so."""
    if newest is None:
        return finding
    from dataclasses import replace

    return replace(finding, detail=f"{finding.detail} (Judged from {newest.package} {newest.version}, the newest "
                                   "release the matrix knows; see EC517.)",
                   evidence=(*finding.evidence, Evidence("matrix.newest_release", newest.version, source=newest.source)))


def _extra_finding(snapshot: Snapshot, package: str, installed: str, need: Need, observed: str | None,
                   category: str, row: PackageRelease) -> Finding:
    """An extra's range is not a requirement of the install: info, or a warning where an installed distribution
    asks for that extra (its next install or upgrade would move the package)."""
    requester = requested_extra(snapshot, package, need.extra or "")
    detail = (f"Only {package}'s [{need.extra}] extra asks for this; the bare install does not, pip check is "
              f"silent, and {package} runs. `pip install \"{package}[{need.extra}]\"` would change {need.key}.")
    if requester:
        detail = (f"{requester} requires {package}[{need.extra}], whose range excludes the installed {need.key}: "
                  f"reinstalling or upgrading {requester} moves {need.key} or {package}. " + detail)
    return Finding(
        "EC507", Severity.WARNING if requester and row.confirmed else Severity.INFO, category,
        f"{package} {installed}'s [{need.extra}] extra asks {need.key} {need.spec}, found {observed}",
        detail,
        (Evidence(f"python.packages.{package}", installed),
         Evidence(f"{need.key} (extra {need.extra})", observed, need.spec, row.source),
         *((Evidence(f"python.requires.{requester}", f"{package}[{need.extra}]"),) if requester else ())))


def _no_prebuilt_wheel(snapshot: Snapshot, package: str, installed: str, key: str, spec: str, observed: str | None,
                       row) -> Finding | None:  # type: ignore[no-untyped-def]
    """No wheel was published for this torch/CUDA: fine for a source build, an ABI mismatch for a wheel built for
    another torch. A successful import in a child (--deep) settles it."""
    from envcheck.probes.runtime import EXTENSION_TARGETS

    module = next((t.name for t in EXTENSION_TARGETS if t.package == package), None)
    imported = (snapshot.runtime or {}).get(module or "")
    if imported is not None and imported.ok:
        return None
    return Finding(
        "EC507", Severity.WARNING if row.confirmed else Severity.INFO, "segfault_abi_mismatch",
        f"{package} {installed} published no wheel for {key} {observed} (wheels: {key} {spec})",
        f"If {package} was built from source against this {key}, this is fine; if a wheel for another {key} was "
        "installed, its import fails with an undefined symbol. `envcheck doctor --deep` imports it to tell.",
        (Evidence(f"python.packages.{package}", installed), Evidence(key, observed, spec, row.source)),
        (Fix(f"Build {package} from source against the installed torch",
             (f'pip install --no-build-isolation --no-binary {package} --force-reinstall "{package}=={installed}"',)),))


@check("EC508", needs_matrix=True)
def llamafactory_ranges(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding | Unevaluated]:
    python = snapshot.python
    if python is None or "llamafactory" not in python.packages:
        return
    installed = python.packages["llamafactory"]
    row = query.llamafactory_release(matrix, installed)
    if row is None:
        yield Unevaluated("LLaMA-Factory ranges", f"the matrix has no LLaMA-Factory release <= {installed}")
        return
    disabled = (snapshot.env.get("DISABLE_VERSION_CHECK") or "").lower() in ("1", "true")
    # What check_dependencies() enforces at start-up wins over requirements.txt for the packages it checks.
    ranges = {**row.requires, **row.checked_ranges}
    for name, spec in sorted(ranges.items()):
        found = python.packages.get(name)
        if found is None or query.satisfies(found, spec) is not False:
            continue
        at_start = name in row.checked_at_runtime or name in row.checked_ranges
        severity = Severity.ERROR if at_start and not disabled else Severity.WARNING
        if not row.confirmed:
            severity = Severity.INFO
        detail = ("LLaMA-Factory checks this at start-up and stops with \"To fix: run `pip install ...` or set "
                  "`DISABLE_VERSION_CHECK=1` to skip this check.\"" if at_start and not disabled else
                  "LLaMA-Factory was released and tested with this range; outside it, APIs it calls may differ.")
        yield Finding(
            "EC508", severity, "version_conflict",
            f"LLaMA-Factory {installed} requires {name} {spec}, found {found}",
            detail,
            (Evidence("python.packages.llamafactory", installed, None, row.source),
             Evidence(f"python.packages.{name}", found, spec)),
            (Fix(f"Install the {name} range LLaMA-Factory {row.version} was released with", (f'pip install "{name}{spec}"',)),))


def _nccl_wheel(snapshot: Snapshot) -> tuple[str, str] | None:
    for name, found in sorted((snapshot.python.packages if snapshot.python else {}).items()):
        if name.startswith("nvidia-nccl"):
            return name, found
    return None


@check("EC511")
def nccl_loaded_vs_wheel(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    wheel = _nccl_wheel(snapshot)
    runtime = (snapshot.runtime or {}).get("torch")
    if wheel is None:
        return
    wheel_name, wheel_version = wheel
    loaded = runtime.facts.get("nccl_version") if runtime is not None and runtime.ok else None
    if isinstance(loaded, str) and loaded and not loaded.startswith("error") and loaded != wheel_version.split("+")[0]:
        yield Finding(
            "EC511", Severity.WARNING, "nccl_error",
            f"torch reports NCCL {loaded}, but {wheel_name} {wheel_version} is installed",
            "torch reports the NCCL it was built with (statically linked builds) or loaded; when it differs from "
            "the wheel, another libnccl is in use and NCCL fixes from the wheel do not apply.",
            (Evidence("runtime.torch.facts.nccl_version", loaded, wheel_version),
             Evidence(f"python.packages.{wheel_name}", wheel_version)),
            (Fix("Find which libnccl the process maps", ("NCCL_DEBUG=INFO python -c 'import torch, torch.distributed'",
                                                          "grep -i nccl /proc/<pid>/maps")),))

