"""Every rule is documented like ruff's: stable code, kebab name, fixed sections."""

from __future__ import annotations

import re

from eagle3lint.checks.base import DOC_SECTIONS
from eagle3lint.engines import rule_registry
from tests.helpers import run_cli

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


def test_explain_by_code_and_by_name() -> None:
    done = run_cli("explain", "E3L004")
    assert done.returncode == 0
    assert done.stdout.startswith("E3L004 (wrapper-delegation-gap)")
    assert "## Why is this bad?" in done.stdout and "Kimi-K2.5" in done.stdout
    assert run_cli("explain", "wrapper-delegation-gap").stdout == done.stdout
    missing = run_cli("explain", "E3L999")
    assert missing.returncode == 2 and "unknown rule" in missing.stderr


def test_the_light_code_table_matches_the_registry() -> None:
    from eagle3lint.engines import is_known_code
    from eagle3lint.engines import known_rule_codes as rule_codes

    RULE_CODES = rule_codes()

    assert {rule.code: rule.name for rule in REGISTRY} == RULE_CODES
    assert is_known_code("E3L0") and is_known_code("all") and not is_known_code("E9")
