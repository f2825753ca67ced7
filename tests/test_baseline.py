"""Baselines: record today's findings, then report only new ones, robust to line moves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def test_a_baseline_applies_to_the_tree_it_was_written_for_only(tmp_path: Path) -> None:
    # Issue 27, item 2: a fork's baseline hid another tree's findings (a release checked from
    # inside the fork); in SARIF they became accepted suppressions.
    fork, other = tmp_path / "fork", tmp_path / "other"
    shutil.copytree(FIXTURES / "sglang_basic", fork)
    shutil.copytree(FIXTURES / "sglang_basic", other)
    assert run_cli("check", ".", "--write-baseline", "base.json", cwd=fork).returncode == 0
    data = json.loads((fork / "base.json").read_text())
    assert data["trees"] == [{"engine": "sglang", "version": data["trees"][0]["version"], "tree": "sglang"}]
    (fork / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
    code, report = run_json("check", ".", cwd=fork)
    assert code == 0 and report["findings"] == [] and report["summary"]["baselined"] == BASIC_FINDINGS
    # The same findings in another tree, checked from inside the fork: reported, and said why.
    code, report = run_json("check", other, cwd=fork)
    assert code == 1 and len(report["findings"]) == BASIC_FINDINGS and report["summary"]["baselined"] == 0
    done = run_cli("check", other, cwd=fork)
    assert "warning: baseline base.json not applied to sglang" in done.stderr
    assert "it was written for sglang" in done.stderr and "(sglang)" in done.stderr
    sarif = json.loads(run_cli("check", other, "--format", "sarif", cwd=fork).stdout)
    assert all("suppressions" not in r for r in sarif["runs"][0]["results"])
    # A baseline goes with its checkout: the record is relative to the file.
    moved = tmp_path / "moved"
    shutil.copytree(fork, moved)
    assert run_json("check", ".", cwd=moved)[1]["findings"] == []


def test_an_old_baseline_without_a_tree_applies_to_the_working_directorys_tree_only(tmp_path: Path) -> None:
    fork, other = tmp_path / "fork", tmp_path / "other"
    shutil.copytree(FIXTURES / "sglang_basic", fork)
    shutil.copytree(FIXTURES / "sglang_basic", other)
    assert run_cli("check", ".", "--write-baseline", "base.json", cwd=fork).returncode == 0
    data = json.loads((fork / "base.json").read_text())
    del data["trees"]
    (fork / "base.json").write_text(json.dumps(data))
    assert run_json("check", ".", "--baseline", "base.json", cwd=fork)[1]["findings"] == []
    code, report = run_json("check", other, "--baseline", "base.json", cwd=fork)
    assert code == 1 and len(report["findings"]) == BASIC_FINDINGS
    assert "written by an older eagle3lint" in run_cli("check", other, "--baseline", "base.json", cwd=fork).stderr


def test_a_release_baseline_names_the_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3lint.common import cache_dir
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.settings.baseline import baseline_skipped, tree_record

    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    engine = discover_engine([tree / "sglang"])
    monkeypatch.setattr(cache_dir, "is_cached_release", lambda root: True)
    record = tree_record(engine, tmp_path)
    assert record == {"engine": "sglang", "version": engine.version, "release": f"sglang=={engine.version}"}
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"version": 1, "trees": [record], "findings": []}))
    assert baseline_skipped(base, engine) is None
    base.write_text(json.dumps({"version": 1, "trees": [{**record, "version": "0.0.1"}], "findings": []}))
    assert "written for sglang 0.0.1 (release)" in (baseline_skipped(base, engine) or "")
    monkeypatch.setattr(cache_dir, "is_cached_release", lambda root: False)
    assert baseline_skipped(base, engine) is not None  # a checkout is not the release


def test_models_reads_no_baseline_and_keeps_the_fix_column(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    plain = run_cli("models", "--format", "json", cwd=tree)
    assert run_cli("check", ".", "--write-baseline", "base.json", cwd=tree).returncode == 0
    (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
    with_baseline = run_cli("models", "--format", "json", cwd=tree)
    assert with_baseline.returncode == plain.returncode == 0, with_baseline.stderr
    assert json.loads(with_baseline.stdout) == json.loads(plain.stdout)
    assert any(row.get("fix") for row in json.loads(plain.stdout)["models"])
    assert run_cli("models", "--no-baseline", cwd=tree).returncode == 0
