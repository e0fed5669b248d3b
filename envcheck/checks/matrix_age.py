"""Whether the matrix is older than what is installed (EC517): judged facts end at the newest release it knows."""

from __future__ import annotations

from typing import Iterator

from envcheck.checks import check
from envcheck.checks.model import Evidence, Finding, Fix, Severity
from envcheck.matrix import Matrix
from envcheck.matrix.query import newer_than_known
from envcheck.snapshot import Snapshot


@check("EC517", needs_matrix=True)
def installed_newer_than_matrix(snapshot: Snapshot, matrix: Matrix) -> Iterator[Finding]:
    python = snapshot.python
    if python is None or not matrix.newest_releases:
        return
    newer = [(package, installed, newest) for package, installed in sorted(python.packages.items())
             if (newest := newer_than_known(matrix, package, installed)) is not None]
    if not newer:
        return
    names = ", ".join(f"{package} {installed}" for package, installed, _newest in newer)
    yield Finding(
        "EC517", Severity.INFO, "other",
        f"installed release(s) newer than the matrix knows: {names} (matrix data {matrix.data_version})",
        "The compatibility matrix ends at the newest release the package index served when it was harvested. Checks "
        "that depend on these packages judged them from that newest known release, so a change in a later release "
        "(a new Python floor, a new requirement) is not seen. A newer envcheck, or `--matrix DIR` with a freshly "
        "harvested matrix, knows more.",
        tuple(Evidence(f"python.packages.{package}", installed, f"newest known release {newest.version}",
                       f"{newest.source} (matrix data_version {matrix.data_version})")
              for package, installed, newest in newer),
        (Fix("Upgrade envcheck for a newer matrix (or harvest one: envcheck matrix harvest --matrix DIR)",
             ('pip install --upgrade "envcheck-llm"',)),),
    )
