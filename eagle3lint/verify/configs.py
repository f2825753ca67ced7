"""What pre-flight reads and says: a model folder's ``config.json`` sizes (each value checked: the
file is untrusted input), and the items of its report (each says whether it will crash the server
or silently lower acceptance)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.common.findings import Finding
from eagle3lint.verify.model_files import (
    ModelFileError,
    OutsideFolder,
    as_size,
    describe,
    read_model_json,
)

OK, PROBLEM, NOTE, SKIPPED = "ok", "problem", "note", "skipped"
# Relevant, and not decidable from what could be read: the item says what would decide it.
UNKNOWN = "unknown"
# What a problem does at launch: a crash, lower acceptance (a silent failure), or the engine's own
# clear refusal (EAGLE-3 never runs; launching is as pointless as for a crash).
CRASH, ACCEPTANCE, REFUSED = "crash", "acceptance", "refused"

# Multimodal configs keep the language model's sizes in a nested config.
_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


# What each impact means as a launch outcome (``eagle3lint.common.outcomes``).
IMPACT_OUTCOMES = {CRASH: "crash", ACCEPTANCE: "silent", REFUSED: "refused"}


@dataclass
class PreflightItem:
    check: str
    status: str  # ok | problem | note | skipped | unknown
    message: str
    impact: str | None = None  # crash | acceptance | refused (problems only)
    rule: str | None = None
    path: str | None = None
    line: int | None = None
    # What the item rests on: {"kind": config | tensor | release | option | reference,
    # "where": "config.json: eagle_config.x" / a file / a tensor name, "line", "what"}.
    evidence: list[dict[str, Any]] = field(default_factory=list)
    # For an unknown (or a skipped item that matters): what would decide it.
    decides: str = ""
    # When in the launch it acts (``eagle3lint.common.outcomes`` stages); None: the check's usual stage.
    stage: float | None = None
    # The layer-id item's rows: each drafter id, what it was trained on, what it reads.
    layers: list[dict[str, Any]] | None = None
    # An explicit outcome for an item whose status alone does not say it (a skipped config).
    forced_outcome: str | None = None

    @property
    def outcome(self) -> str | None:
        """works / crash / silent / refused / unknown; None for an item that decides nothing."""
        if self.forced_outcome is not None:
            return self.forced_outcome
        if self.status == OK:
            return "works"
        if self.status == PROBLEM:
            return IMPACT_OUTCOMES.get(self.impact or "", "unknown")
        if self.status == UNKNOWN:
            return "unknown"
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "check": self.check,
            "status": self.status,
            "outcome": self.outcome,
            "impact": self.impact,
            "message": self.message,
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "evidence": self.evidence,
            "decides": self.decides or None,
        }
        if self.layers is not None:
            out["layers"] = self.layers
        return out


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
    # A drafter's sizes of its own, where it declares them (top level only).
    target_hidden_size: int | None = None
    draft_vocab_size: int | None = None
    # Keys present with a value that cannot be what they name ("`hidden_size` is 1e400, ...").
    invalid: tuple[str, ...] = ()

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
    # The launch the pair pre-flight assumed (its JSON), and the release it read.
    launch: dict[str, Any] = field(default_factory=dict)

    def add(self, check: str, status: str, message: str, impact: str | None = None, **extra: Any) -> None:
        self.items.append(PreflightItem(check, status, message, impact, **extra))

    @property
    def outcome(self) -> str:
        """The one answer: the earliest failure of the launch, else unknown where anything that
        matters could not be decided, else works (``eagle3lint.verify.pair.outcome``)."""
        from eagle3lint.verify.pair.outcome import fold

        return fold(self.items)[0]

    @property
    def outcome_reason(self) -> str:
        from eagle3lint.verify.pair.outcome import fold

        return fold(self.items)[1]

    @property
    def predicts_crash(self) -> bool:
        """The launch cannot serve EAGLE-3: a crash, or the engine's refusal."""
        return any(i.status == PROBLEM and i.impact in (CRASH, REFUSED) for i in self.items)

    @property
    def problems(self) -> list[PreflightItem]:
        return [i for i in self.items if i.status == PROBLEM]


class ConfigError(Exception):
    pass


# What an EAGLE-3 drafter's draft class builds its layer from, beyond the sizes every model
# folder is checked for: a value of the wrong kind fails the build (``hidden_size // 0``,
# ``tp_size % {"a": 1}``, ``rope_scaling["rope_type"]`` of a string) or builds garbage.
_DRAFTER_COUNTS = ("num_attention_heads", "num_key_value_heads")  # divided by: at least 1
_DRAFTER_SIZES = ("intermediate_size", "max_position_embeddings")
_DRAFTER_OPTIONAL_SIZES = ("head_dim",)  # null: the config class derives it
_DRAFTER_NUMBERS = ("rms_norm_eps", "rope_theta")


def _positive_float(value: Any) -> bool:
    """A positive number a float holds (the engine builds its norm and rotary layers with one;
    10**400 has no float)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        number = float(value)
    except OverflowError:
        return False
    return math.isfinite(number) and number > 0


def drafter_value_problems(raw: dict[str, Any]) -> list[str]:
    """The drafter config keys present with a value its draft class cannot be built with."""
    problems: list[str] = []
    for key in (*_DRAFTER_COUNTS, *_DRAFTER_SIZES, *_DRAFTER_OPTIONAL_SIZES):
        if key not in raw or (raw[key] is None and key in _DRAFTER_OPTIONAL_SIZES):
            continue
        low = 1 if key in _DRAFTER_COUNTS else 0
        checked = as_size(raw[key])
        if checked is None or checked < low:
            problems.append(f"`{key}` is {describe(raw[key])}, not a whole number from {low} to 2**63 - 1")
    for key in _DRAFTER_NUMBERS:
        value = raw.get(key)
        if key in raw and not _positive_float(value):
            problems.append(f"`{key}` is {describe(value)}, not a positive number")
    scaling = raw.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, dict):
        problems.append(f"`rope_scaling` is {describe(scaling)}, not an object or null")
    return problems


def read_model_config(path: str) -> ModelConfig:
    """The sizes of ``path``/config.json. Raises :class:`ConfigError` for a folder or file that
    cannot be used, :class:`OutsideFolder` for a config.json that links out of the folder."""
    folder = Path(path)
    config_path = folder / "config.json"
    if not folder.is_dir():
        raise ConfigError(f"{path}: not a folder (a model folder holds config.json)")
    try:
        raw = read_model_json(folder, "config.json")
    except FileNotFoundError as exc:
        raise ConfigError(f"{config_path}: no such file (is {path} a model folder?)") from exc
    except OutsideFolder:
        raise
    except ModelFileError as exc:
        raise ConfigError(str(exc)) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{config_path}: not a JSON object ({describe(raw)})")
    invalid: list[str] = []
    sizes, sizes_from = raw, ""
    for key in _TEXT_CONFIG_KEYS:
        nested = raw.get(key)
        if isinstance(nested, dict) and "hidden_size" in nested:
            sizes, sizes_from = nested, key
            break

    def size(key: str, *sources: dict[str, Any]) -> int | None:
        for source in sources:
            if key in source:
                value = source[key]
                if value is None:
                    return None
                checked = as_size(value)
                if checked is None:
                    where = f"{sizes_from}.{key}" if source is not raw else key
                    invalid.append(f"`{where}` is {describe(value)}, not a whole number from 0 to 2**63 - 1")
                return checked
        return None

    architectures = raw.get("architectures")
    architecture = None
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        architecture = architectures[0]
    elif architectures is not None and not (isinstance(architectures, list) and not architectures):
        invalid.append(f"`architectures` is {describe(architectures)}, not a list of class names")
    return ModelConfig(
        path=path,
        architecture=architecture,
        hidden_size=size("hidden_size", sizes, raw),
        vocab_size=size("vocab_size", sizes, raw),
        num_hidden_layers=size("num_hidden_layers", sizes, raw),
        raw=raw,
        sizes_from=sizes_from,
        target_hidden_size=size("target_hidden_size", raw),
        draft_vocab_size=size("draft_vocab_size", raw),
        invalid=tuple(invalid),
    )
