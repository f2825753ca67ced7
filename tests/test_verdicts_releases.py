"""Verdicts on real releases: one per model, errors only on broken ones, fixes all or nothing,
and no suggestion that uses an attribute its class lacks."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import release_root, run_cli, run_json

pytestmark = pytest.mark.release

RELEASES = ("sglang==0.5.9", "sglang==0.5.23", "vllm==0.18.0", "vllm==0.33.0")


def _models(spec: str) -> dict[str, Any]:
    code, data = run_json("models", "--release", spec, "--format", "json")
    assert code == 0, data
    return data


@pytest.fixture(scope="module")
def matrices() -> dict[str, dict[str, Any]]:
    return {spec: _models(spec) for spec in RELEASES}


def _status(matrix: dict[str, Any], name: str) -> str:
    (status,) = {m["status"] for m in matrix["models"] if m["class"] == name and not m.get("variant")}
    return str(status)


@pytest.mark.parametrize("spec", RELEASES)
def test_every_checked_model_has_one_verdict_and_errors_only_where_broken(matrices: dict[str, dict[str, Any]], spec: str) -> None:
    matrix = matrices[spec]
    counts = Counter(m["status"] for m in matrix["models"])
    assert counts == {k: v for k, v in matrix["summary"]["by_status"].items() if v}
    # Most models with part of EAGLE-3 are refused clearly (incomplete); few really crash.
    assert counts["supported"] >= 25 and counts["not-implemented"] >= 50 and counts["broken"] + counts["incomplete"] >= 25 and counts["broken"] >= 1
    _, report = run_json("check", "--release", spec, "--format", "json")
    statuses = {(m["class"], m.get("variant")): m["status"] for m in report["models"] if m.get("status")}
    for finding in report["findings"]:
        status = statuses.get((finding["class"], finding.get("variant")))
        if finding["severity"] == "error" and status not in (None, "not-a-target"):
            # An error means broken: a crash or a silent failure under the run's options.
            assert status == "broken" and finding["outcome"] in ("crash", "silent"), finding["message"]
        if status == "incomplete":
            assert finding["severity"] != "error", finding["message"]
        if finding["code"] == "E3L020":
            assert status == "not-implemented" and finding["severity"] == "info"
    # No model without EAGLE-3 code is an error any more; each is one information finding.
    not_implemented = {k for k, v in statuses.items() if v == "not-implemented"}
    e3l020 = Counter((f["class"], f.get("variant")) for f in report["findings"] if f["code"] == "E3L020")
    assert set(e3l020) == not_implemented and set(e3l020.values()) == {1}


@pytest.mark.parametrize("spec", RELEASES)
def test_flagship_models(matrices: dict[str, dict[str, Any]], spec: str) -> None:
    matrix = matrices[spec]
    assert _status(matrix, "LlamaForCausalLM") == "supported"
    if spec.startswith("sglang"):
        assert _status(matrix, "GraniteForCausalLM") == "not-implemented"


def test_granite_alone_is_one_information_finding_and_exits_0() -> None:
    code, data = run_json("check", "--release", "sglang==0.5.9", "sglang/srt/models/granite.py")
    assert code == 0
    assert [(f["code"], f["severity"], f["class"]) for f in data["findings"]] == [("E3L020", "info", "GraniteForCausalLM")]
    assert "AttributeError at start-up" in data["findings"][0]["message"]
    failing = run_cli("check", "--release", "sglang==0.5.9", "sglang/srt/models/granite.py", "--fail-on", "info")
    assert failing.returncode == 1


def test_kimi_k25_is_broken_with_a_safe_fix_and_supported_after_it(matrices: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    (kimi,) = [m for m in matrices["sglang==0.5.9"]["models"] if m["class"] == "KimiK25ForConditionalGeneration"]
    assert (kimi["status"], kimi["codes"], kimi["fix"]) == ("broken", ["E3L004"], {"applicability": "safe"})
    copy = tmp_path / "sglang"
    shutil.copytree(release_root("sglang==0.5.9"), copy)
    model = copy / "srt/models/kimi_k25.py"
    assert run_cli("fix", "--apply", "--no-cache", model).returncode == 0
    code, after = run_json("models", "--no-cache", "--format", "json", model)
    assert code == 0
    assert {m["class"]: m["status"] for m in after["models"]}["KimiK25ForConditionalGeneration"] == "supported"


def test_deepseek_vl2_gets_a_guarded_delegation(matrices: dict[str, dict[str, Any]]) -> None:
    _, report = run_json("check", "--release", "sglang==0.5.9", "sglang/srt/models/deepseek_vl2.py", "--format", "json")
    (finding,) = [f for f in report["findings"] if f["class"] == "DeepseekVL2ForCausalLM"]
    assert finding["code"] == "E3L004"
    assert "`DeepseekV2ForCausalLM` has them" in finding["message"] and "`DeepseekForCausalLM` does not" in finding["message"]
    fix = finding["fix"]
    assert fix["applicability"] == "unsafe" and "guarded" in fix["description"]
    assert 'if not hasattr(self.language_model, "set_eagle3_layers_to_capture"):' in fix["diff"]
    assert "raise ValueError(" in fix["diff"]


def test_fix_apply_on_the_whole_059_models_folder_is_all_or_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "sglang"
    shutil.copytree(release_root("sglang==0.5.9"), copy)
    _, before = run_json("models", "--no-cache", "--format", "json", copy / "srt/models")
    done = run_cli("fix", "--apply", "--no-cache", copy / "srt/models")
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    _, after = run_json("models", "--no-cache", "--format", "json", copy / "srt/models")
    was = {(m["class"], m["path"]): m["status"] for m in before["models"]}
    now = {(m["class"], m["path"]): m["status"] for m in after["models"]}
    assert was.keys() == now.keys()
    changed = {key: (was[key], now[key]) for key in was if was[key] != now[key]}
    # Every model a fix touched became supported; none went from not-implemented to broken.
    assert changed and all(new == "supported" for _, new in changed.values()), changed
    assert not [k for k, (old, new) in changed.items() if old == "not-implemented"]


# ---- every suggestion resolves ------------------------------------------------------------------

_SELF = re.compile(r"\bself\.(\w+)(?:\.(\w+))?")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def _added_lines(diff: str) -> dict[str, list[tuple[int, str]]]:
    """The added lines of a unified diff, with their line numbers in the new file, by file."""
    out: dict[str, list[tuple[int, str]]] = {}
    current, line = "", 0
    for text in diff.splitlines():
        if text.startswith("+++ "):
            current = text[4:].strip().removeprefix("b/")
        elif (hunk := _HUNK.match(text)) is not None:
            line = int(hunk.group(1))
        elif text.startswith("+"):
            out.setdefault(current, []).append((line, text[1:]))
            line += 1
        elif not text.startswith("-") and not text.startswith("---"):
            line += 1
    return out


def _reads(code: str) -> list[tuple[str, ...]]:
    """``self.x`` / ``self.x.y`` read on one line of code (an assignment's target is not)."""
    code = code.split("#", 1)[0]
    found = []
    for match in _SELF.finditer(code):
        tail = code[match.end() :].lstrip()
        if tail.startswith("=") and not tail.startswith("=="):
            continue
        found.append(tuple(g for g in match.groups() if g))
    return found


def _class_at(tree: ast.Module, line: int) -> ast.ClassDef | None:
    inner = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if inner is None or node.lineno >= inner.lineno:
                inner = node
    return inner


@pytest.mark.parametrize("spec", ["sglang==0.5.9", "sglang==0.5.23", "vllm==0.33.0"])
def test_every_displayed_diff_applied_leaves_no_reference_to_a_missing_attribute(spec: str, tmp_path: Path) -> None:
    from eagle3lint.engines import fix_patterns_for
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.fix.attach import attach_fixes
    from eagle3lint.run.fix_recheck import recheck
    from eagle3lint.run.runner import run_check
    from eagle3lint.source.index import ClassRef

    root = release_root(spec)
    engine = discover_engine([], engine_root=root)
    result = run_check(engine, [root], use_cache=False, need_index=True)
    attach_fixes(result, tuple(fix_patterns_for(engine.name)), [root])
    diffs = [f.fix.diff for f in result.findings if f.fix is not None and f.fix.diff]
    assert len(diffs) >= 10, "too few fix diffs to check"
    problems = []
    for n, diff in enumerate(diffs):
        work = tmp_path / str(n)
        files = re.findall(r"^\+\+\+ b/(\S+)$", diff, re.M)
        for name in files:
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root.parent / name, work / name)
        patched = subprocess.run(["patch", "-p1", "--quiet"], input=diff, text=True, cwd=work, capture_output=True)
        assert patched.returncode == 0, patched.stdout + patched.stderr
        changed = {str(root.parent / name): (work / name).read_text() for name in files}
        # The patched tree, indexed as the check would index it.
        after = recheck(result, changed, {}, [root], None, None)
        assert after.index is not None
        for name, lines in _added_lines(diff).items():
            path = root.parent / name
            tree = ast.parse(changed[str(path)])
            module = after.index.request_for(path).module
            for line, code in lines:
                cls = _class_at(tree, line)
                if cls is None:
                    continue
                ref = ClassRef(module, cls.name)
                for chain in _reads(code):
                    if after.index.lookup(ref, chain[0]).status == "missing":
                        problems.append(f"{name}:{line}: `{cls.name}` has no `self.{chain[0]}`")
    assert problems == []
