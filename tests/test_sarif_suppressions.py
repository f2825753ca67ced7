"""SARIF carries what a run does not report: a finding a suppression comment silences, as a
result with an accepted ``inSource`` suppression; one the baseline holds, with an accepted
``external`` suppression and ``baselineState: "unchanged"``; the reported ones are ``"new"``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema

from tests.helpers import BASIC_FINDINGS, FIXTURES, run_cli, run_json

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
NEW_MODEL = (
    "from torch import nn\n\nclass NewForCausalLM(nn.Module):\n    def __init__(self):\n"
    "        self.lm_head = None\n        self.capture_aux_hidden_states = False\n\nEntryClass = NewForCausalLM\n"
)


def _sarif(*args: str | Path, cwd: Path) -> tuple[int, dict[str, Any]]:
    done = run_cli("check", *args, "--format", "sarif", cwd=cwd)
    log: dict[str, Any] = json.loads(done.stdout)
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(log)
    return done.returncode, log


def test_suppressed_and_baselined_findings_are_carried_as_suppressed_results(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    assert run_cli("check", ".", "--write-baseline", "base.json", cwd=tree).returncode == 0
    missing = tree / "sglang/srt/models/missing.py"
    missing.write_text(missing.read_text().replace("class MissingForCausalLM(nn.Module):", "class MissingForCausalLM(nn.Module):  # noqa: E3L001"))
    (tree / "sglang/srt/models/new_model.py").write_text(NEW_MODEL)

    code, log = _sarif(".", "--baseline", "base.json", cwd=tree)
    assert code == 1  # the new model's finding; the carried ones do not fail the run
    results = log["runs"][0]["results"]
    reported = [r for r in results if "suppressions" not in r]
    assert {r["properties"]["class"] for r in reported} == {"NewForCausalLM"}
    assert all(r["baselineState"] == "new" for r in reported)
    in_source = [r for r in results if r.get("suppressions", [{}])[0].get("kind") == "inSource"]
    assert [(r["properties"]["class"], r["ruleId"]) for r in in_source] == [("MissingForCausalLM", "E3L001")]
    assert in_source[0]["suppressions"][0]["status"] == "accepted" and "baselineState" not in in_source[0]
    external = [r for r in results if r.get("suppressions", [{}])[0].get("kind") == "external"]
    assert all(r["suppressions"][0]["status"] == "accepted" and r["baselineState"] == "unchanged" for r in external)
    assert all("base.json" in r["suppressions"][0]["justification"] for r in external)
    # What the JSON summary counts is what SARIF carries.
    _, report = run_json("check", ".", "--baseline", "base.json", cwd=tree)
    assert len(external) == report["summary"]["baselined"] == BASIC_FINDINGS - 1
    assert len(in_source) == report["summary"]["suppressed"] == 1


def test_without_a_baseline_no_result_has_a_baseline_state(tmp_path: Path) -> None:
    _, log = _sarif(FIXTURES / "sglang_basic", cwd=tmp_path)
    results = log["runs"][0]["results"]
    assert len(results) == BASIC_FINDINGS
    assert not any("baselineState" in r or "suppressions" in r for r in results)
