"""`envcheck alerts --format prometheus` and the guard's textfile, checked by the real promtool (Debian's
`prometheus` package). Skipped with the reason where promtool is missing, unless ENVCHECK_PROMTOOL=required."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from envcheck.cli import main

PROMTOOL = shutil.which("promtool")


def _promtool() -> str:
    if PROMTOOL is None:
        if os.environ.get("ENVCHECK_PROMTOOL") == "required":
            pytest.fail("promtool is required (ENVCHECK_PROMTOOL=required) but not on PATH: apt-get install prometheus")
        pytest.skip("promtool not on PATH (Debian: apt-get install prometheus)")
    return PROMTOOL


def _rules(tmp_path: Path, capsys, *extra: str) -> Path:
    assert main(["alerts", "--format", "prometheus", *extra]) == 0
    path = tmp_path / "rules.yml"
    path.write_text(capsys.readouterr().out)
    return path


def test_rules_pass_promtool_check_and_unit_tests(tmp_path: Path, capsys) -> None:
    promtool = _promtool()
    rules = _rules(tmp_path, capsys)
    checked = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "8 rules found" in checked.stdout
    shutil.copy(REPO / "tests/assets/guard/promtool-rules-test.yml", tmp_path / "test.yml")
    tested = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_custom_rules_change_the_thresholds_and_promtool_sees_it(tmp_path: Path, capsys) -> None:
    promtool = _promtool()
    custom = tmp_path / "mine.toml"
    custom.write_text('schema_version = 1\n[[rule]]\nid = "gpu_full"\nkind = "threshold"\nmetric = "gpu_memory_ratio"\n'
                      'threshold = 0.5\nfor = "1m"\nsummary = "GPU {key} over half ({value:.0%})"\n')
    rules = _rules(tmp_path, capsys, "--rules", str(custom))
    assert "> 0.5" in rules.read_text() and "for: 1m" in rules.read_text()
    test = tmp_path / "test.yml"
    test.write_text("rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n"
                    "      - {series: 'DCGM_FI_DEV_FB_USED{gpu=\"3\"}', values: '60x5'}\n"
                    "      - {series: 'DCGM_FI_DEV_FB_FREE{gpu=\"3\"}', values: '40x5'}\n"
                    "    alert_rule_test:\n      - eval_time: 2m\n        alertname: EnvcheckGuardGpuFull\n"
                    "        exp_alerts:\n          - exp_labels: {severity: warning, guard_rule: gpu_full, gpu: '3'}\n"
                    "            exp_annotations: {summary: 'GPU 3 over half (60%)'}\n")
    done = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    # a wrong expectation fails: the test above really checks something
    test.write_text(test.read_text().replace("(60%)", "(61%)"))
    assert subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                          timeout=60).returncode == 1


def test_alerts_json_lists_each_rule(capsys) -> None:
    assert main(["alerts", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["guard_rule"] for r in doc["rules"]} >= {"gpu_memory_high", "host_memory_growth", "host_oom_soon",
                                                      "shm_high", "disk_high", "gpu_xid", "rank_gone"}


def test_a_bad_rules_file_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('schema_version = 1\n[[rule]]\nid = "x"\nkind = "threshold"\nmetric = "gpu_memory_ratio"\n'
                   'threshold = 0.5\nfor = "soon"\n')
    assert main(["alerts", "--rules", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rule[0].for" in err and "'soon'" in err


def test_textfile_passes_promtool_check_metrics(tmp_path: Path) -> None:
    promtool = _promtool()
    prom = tmp_path / "textfile"
    done = subprocess.run([sys.executable, "-m", "envcheck", "guard", "--interval", "0.1", "--out",
                           str(tmp_path / "run"), "--textfile", str(prom), "--", sys.executable, "-c",
                           "import time; time.sleep(0.5)"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in prom.iterdir()] == ["envcheck_guard.prom"]  # the temp files were renamed, not left
    text = (prom / "envcheck_guard.prom").read_text()
    assert "envcheck_guard_tree_rss_bytes" in text and "# TYPE envcheck_guard_ranks_gone_total counter" in text
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
