"""Placeholder."""

from __future__ import annotations

from typing import Any


def implementation_refusal(index: Any, reader: Any, analysis: Any, model: Any) -> str | None:
    return "no fix implements EAGLE-3 for this engine"
