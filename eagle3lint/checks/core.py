"""The rules every engine is checked with (codes are stable; see ``eagle3lint rules``)."""

from __future__ import annotations

from eagle3lint.checks.base import Rule
from eagle3lint.checks.capture import CAPTURE_RULES
from eagle3lint.checks.hygiene import HYGIENE_RULES
from eagle3lint.checks.presence import PRESENCE_RULES
from eagle3lint.checks.support import SUPPORT_RULES

CORE_RULES: tuple[type[Rule], ...] = (*PRESENCE_RULES, *CAPTURE_RULES, *SUPPORT_RULES, *HYGIENE_RULES)
