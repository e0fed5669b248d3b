"""What `pip check` does, judged for the probed interpreter, plus duplicate and unreadable installs."""

from __future__ import annotations

from typing import Iterator

from packaging.markers import InvalidMarker, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.checks.requirements import parse_requirement
from envcheck.snapshot import PythonEnv, Snapshot

# Distributions whose compiled code links against one torch release's C++ ABI: a pin on another torch means the
# installed binary was built for that other torch (undefined symbols or a segfault on import).
TORCH_ABI_BOUND = frozenset({
    "xformers", "vllm", "flash-attn", "torchvision", "torchaudio", "mamba-ssm", "causal-conv1d", "apex",
    "transformer-engine", "torch-scatter", "torch-sparse",
})


def _applies(requirement: Requirement, env: PythonEnv) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({**env.marker_env, "extra": ""})
    except (InvalidMarker, UndefinedEnvironmentName):
        return True


def _satisfied(requirement: Requirement, installed: str) -> bool:
    try:
        return requirement.specifier.contains(Version(installed), prereleases=True)
    except InvalidVersion:
        return True  # a legacy version string: pip check cannot judge it either


def unmet_requirements(env: PythonEnv) -> Iterator[tuple[str, Requirement, str | None]]:
    """(requiring distribution, requirement, installed version or None) for each unmet requirement."""
    for name, requirements in sorted(env.requires.items()):
        for text in requirements:
            requirement = parse_requirement(text)
            if requirement is None:
                continue
            if not _applies(requirement, env):
                continue
            installed = env.packages.get(canonicalize_name(requirement.name))
            if installed is None or not _satisfied(requirement, installed):
                yield name, requirement, installed


def _reinstall_command(name: str, requirement: Requirement) -> str:
    return f'pip install "{requirement}"'


@check("EC201", "EC202", "EC203")
def requirements_not_met(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    env = snapshot.python
    if env is None:
        return
    for name, requirement, installed in unmet_requirements(env):
        version = env.packages.get(name, "?")
        target = canonicalize_name(requirement.name)
        evidence = (Evidence(f"python.packages.{target}", installed, str(requirement.specifier) or "installed"),
                    Evidence(f"python.requires.{name}", str(requirement)))
        if installed is None:
            yield Finding("EC202", Severity.WARNING, "version_conflict",
                          f"{name} {version} requires {requirement}, which is not installed",
                          f"Importing {name} may fail with ModuleNotFoundError, or fail later in the run.",
                          evidence, (Fix(f"Install what {name} needs", (_reinstall_command(name, requirement),)),))
        elif target == "torch" and name in TORCH_ABI_BOUND:
            yield Finding(
                "EC203", Severity.ERROR, "segfault_abi_mismatch",
                f"{name} {version} was built for torch {requirement.specifier}, but torch {installed} is installed",
                f"{name} ships compiled code linked against one torch release; with another torch its import fails "
                "with an undefined symbol or the process segfaults.",
                evidence,
                (Fix(f"Install the {name} release built for torch {installed}, or the torch it was built for",
                     (f"pip install --force-reinstall --no-deps {name}  # pick the release matching torch {installed}",
                      f'pip install "torch{requirement.specifier}"')),),
            )
        else:
            yield Finding("EC201", Severity.WARNING, "version_conflict",
                          f"{name} {version} requires {requirement}, but {target} {installed} is installed",
                          "pip check reports this too; the package may refuse to import or misbehave.",
                          evidence, (Fix("Install a version that satisfies the requirement",
                                         (_reinstall_command(name, requirement),)),))


@check("EC204")
def duplicate_installs(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    env = snapshot.python
    if env is None:
        return
    for duplicate in env.duplicates:
        listing = ", ".join(f"{v} in {loc}" for v, loc in zip(duplicate.versions, duplicate.locations))
        yield Finding(
            "EC204", Severity.WARNING, "version_conflict",
            f"{duplicate.name} is installed {len(duplicate.versions)} times",
            f"Python imports the first on sys.path ({duplicate.versions[0]}), while pip and metadata may report "
            f"another; mixed files from two installs cause import errors and crashes. Found: {listing}.",
            (Evidence(f"python.duplicates.{duplicate.name}", listing),),
            (Fix("Uninstall until none is left, then install once",
                 (f"pip uninstall -y {duplicate.name}  # repeat until 'not installed'",
                  f"pip install {duplicate.name}=={duplicate.versions[0]}")),),
        )


@check("EC205")
def unreadable_metadata(snapshot: Snapshot, _matrix: object) -> Iterator[Finding]:
    env = snapshot.python
    if env is None or not env.broken:
        return
    yield Finding(
        "EC205", Severity.WARNING, "version_conflict",
        f"{len(env.broken)} installed distribution(s) have unreadable metadata",
        "pip, importlib.metadata and version checks (transformers, LLaMA-Factory) may fail or see wrong versions. "
        + " ; ".join(env.broken[:5]),
        tuple(Evidence("python.broken", item) for item in env.broken[:10]),
        (Fix("Remove the damaged metadata directory and reinstall the package",
             ("rm -r <the .dist-info named above> && pip install --force-reinstall <package>",)),),
    )
