"""Fixes stored with a run's result: a warm ``--format json``/``full`` renders no diff, says
exactly what a cold run says, and is redone when anything the fixes were made from changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.fix import templates
from eagle3lint.run.runner import _result_key
from eagle3lint.settings.config import Settings
from tests.helpers import FIXTURES, run_cli

WRAPPER = "sglang/srt/models/wrapper_attr.py"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "t")
    (tmp_path / "t" / "pyproject.toml").write_text("[tool.eagle3lint]\n")  # the cache lies beside it
    return tmp_path / "t"


def entries(tree: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (tree / ".eagle3lint_cache").glob("*/*.pickle")}


def diffs(report: str) -> dict[tuple[str, str], str]:
    return {(f["class"], f["method"]): f["fix"]["diff"] for f in json.loads(report)["findings"] if f.get("fix")}


@pytest.mark.parametrize("output_format", ["json", "full"])
def test_a_warm_report_with_fixes_is_the_cold_one_and_renders_nothing(tree: Path, output_format: str) -> None:
    cold = run_cli("check", ".", "--format", output_format, "--no-cache", cwd=tree)
    first = run_cli("check", ".", "--format", output_format, cwd=tree)
    stored = entries(tree)
    warm = run_cli("check", ".", "--format", output_format, cwd=tree)
    # Nothing was rewritten: the warm run was answered from the stored result, fixes included.
    assert entries(tree) == stored
    assert cold.returncode == first.returncode == warm.returncode == 1
    assert cold.stdout == first.stdout == warm.stdout
    assert warm.stdout.count("+    def set_eagle3_layers_to_capture(") >= 4  # the diffs are there


def test_fixes_and_plain_results_are_stored_apart(tree: Path) -> None:
    plain = run_cli("check", ".", cwd=tree)
    with_fixes = run_cli("check", ".", "--format", "json", cwd=tree)
    assert "+    def " not in plain.stdout  # the concise report carries no fix
    stored = entries(tree)
    # Each is answered from its own entry: neither overwrote the other.
    assert run_cli("check", ".", cwd=tree).stdout == plain.stdout
    assert run_cli("check", ".", "--format", "json", cwd=tree).stdout == with_fixes.stdout
    assert entries(tree) == stored
    assert diffs(with_fixes.stdout)


def test_editing_a_file_redoes_its_stored_fix_diffs(tree: Path) -> None:
    before = run_cli("check", ".", "--format", "json", cwd=tree)
    run_cli("check", ".", "--format", "json", cwd=tree)
    # A comment on a line the diff shows as context: the findings stay the same, the diff does not.
    wrapper = tree / WRAPPER
    text = wrapper.read_text()
    assert "        return self.language_model(input_ids)\n" in text
    wrapper.write_text(text.replace("        return self.language_model(input_ids)\n", "        return self.language_model(input_ids)  # edited\n", 1))
    after = run_cli("check", ".", "--format", "json", cwd=tree)
    cold = run_cli("check", ".", "--format", "json", "--no-cache", cwd=tree)
    assert after.stdout == cold.stdout
    key = ("WrapperAttrForConditionalGeneration", "set_eagle3_layers_to_capture")
    assert "return self.language_model(input_ids)  # edited" in diffs(after.stdout)[key]
    assert diffs(before.stdout)[key] != diffs(after.stdout)[key]
    unchanged = {k: v for k, v in diffs(before.stdout).items() if k != key}
    assert unchanged == {k: v for k, v in diffs(after.stdout).items() if k != key}


def test_a_changed_template_changes_the_key_of_a_run_with_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(templates.rules_dir(), rules)
    monkeypatch.setattr(templates, "rules_dir", lambda: rules)
    engine = discover_engine([FIXTURES / "sglang_basic"])
    scope = [engine.root]

    def key(with_fixes: bool) -> str:
        return _result_key(engine, scope, Settings(), None, None, None, None, with_fixes)

    plain, fixes = key(False), key(True)
    assert plain != fixes
    template = sorted((rules / "templates" / "sglang").glob("*.toml"))[0]
    template.write_text(template.read_text() + "\n# a new comment\n")
    assert key(True) != fixes
    assert key(False) == plain  # a run without fixes does not depend on the templates
