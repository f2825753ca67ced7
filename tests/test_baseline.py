"""Baselines: record today's findings, then report only new ones, robust to line moves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import BASIC_FINDINGS, FIXTURES, run_cli, run_json


def test_baseline_round_trip(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    baseline = tmp_path / "eagle3lint-baseline.json"
    done = run_cli("check", tree, "--write-baseline", baseline)
    assert done.returncode == 0
    data = json.loads(baseline.read_text())
    assert data["version"] == 1 and len(data["findings"]) == BASIC_FINDINGS
    assert all("line" not in entry for entry in data["findings"])
    assert data["findings"][0]["path"].startswith("sglang/")

    code, report = run_json("check", tree, "--baseline", baseline)
    assert code == 0 and report["findings"] == []

    # Edits elsewhere move every line; the baseline still matches.
    missing = tree / "sglang/srt/models/missing.py"
    missing.write_text("# a new header comment\n\n\n" + missing.read_text())
    code, report = run_json("check", tree, "--baseline", baseline)
    assert code == 0 and report["findings"] == []

    # A new model with a gap is reported.
    (tree / "sglang/srt/models/new_model.py").write_text(
        "from torch import nn\n\nclass NewForCausalLM(nn.Module):\n    def __init__(self):\n        self.lm_head = None\n\nEntryClass = NewForCausalLM\n"
    )
    code, report = run_json("check", tree, "--baseline", baseline)
    assert code == 1
    assert {f["class"] for f in report["findings"]} == {"NewForCausalLM"}


def test_baseline_from_config_and_bad_baseline(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    run_cli("check", ".", "--write-baseline", "base.json", cwd=tree)
    (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
    code, report = run_json("check", ".", cwd=tree)
    assert code == 0 and report["findings"] == []
    (tree / "base.json").write_text("{not json")
    done = run_cli("check", ".", cwd=tree)
    assert done.returncode == 2 and "not a readable eagle3lint baseline" in done.stderr
