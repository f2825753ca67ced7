"""All rules, in one registry (codes are stable; see ``eagle3lint rules``)."""

from __future__ import annotations

from eagle3lint.checks.base import Rule, RuleRegistry
from eagle3lint.checks.hygiene import HYGIENE_RULES
from eagle3lint.checks.presence import PRESENCE_RULES
from eagle3lint.checks.vllm_rules import VLLM_RULES

REGISTRY = RuleRegistry(rules=(*PRESENCE_RULES, *VLLM_RULES, *HYGIENE_RULES))

__all__ = ["REGISTRY", "Rule", "RuleRegistry"]
