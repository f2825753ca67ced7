"""What pre-flight reads and says: a model folder's ``config.json`` sizes, and the items of its
report (each says whether it will crash the server or silently lower acceptance)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.findings import Finding

OK, PROBLEM, NOTE, SKIPPED = "ok", "problem", "note", "skipped"
CRASH, ACCEPTANCE = "crash", "acceptance"

# Multimodal configs keep the language model's sizes in a nested config.
_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


@dataclass
class PreflightItem:
    check: str
    status: str  # ok | problem | note | skipped
    message: str
    impact: str | None = None  # crash | acceptance (problems only)
    rule: str | None = None
    path: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "impact": self.impact,
            "message": self.message,
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
        }


@dataclass
class ModelConfig:
    """The sizes pre-flight compares, from one model folder's config.json."""

    path: str
    architecture: str | None
    hidden_size: int | None
    vocab_size: int | None
    num_hidden_layers: int | None
    raw: dict[str, Any] = field(repr=False)
    sizes_from: str = ""  # "" (top level) or the nested key, e.g. "text_config"

    def get(self, dotted: str) -> Any:
        value: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "architecture": self.architecture,
            "hidden_size": self.hidden_size,
            "vocab_size": self.vocab_size,
            "num_hidden_layers": self.num_hidden_layers,
            "sizes_from": self.sizes_from or None,
        }


@dataclass
class PreflightResult:
    items: list[PreflightItem] = field(default_factory=list)
    target: ModelConfig | None = None
    drafter: ModelConfig | None = None
    aux_layer_ids: list[int] | None = None
    target_findings: list[Finding] = field(default_factory=list)
    target_class_path: str | None = None

    def add(self, check: str, status: str, message: str, impact: str | None = None, **extra: Any) -> None:
        self.items.append(PreflightItem(check, status, message, impact, **extra))

    @property
    def predicts_crash(self) -> bool:
        return any(i.status == PROBLEM and i.impact == CRASH for i in self.items)

    @property
    def problems(self) -> list[PreflightItem]:
        return [i for i in self.items if i.status == PROBLEM]


class ConfigError(Exception):
    pass


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_model_config(path: str) -> ModelConfig:
    folder = Path(path)
    config_path = folder / "config.json"
    try:
        raw = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{config_path}: no such file (is {path} a model folder?)") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{config_path}: not readable JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{config_path}: not a JSON object")
    sizes, sizes_from = raw, ""
    for key in _TEXT_CONFIG_KEYS:
        nested = raw.get(key)
        if isinstance(nested, dict) and "hidden_size" in nested:
            sizes, sizes_from = nested, key
            break
    architectures = raw.get("architectures")
    architecture = architectures[0] if isinstance(architectures, list) and architectures and isinstance(architectures[0], str) else None
    return ModelConfig(
        path=path,
        architecture=architecture,
        hidden_size=as_int(sizes.get("hidden_size", raw.get("hidden_size"))),
        vocab_size=as_int(sizes.get("vocab_size", raw.get("vocab_size"))),
        num_hidden_layers=as_int(sizes.get("num_hidden_layers", raw.get("num_hidden_layers"))),
        raw=raw,
        sizes_from=sizes_from,
    )
