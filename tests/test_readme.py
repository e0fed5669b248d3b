"""README's two commands are the ones users and CI run."""

from __future__ import annotations

from conftest import REPO


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    # Before it only the system packages the image-build tests need (apt-get) and environment settings (export).
    *setup, command = ci_lines
    assert command == "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest"
    assert all(line.startswith(("apt-get ", "export ")) for line in setup), setup
    assert command in readme
    assert "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/envcheck doctor" in readme


def test_every_finding_id_is_documented_in_the_readme() -> None:
    from envcheck.checks import REGISTRY, _load_check_modules

    _load_check_modules()
    readme = (REPO / "README.md").read_text()
    for check in REGISTRY:
        for finding_id in check.ids:
            assert finding_id in readme, f"{finding_id} ({check.name}) is missing from README's table"


def test_every_package_directory_is_shipped() -> None:
    """pyproject lists packages explicitly (compat_matrix is mapped in); a new subpackage must be listed too."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "envcheck").rglob("__init__.py")}
    assert present - listed == set(), f"missing from pyproject's packages: {present - listed}"
