"""Output formats: full, sarif (validated against the official 2.1.0 schema) and github."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eagle3lint.common.findings import Finding, Fix, Related
from eagle3lint.engines import rule_registry
from eagle3lint.report.full import SourceLines, write_finding
from eagle3lint.report.github import escape_data, escape_property, workflow_command, write_github
from eagle3lint.run.runner import CheckResult
from tests.helpers import (
    BASIC_ERRORS,
    BASIC_FINDINGS,
    BASIC_INFOS,
    BASIC_MODELS_CHECKED,
    FIXTURES,
    REPO,
    read_from,
    run_cli,
    run_json,
)

REGISTRY = rule_registry()

TREE = FIXTURES / "sglang_basic"
SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())
MISSING = "sglang/srt/models/missing.py"


def run_sarif(*args: str | Path, cwd: Path | None = None) -> dict[str, Any]:
    # From another working directory the checkout must still be importable.
    env = {**os.environ, "PYTHONPATH": str(REPO)} if cwd is not None else None
    done = run_cli("check", *args, "--format", "sarif", cwd=cwd, env=env)
    assert done.returncode in (1, 2) and done.stdout, done.stderr
    log: dict[str, Any] = json.loads(done.stdout)
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(log)
    return log


def fingerprints(log: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    out = {}
    for result in log["runs"][0]["results"]:
        key = (result["ruleId"], result["properties"]["qualname"], result["properties"]["member"])
        assert key not in out
        out[key] = result["partialFingerprints"]["eagle3lint/v1"]
    return out


def primary_uri(result: dict[str, Any]) -> str:
    uri: str = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    return uri


@pytest.fixture(scope="module")
def sarif() -> dict[str, Any]:
    return run_sarif(TREE)


@pytest.fixture(scope="module")
def fixture_result() -> CheckResult:
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.run.runner import run_check

    return run_check(discover_engine([TREE]), [TREE], workers=1)


# --- full -------------------------------------------------------------------------------------


def test_full_shows_source_line_and_engine_call_sites() -> None:
    done = run_cli("check", TREE / MISSING, "--format", "full")
    assert done.returncode == 1, done.stderr
    blocks = done.stdout.split("\n\n")
    first = blocks[0]
    assert f"{MISSING}:4:1: E3L001 error: `MissingForCausalLM` lacks" in first
    assert "4 | class MissingForCausalLM(nn.Module):" in first
    assert "  | ^ E3L001" in first
    assert "= engine call sites:" in first
    assert "sglang/srt/speculative/eagle_worker.py:9: self.target_worker.model_runner.model.get_embed_and_head" in first
    assert "= help: missing-target-method; `eagle3lint explain E3L001`" in first
    # The fixer's suggestion travels with the finding, with its applicability; the class keeps no
    # `self.model` for the setter's code to use, so it is said in words, never shown as code.
    assert "= fix (display-only): add `set_eagle3_layers_to_capture`" in done.stdout
    assert "the code would use `self.model`, which `MissingForCausalLM` does not have" in done.stdout
    assert "+    def set_eagle3_layers_to_capture(" not in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith(f"{read_from('sglang 0.0.1+fixture', TREE / 'sglang')}: 1 error")


def test_full_shows_the_fix_diff_when_the_finding_has_one(tmp_path: Path) -> None:
    model = tmp_path / "m.py"
    model.write_text("import torch\n\n\nclass M:\n    pass\n")
    diff = "--- a/m.py\n+++ b/m.py\n@@ -4,2 +4,4 @@\n class M:\n-    pass\n+    def get_embed_and_head(self):\n+        return self.embed, self.head\n"
    finding = Finding(
        code="E3L001", rule="missing-target-method", severity="error", path=str(model), line=4,
        column=1, class_name="M", qualname="pkg.m.M", method="get_embed_and_head", message="`M` lacks it",
        related=[Related(str(tmp_path / "runner.py"), 12, "self.model.get_embed_and_head in Runner.init")],
        fix=Fix("unsafe", "add `get_embed_and_head` returning the embedding and the LM head", diff),
    )
    out = io.StringIO()
    write_finding(finding, out, SourceLines(), tmp_path)
    text = out.getvalue()
    assert "= fix (unsafe): add `get_embed_and_head` returning the embedding and the LM head" in text
    for line in diff.splitlines():
        assert f"      {line}\n" in text
    assert "runner.py:12: self.model.get_embed_and_head in Runner.init" in text
    assert "4 | class M:" in text


# --- sarif ------------------------------------------------------------------------------------


def test_sarif_driver_rules_come_from_the_rule_docs(sarif: dict[str, Any]) -> None:
    assert sarif["version"] == "2.1.0"
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "eagle3lint"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", driver["version"])
    assert driver["informationUri"].startswith("https://")
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert list(rules) == [r.code for r in REGISTRY]
    for rule in REGISTRY:
        descriptor = rules[rule.code]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary()
        # The run's engine's part of the docs (the fixture is an SGLang tree).
        assert descriptor["help"]["markdown"] == rule.documentation("sglang")
        assert "## What it does" in descriptor["help"]["markdown"]
        assert rule.doc_sections("sglang")["Why is this bad?"] in descriptor["fullDescription"]["text"]
        assert "## Example (vLLM)" not in descriptor["help"]["markdown"]
        expected_level = {"error": "error", "warning": "warning", "info": "note"}[rule.severity]
        assert descriptor["defaultConfiguration"]["level"] == expected_level


def test_sarif_results_match_the_findings(sarif: dict[str, Any]) -> None:
    _code, report = run_json("check", TREE)
    run = sarif["runs"][0]
    results = run["results"]
    assert len(results) == len(report["findings"]) == BASIC_FINDINGS
    codes = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result, finding in zip(results, report["findings"], strict=True):
        assert result["ruleId"] == finding["code"] == codes[result["ruleIndex"]]
        assert result["level"] == {"error": "error", "warning": "warning", "info": "note"}[finding["severity"]]
        assert result["message"]["text"] == finding["message"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (finding["line"], finding["column"])
        related = [(loc["physicalLocation"]["region"]["startLine"], loc["message"]["text"]) for loc in result.get("relatedLocations", [])]
        assert related == [(r["line"], r["message"]) for r in finding["related"]]
    assert run["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_sarif_uris_are_relative_to_the_repository(sarif: dict[str, Any]) -> None:
    run = sarif["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == REPO.resolve().as_uri() + "/"
    missing = [r for r in run["results"] if r["properties"]["class"] == "MissingForCausalLM"]
    assert len(missing) == 1  # one cause, one finding: both members it lacks
    location = missing[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": f"fixtures/sglang_basic/{MISSING}", "uriBaseId": "%SRCROOT%"}
    related = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in missing for loc in r["relatedLocations"]}
    assert "fixtures/sglang_basic/sglang/srt/model_executor/model_runner.py" in related
    for result in run["results"]:
        for loc in [*result["locations"], *result["relatedLocations"]]:
            artifact = loc["physicalLocation"]["artifactLocation"]
            assert artifact["uriBaseId"] == "%SRCROOT%" and not artifact["uri"].startswith(("/", "file:"))


def test_sarif_uris_outside_git_are_relative_to_cwd_or_source_root(tmp_path: Path) -> None:
    tree = tmp_path / "work"
    shutil.copytree(TREE, tree)
    from_inside = run_sarif(tree / "sglang/srt/models", cwd=tree)["runs"][0]
    assert from_inside["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tree.resolve().as_uri() + "/"
    assert f"{MISSING}" in {primary_uri(r) for r in from_inside["results"]}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    from_outside = run_sarif(tree / "sglang/srt/models", cwd=elsewhere)["runs"][0]
    assert from_outside["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tree.resolve().as_uri() + "/"
    assert {primary_uri(r) for r in from_outside["results"]} == {primary_uri(r) for r in from_inside["results"]}


def test_sarif_uris_inside_a_git_checkout_are_relative_to_its_top(tmp_path: Path) -> None:
    repo = tmp_path / "fork"
    shutil.copytree(TREE / "sglang", repo / "python/sglang")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = run_sarif(repo / "python/sglang", cwd=elsewhere)["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    assert f"python/{MISSING}" in {primary_uri(r) for r in run["results"]}


def test_sarif_fingerprints_are_stable_across_runs_and_line_shifts(sarif: dict[str, Any], tmp_path: Path) -> None:
    again = run_sarif(TREE)
    assert fingerprints(again) == fingerprints(sarif)
    assert len(set(fingerprints(sarif).values())) == BASIC_FINDINGS

    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    before = run_sarif(tree)
    model = tree / MISSING
    model.write_text("# one\n# two\n# three\n\n" + model.read_text())
    after = run_sarif(tree)
    assert fingerprints(after) == fingerprints(before) == fingerprints(sarif)

    def class_lines(log: dict[str, Any]) -> list[int]:
        results = log["runs"][0]["results"]
        return [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results if primary_uri(r) == MISSING]

    assert class_lines(before) == [4] and class_lines(after) == [8]


def test_sarif_reports_unreadable_files_as_notifications(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    (tree / "sglang/srt/models/broken.py").write_text("class Broken(:\n")
    log = run_sarif(tree)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "syntax error" in note["message"]["text"]
    assert primary_uri(note) == "sglang/srt/models/broken.py"
    assert len(log["runs"][0]["results"]) == BASIC_FINDINGS


# --- github -----------------------------------------------------------------------------------


def test_escaping_follows_the_actions_toolkit() -> None:
    raw = "100% done\r\nnext: a,b"
    assert escape_data(raw) == "100%25 done%0D%0Anext: a,b"
    assert escape_property(raw) == "100%25 done%0D%0Anext%3A a%2Cb"
    assert escape_data("%0A") == "%250A"  # already-escaped text is escaped again, not passed through
    command = workflow_command("warning", {"file": "a,b:c.py", "line": 3, "title": "X: y, z"}, "m: 1%\nn")
    assert command == "::warning file=a%2Cb%3Ac.py,line=3,title=X%3A y%2C z::m: 1%25%0An"


def unescape(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_annotations_for_the_fixture() -> None:
    done = run_cli("check", TREE, "--format", "github")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == (
        f"{read_from('sglang 0.0.1+fixture', TREE / 'sglang')}: {BASIC_ERRORS} errors, {BASIC_INFOS} infos "
        f"({BASIC_MODELS_CHECKED} model classes checked)"
    )
    commands = [re.fullmatch(r"::(\w+) (.*?)::(.*)", line) for line in lines[:-1]]
    assert len(commands) == BASIC_FINDINGS and all(commands)
    _code, report = run_json("check", TREE)
    by_key = {(f["path"], f["line"], f["code"], f["message"]): f for f in report["findings"]}
    for match in commands:
        assert match is not None
        command, props, data = match.groups()
        properties = dict(pair.split("=", 1) for pair in props.split(","))
        assert list(properties) == ["file", "line", "col", "title"]
        assert properties["file"].startswith("fixtures/sglang_basic/sglang/")
        message = unescape(data)
        assert "\n" not in data and "%0A" in data  # the call sites are on their own lines
        head, _, sites = message.partition("\nEngine call sites:\n")
        finding = by_key[(str(REPO / properties["file"]), int(properties["line"]), unescape(properties["title"]).split()[0], head)]
        assert unescape(properties["title"]) == f"{finding['code']} {finding['rule']}"
        assert int(properties["col"]) == finding["column"]
        assert len(sites.splitlines()) == len(finding["related"])
        assert command == {"error": "error", "warning": "warning", "info": "notice"}[finding["severity"]]


def test_github_orders_most_severe_first(fixture_result: CheckResult) -> None:
    findings = fixture_result.findings[:3]
    severities = ["info", "warning", "error"]
    shuffled = [dataclasses.replace(f, severity=s) for f, s in zip(findings, severities, strict=True)]
    out = io.StringIO()
    write_github(dataclasses.replace(fixture_result, findings=shuffled), out, False)
    lines = out.getvalue().splitlines()
    assert [line.split(" ", 1)[0] for line in lines[:3]] == ["::error", "::warning", "::notice"]
    assert lines[3].startswith(f"{read_from('sglang 0.0.1+fixture', fixture_result.engine.root)}: 1 error, 1 warning, 1 info")


def test_json_summary_counts_the_models_the_concise_line_counts() -> None:
    _code, report = run_json("check", TREE)
    assert report["summary"]["models_checked"] == BASIC_MODELS_CHECKED
    concise = run_cli("check", TREE).stdout.splitlines()[-2]  # the last: the fix hint ([*] N fixable)
    assert f"({BASIC_MODELS_CHECKED} model classes checked)" in concise
    # "models" stays what it was: every class discovered, "other" kinds included.
    assert report["summary"]["models"] == len(report["models"]) >= report["summary"]["models_checked"]
