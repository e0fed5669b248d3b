"""The resolve policy is visible and chosen: 'full' driver support by default, 'compat' on request, and the
explanation names every newer build that was passed over and why."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

from envcheck.resolve.env_cli import command_text


def resolve(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "envcheck", "resolve", "--driver", "535.104.05", "--gpu", "H100",
                           "--python", "3.11", "--no-lock", "--json", *args], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _torch_reason(result: dict) -> dict:
    return next(r for r in result["reasons"] if r["package"] == "torch")


def test_default_policy_prefers_full_driver_support_and_lists_what_it_passed_over() -> None:
    result = resolve()
    assert result["pins"]["cuda"] == "12.1"
    reason = _torch_reason(result)
    assert "fully supports" in reason["why"]
    passed = reason["passed_over"]
    compat = [p for p in passed if "minor-version compatibility" in p]
    # every newer release line with a CUDA 12 build this driver runs through minor-version compatibility is named
    lines = {p.split("+")[0].removeprefix("torch ") for p in compat}
    assert {"2.6", "2.7", "2.8", "2.9", "2.10", "2.11"} <= lines
    assert any(p.startswith("torch 2.6+cu12.4:") for p in compat)
    assert all(": " in p for p in passed) and len(passed) == len(set(passed))


def test_compat_policy_takes_the_newest_torch_that_runs() -> None:
    result = resolve("--policy", "compat")
    default = resolve()
    assert float(result["pins"]["cuda"]) > float(default["pins"]["cuda"])
    assert "--policy compat" in _torch_reason(result)["why"]
    assert any("minor-version compatibility" in w for w in result["warnings"])


def test_env_reproduces_a_non_default_policy() -> None:
    import argparse

    args = argparse.Namespace(driver="535.104.05", gpu=["H100"], format="all", policy="compat")
    assert command_text(args).endswith("--driver 535.104.05 --gpu H100 --policy compat --format all")
