"""Every rule is documented like ruff's: stable code, kebab name, fixed sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eagle3lint.checks.base import DOC_SECTIONS
from eagle3lint.engines import rule_registry
from tests.helpers import FIXTURES, run_cli

REGISTRY = rule_registry()


def test_every_rule_has_code_name_and_all_sections() -> None:
    codes = set()
    for rule in REGISTRY:
        assert re.fullmatch(r"E3L\d{3}", rule.code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
        assert rule.code not in codes
        codes.add(rule.code)
        sections = rule.doc_sections()
        for title in DOC_SECTIONS:
            assert sections.get(title), f"{rule.code} lacks '## {title}'"
        assert rule.fix_safety in ("safe", "unsafe", "display-only")
        assert rule.severity in ("error", "warning", "info")


def test_rules_command_lists_every_code() -> None:
    done = run_cli("rules")
    assert done.returncode == 0
    for rule in REGISTRY:
        assert rule.code in done.stdout and rule.name in done.stdout


def test_explain_by_code_and_by_name(tmp_path: Path) -> None:
    # Outside any engine tree and configuration: every engine's part, each under its name.
    done = run_cli("explain", "E3L004", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("E3L004 (wrapper-delegation-gap)")
    assert "## Why is this bad? (SGLang)" in done.stdout and "Kimi-K2.5" in done.stdout
    assert "## Example (vLLM)" in done.stdout and "SupportsEagle3" in done.stdout
    assert run_cli("explain", "wrapper-delegation-gap", cwd=tmp_path).stdout == done.stdout
    missing = run_cli("explain", "E3L999")
    assert missing.returncode == 2 and "unknown rule" in missing.stderr


def test_explain_shows_the_engines_own_part() -> None:
    vllm = run_cli("explain", "E3L004", "--engine", "vllm").stdout
    assert "## Example (vLLM)" in vllm and "## Why is this bad? (vLLM)" in vllm
    assert "SGLang" not in vllm.split("## Why is this bad?")[1] and "Kimi-K2.5" not in vllm
    assert "set_eagle3_layers_to_capture" not in vllm and "supports_eagle3" in vllm
    sglang = run_cli("explain", "E3L004", "--engine", "sglang").stdout
    assert "Kimi-K2.5" in sglang and "## Example (SGLang)" in sglang and "(vLLM)" not in sglang
    # The engine tree the working directory is in.
    inside = FIXTURES / "fix_vllm_declare" / "before" / "vllm" / "model_executor" / "models"
    assert run_cli("explain", "E3L004", cwd=inside).stdout == vllm
    # A rule without engine parts reads the same for each.
    assert run_cli("explain", "E3L005", "--engine", "vllm").stdout == run_cli("explain", "E3L005", "--engine", "sglang").stdout


@pytest.mark.release
def test_explain_takes_the_engine_of_a_release() -> None:
    # A release names its engine (nothing is fetched); the two must agree.
    vllm = run_cli("explain", "E3L004", "--engine", "vllm").stdout
    assert run_cli("explain", "E3L004", "--release", "vllm==0.33.0").stdout == vllm
    clash = run_cli("explain", "E3L004", "--engine", "sglang", "--release", "vllm==0.33.0")
    assert clash.returncode == 2 and "contradicts" in clash.stderr


def test_engine_parts_of_a_section_count_as_the_section() -> None:
    rule = REGISTRY.by_code("E3L004")
    assert rule is not None
    assert rule.documented_engines() == {"sglang", "vllm"}
    every = rule.doc_sections()["Example"]
    assert every.startswith("SGLang:") and "vLLM:" in every
    assert "SupportsEagle3" not in rule.doc_sections("sglang")["Example"]


def test_the_light_code_table_matches_the_registry() -> None:
    from eagle3lint.engines import is_known_code
    from eagle3lint.engines import known_rule_codes as rule_codes

    RULE_CODES = rule_codes()

    assert {rule.code: rule.name for rule in REGISTRY} == RULE_CODES
    assert is_known_code("E3L0") and is_known_code("all") and not is_known_code("E9")
