"""The settings a command runs with: ``config.load_settings`` against what this build knows (its
engines, every rule code, the output formats)."""

from __future__ import annotations

from pathlib import Path

from eagle3lint.settings.config import Settings, Vocabulary, load_settings


def vocabulary() -> Vocabulary:
    from eagle3lint.engines import ENGINE_NAMES, known_rule_codes
    from eagle3lint.report import FORMATS

    return Vocabulary(ENGINE_NAMES, known_rule_codes(), tuple(FORMATS))


def load(config: Path | None = None, start: Path | None = None) -> Settings:
    """Settings from ``--config``, else the nearest pyproject.toml, else defaults."""
    return load_settings(vocabulary(), config, start)
