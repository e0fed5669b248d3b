"""Target + matrix -> the newest stack that satisfies every constraint, with a reason for each choice.

Candidates (torch release x CUDA variant) are ranked by the policy first: "full" (the default) puts builds the
driver fully supports before those that run only through CUDA minor-version compatibility, which the doctor rates
a warning (no PTX JIT, no newer nvcc output); "compat" ranks them alike and so takes the newest torch that runs.
Then SASS for every GPU before PTX-only, confirmed matrix rows before unconfirmed ones, newest torch, the variant on
the default package index (its files and hashes do not depend on a second index), newest CUDA. The first
candidate whose packages and known-bad entries all fit wins; every newer build it was preferred to, and why, goes
into the explanation.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envcheck.checks.driver import DriverVerdict, judge_driver
from envcheck.checks.facts import ArchList, runs_on
from envcheck.checks.model import Unevaluated
from envcheck.matrix import Matrix
from envcheck.matrix import query
from envcheck.matrix.model import CudaImage, TorchBuild, TorchRelease
from envcheck.resolve import known_bad
from envcheck.resolve.packages import STACK_CORE, STACK_EXTRAS, Choice, Context, Refusal, choose, llamafactory_outer
from envcheck.resolve.packages import llamafactory_rows
from envcheck.resolve.specs import combine, line_matches, parse_spec
from envcheck.resolve.target import Target

PYTHON_PREFERENCE = ("3.11", "3.12", "3.10", "3.13")
POLICIES = ("full", "compat")


@dataclass(frozen=True)
class Reason:
    package: str
    choice: str
    why: str
    passed_over: tuple[str, ...] = ()  # newer candidates not taken, each with why


@dataclass(frozen=True)
class Resolution:
    target: Target
    matrix_version: str
    python: str
    torch: str  # release line, "2.5"
    cuda: str
    torch_index: str  # "cu124"
    default_index: bool  # the default package index serves this variant (no --torch-backend needed)
    ranges: dict[str, str]  # name -> range the constraints allow, handed to the lock ("==2.5.*"); python, cuda X.Y
    base_image: CudaImage | None
    platform_glibc: str  # manylinux glibc of the lock's platform
    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...]

    @property
    def pins(self) -> dict[str, str]:
        """The ranges, under the name older emitters label with (the Dockerfile's LABEL); exact versions are
        envcheck.resolve.exact.Exact.pins."""
        return self.ranges

    @property
    def base_image_ref(self) -> str | None:
        if self.base_image is None:
            return None
        ref = f"nvidia/cuda:{self.base_image.tag}"
        return f"{ref}@{self.base_image.digest}" if self.base_image.digest else ref


@dataclass(frozen=True)
class Impossible:
    reason: str
    details: tuple[str, ...]


@dataclass(frozen=True)
class _Candidate:
    release: TorchRelease
    build: TorchBuild
    verdict: DriverVerdict
    fit: str  # "sass" or "ptx"

    def rank(self, policy: str = "full") -> tuple:  # type: ignore[type-arg]
        default = self.release.default_cuda == self.build.cuda
        return (policy == "full" and self.verdict.state != "ok", self.fit != "sass", not self.build.confirmed,
                -_v(self.release.version), not default, -_v(self.build.cuda))

    @property
    def label(self) -> str:
        return f"torch {self.release.version}+cu{self.build.cuda}"

    def newer_than(self, other: _Candidate) -> bool:
        return (_v(self.release.version), _v(self.build.cuda)) > (_v(other.release.version), _v(other.build.cuda))


def _passed_over(chosen: _Candidate, later: list[_Candidate], policy: str) -> list[str]:
    """Why each newer build ranked after the chosen one was not taken (the policy, PTX-only kernels, unconfirmed
    rows): it was never tried, so no note says so otherwise."""
    found = []
    for other in later:
        if not other.newer_than(chosen):
            continue
        if other.verdict.state != "ok" and chosen.verdict.state == "ok" and policy == "full":
            why = (f"the driver runs CUDA {other.build.cuda} only through minor-version compatibility (policy "
                   "'full' prefers full driver support; --policy compat takes it)")
        elif other.fit != "sass" and chosen.fit == "sass":
            why = "a GPU would run it only through PTX JIT"
        elif not other.build.confirmed and chosen.build.confirmed:
            why = "its matrix row is not confirmed"
        else:
            why = "a newer or default-index variant of the same release was preferred"
        found.append(f"{other.label}: {why}")
    return found


def _v(text: str) -> float:
    major, minor = (int(x) for x in text.split(".")[:2])
    return major * 1000 + minor


def _pythons(matrix: Matrix, target: Target) -> tuple[list[str], str]:
    if target.python:
        return [target.python], f"from {target.origin.get('python', '--python')}"
    return list(PYTHON_PREFERENCE), "3.11 first: LLaMA-Factory >=0.9.4 requires it and every torch since 2.0 ships it"


def _candidates(matrix: Matrix, target: Target, python: str, notes: list[str], policy: str = "full") -> list[_Candidate]:
    snapshot = target.as_snapshot()
    torch_spec = parse_spec(target.torch, "--torch") if target.torch else None
    found = []
    for release in matrix.torch_releases:
        if torch_spec is not None and not line_matches(release.version, torch_spec):
            continue
        if not SpecifierSet(release.python).contains(python):
            notes.append(f"torch {release.version}: no wheels for Python {python} (it supports {release.python})")
            continue
        if target.glibc and release.manylinux_glibc and Version(target.glibc) < Version(release.manylinux_glibc):
            notes.append(f"torch {release.version}: wheels need glibc {release.manylinux_glibc}, target has {target.glibc}")
            continue
        for build in (b for b in matrix.torch_builds if b.torch == release.version):
            if target.cuda and query.version(build.cuda) != query.version(target.cuda):
                continue
            verdict = judge_driver(snapshot, matrix, build.cuda)
            if isinstance(verdict, Unevaluated):
                notes.append(f"torch {release.version}+cu{build.cuda}: {verdict.missing}")
                continue
            if verdict.state == "too_old":
                notes.append(f"torch {release.version}+cu{build.cuda}: driver {target.driver} is too old for CUDA {build.cuda}")
                continue
            arch = ArchList(build.arch_list, build.ptx, build.source)
            fits = {g.cc: runs_on(arch, g.cc) for g in target.gpus}
            missing = sorted(cc for cc, fit in fits.items() if fit is None)
            if missing:
                names = ", ".join(sorted({g.name for g in target.gpus if g.cc in missing}))
                notes.append(f"torch {release.version}+cu{build.cuda}: no kernels for compute capability "
                             f"{', '.join(missing)} ({names}); built for {' '.join(build.arch_list)}")
                continue
            fit = "ptx" if any(f == "ptx" for f in fits.values()) else "sass"
            found.append(_Candidate(release, build, verdict, fit))
    return sorted(found, key=lambda c: c.rank(policy))


def _packages(matrix: Matrix, target: Target, ctx: Context) -> tuple[list[Choice], list[Reason]] | str:
    """The package ranges for one candidate, or why it fails."""
    reasons: list[Reason] = []
    outer: dict[str, list[tuple[str, str]]] = {r.name: [(r.spec, "--with")] for r in target.requests}
    choices: list[Choice] = []
    if target.llamafactory is not None:
        rows = llamafactory_rows(matrix, target.llamafactory, ctx.python)
        rows = [r for r in rows if line_matches(ctx.torch, llamafactory_outer(r).get("torch", ""))]
        if not rows:
            return f"no LLaMA-Factory release{' ' + target.llamafactory if target.llamafactory else ''} in the " \
                   f"matrix supports Python {ctx.python} with torch {ctx.torch}"
        row = rows[0]
        ranges = llamafactory_outer(row)
        choices.append(Choice("llamafactory", f"=={row.version}", f"newest LLaMA-Factory release in the matrix for "
                              f"Python {ctx.python} ({row.python}) and torch {ctx.torch}"))
        for name in (*STACK_CORE, *STACK_EXTRAS):
            if name in ranges:
                outer.setdefault(name, []).append((ranges[name], f"LLaMA-Factory {row.version}"))
    for name in sorted(outer):
        picked = choose(matrix, name, tuple(outer[name]), ctx)
        if isinstance(picked, Refusal):
            return picked.why
        choices.append(picked)
    return choices, reasons


def _torch_pin(line: str, target: Target, choices: list[Choice]) -> str | None:
    specs = [SpecifierSet(f"=={line}.*")] + [SpecifierSet(c.torch_spec) for c in choices if c.torch_spec]
    if target.torch:
        specs.append(parse_spec(target.torch, "--torch"))
    from envcheck.resolve.specs import overlaps

    return combine(*specs) if overlaps(*specs) else None


def _image(matrix: Matrix, cuda: str) -> CudaImage | None:
    return next((i for i in matrix.cuda_images if query.version(i.cuda) == query.version(cuda)), None)


def resolve(target: Target, matrix: Matrix, policy: str = "full") -> Resolution | Impossible:
    if policy not in POLICIES:
        raise ValueError(f"unknown resolve policy {policy!r}")
    if not target.driver:
        return Impossible("the target has no NVIDIA driver: give --driver VERSION and --gpu NAME (or --snapshot "
                          "FILE of the training machine)", ())
    pythons, python_why = _pythons(matrix, target)
    first_notes: list[str] | None = None
    for python in pythons:
        notes: list[str] = []
        candidates = _candidates(matrix, target, python, notes, policy)
        for index, candidate in enumerate(candidates):
            release, build = candidate.release, candidate.build
            ctx = Context(python, release.version, build.cuda, tuple(g.cc for g in target.gpus), target.driver)
            picked = _packages(matrix, target, ctx)
            if isinstance(picked, str):
                notes.append(f"torch {release.version}+cu{build.cuda}: {picked}")
                continue
            choices, _ = picked
            torch_pin = _torch_pin(release.version, target, choices)
            if torch_pin is None:
                notes.append(f"torch {release.version}+cu{build.cuda}: the packages pin torch outside {release.version}")
                continue
            pins = {c.name: c.spec for c in choices}
            bad = known_bad.blocking(matrix, target, ctx, pins)
            if bad:
                notes.append(f"torch {release.version}+cu{build.cuda}: {bad}")
                continue
            notes += _passed_over(candidate, candidates[index + 1:], policy)
            return _resolution(matrix, target, candidate, python, python_why, choices, torch_pin, notes, policy)
        first_notes = notes if first_notes is None else first_notes
    notes = sorted(dict.fromkeys(first_notes or []), key=lambda n: -_v(_note_torch(n) or "0.0"))
    if not notes:
        return Impossible("no torch release in the matrix matches the request", ())
    return Impossible(_summary(target, notes), tuple(notes))


def _note_torch(note: str) -> str | None:
    head = note.split(":", 1)[0]
    if not head.startswith("torch "):
        return None
    return head[6:].split("+", 1)[0]


def _summary(target: Target, notes: list[str]) -> str:
    """The reason of the newest candidate: a note about what the user asked for (--with, --for) beats one about the
    machine, which beats a generic one."""
    for marker in ("from --with", "from --for", "every ", "no kernels for", "too old", "no wheels for Python", "no "):
        hit = next((n for n in notes if marker in n), None)
        if hit:
            return f"no stack fits the target; newest candidate: {hit}"
    return f"no stack fits the target; {notes[0]}"


def _resolution(matrix: Matrix, target: Target, c: _Candidate, python: str, python_why: str, choices: list[Choice],
                torch_pin: str, notes: list[str], policy: str) -> Resolution:
    release, build, verdict = c.release, c.build, c.verdict
    warnings: list[str] = []
    reasons = [Reason("python", python, python_why)]
    default = release.default_cuda == build.cuda
    index = "cu" + build.cuda.replace(".", "")
    newer = [n for n in dict.fromkeys(notes) if _note_torch(n) is not None and _v(_note_torch(n)) >= _v(release.version)  # type: ignore[arg-type]
             and not n.startswith(f"{c.label}:")]
    rejected = tuple(sorted(newer, key=lambda n: -_v(_note_torch(n))))  # type: ignore[arg-type]
    rule = ("newest torch whose build the driver fully supports and that fits the target" if policy == "full"
            else "newest torch whose build runs on the target (minor-version compatibility allowed: --policy compat)")
    reasons.append(Reason("torch", torch_pin, rule + (f"; {len(rejected)} newer builds passed over" if rejected else ""),
                          rejected))
    gpus = ", ".join(f"{g.name} ({g.cc})" for g in target.gpus) or "no GPU given"
    reasons.append(Reason("cuda", build.cuda, f"driver {target.driver} ({target.origin.get('driver', '')}) "
                          + ("supports" if verdict.state == "ok" else "runs only through minor-version compatibility")
                          + f" CUDA {build.cuda}; torch {release.version}+{index} has kernels for {gpus}"
                          + ("" if c.fit == "sass" else " (PTX only, JIT-compiled at first use)")))
    reasons.append(Reason("torch_index", index, "the default package index serves this variant" if default else
                          f"not the default-index variant (that is CUDA {release.default_cuda}): install with uv "
                          f"--torch-backend={index} (or UV_TORCH_BACKEND={index})"))
    for choice in choices:
        reasons.append(Reason(choice.name, choice.spec, choice.why))
    if verdict.state != "ok":
        warnings.append(f"driver {target.driver} runs CUDA {build.cuda} only through minor-version compatibility: "
                        + "; ".join(verdict.limitations or ("PTX JIT fails",)))
    if c.fit == "ptx":
        warnings.append("a GPU runs torch only through PTX JIT: the first use of each kernel compiles it (slow start)")
    if not target.gpus:
        warnings.append("no GPU given: the architecture was not checked (give --gpu or --compute-capability)")
    for row, what in ((build, f"torch_build {release.version} cu{build.cuda}"), (release, f"torch_release {release.version}")):
        if not row.confirmed:
            warnings.append(f"matrix row {what} is not confirmed: {row.note or ''}".strip())
    image = _image(matrix, build.cuda)
    if image is None:
        warnings.append(f"no CUDA {build.cuda} base image in the matrix: the Dockerfile cannot be written")
    else:
        image_verdict = judge_driver(target.as_snapshot(), matrix, image.tag.split("-")[0])
        why = f"devel image (nvcc {build.cuda} = torch's CUDA, for JIT builds of DeepSpeed/flash-attn ops)"
        if not isinstance(image_verdict, Unevaluated) and image_verdict.state != "ok":
            warnings.append(f"base image CUDA {image.tag.split('-')[0]} is newer than driver {target.driver} fully "
                            "supports; its nvcc output runs through minor-version compatibility")
        reasons.append(Reason("base_image", f"nvidia/cuda:{image.tag}", why
                              + ("" if image.confirmed else f" [row not confirmed: {image.note}]")))
    glibc = release.manylinux_glibc or "2.17"
    if not target.glibc:
        warnings.append(f"target glibc unknown: the lock assumes manylinux_{glibc.replace('.', '_')} (glibc >= {glibc})")
    warnings.extend(known_bad.warnings(matrix, target, Context(python, release.version, build.cuda,
                    tuple(g.cc for g in target.gpus), target.driver), {c.name: c.spec for c in choices}))
    pins = {"python": python, "torch": torch_pin, "cuda": build.cuda, **{c.name: c.spec for c in choices}}
    return Resolution(target, matrix.data_version, python, release.version, build.cuda, index, default, pins, image,
                      glibc, tuple(reasons), tuple(warnings))
