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

    # A new model without EAGLE-3 code is information (exit 0); one with a gap in it is an error.
    (tree / "sglang/srt/models/plain_model.py").write_text(
        "from torch import nn\n\nclass PlainNewForCausalLM(nn.Module):\n    def __init__(self):\n        self.lm_head = None\n\nEntryClass = PlainNewForCausalLM\n"
    )
    code, report = run_json("check", tree, "--baseline", baseline)
    assert code == 0 and [(f["class"], f["code"]) for f in report["findings"]] == [("PlainNewForCausalLM", "E3L020")]
    (tree / "sglang/srt/models/plain_model.py").unlink()
    (tree / "sglang/srt/models/new_model.py").write_text(
        "from torch import nn\n\nclass NewForCausalLM(nn.Module):\n    def __init__(self):\n        self.lm_head = None\n        self.capture_aux_hidden_states = False\n\nEntryClass = NewForCausalLM\n"
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


def test_summary_counts_what_the_baseline_hides(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    baseline = tmp_path / "base.json"
    assert run_cli("check", tree, "--write-baseline", baseline).returncode == 0
    (tree / "sglang/srt/models/new_model.py").write_text(
        "from torch import nn\n\nclass NewForCausalLM(nn.Module):\n    def __init__(self):\n        self.lm_head = None\n        self.capture_aux_hidden_states = False\n\nEntryClass = NewForCausalLM\n"
    )
    code, report = run_json("check", tree, "--baseline", baseline)
    assert code == 1
    assert report["summary"]["baselined"] == BASIC_FINDINGS
    assert report["summary"]["suppressed"] == 0
    assert report["summary"]["findings"] == len(report["findings"])
    # The human summary says how many findings the baseline hid, and nothing about suppressions.
    for output_format in ("concise", "full", "github"):
        done = run_cli("check", tree, "--baseline", baseline, "--format", output_format)
        last = done.stdout.splitlines()[-1]
        assert f"({BASIC_FINDINGS} in the baseline; " in last, last
        assert "suppressed" not in last
    # Without the baseline nothing is hidden, and the summary does not mention it.
    plain = run_cli("check", tree).stdout.splitlines()[-1]
    assert "baseline" not in plain and "suppressed" not in plain
