"""``eagle3lint show-config``: every setting with the value a run uses, and where it comes from.

A setting the file leaves unset is shown with its effective default (the output format, the
cache folder actually used, the rules on by default), marked ``# default``, so a reader never
has to know what an empty value stands for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from eagle3lint.common.escape import line_text
from eagle3lint.engines import ENGINE_NAMES
from eagle3lint.settings.config import DEFAULT_OUTPUT_FORMAT, Settings

# What an unset setting without a value of its own means (a default comment says it).
_DISCOVERED = "discovered from the PATHs"
_ALIGN_LIMIT = 48


@dataclass(frozen=True)
class ShownSetting:
    key: str
    value: Any  # JSON-ready; None where no value applies (engine discovered, no baseline)
    from_file: bool
    meaning: str = ""  # what the default amounts to, where the value alone does not say

    def text_line(self) -> str:
        """``key = value`` in TOML; a setting with no value to give (the engine discovered, no
        baseline) is a commented-out line, so the output pastes into pyproject.toml as it is."""
        if self.value is None:
            return f"# {self.key} = (unset)"
        return f"{self.key} = {_toml(self.value)}"


def shown_settings(settings: Settings) -> list[ShownSetting]:
    """Every setting in the order of the README's example, with its effective value."""
    from_file = settings.from_file

    def item(key: str, value: Any, meaning: str = "") -> ShownSetting:
        return ShownSetting(key, value, key in from_file, "" if key in from_file else meaning)

    items = [
        item("engine", settings.engine, _DISCOVERED),
        item("engine-root", str(settings.engine_root) if settings.engine_root else None, _DISCOVERED),
        item("select", settings.select if settings.select is not None else default_selection(), _off_by_default()),
        item("extend-select", settings.extend_select),
        item("ignore", settings.ignore),
        item("per-file-ignores", settings.per_file_ignores),
        item("exclude", settings.exclude),
        item("extend-exclude", settings.extend_exclude),
        item("unsafe-fixes", settings.unsafe_fixes),
        item("output-format", settings.output_format or DEFAULT_OUTPUT_FORMAT),
        item("baseline", str(settings.baseline) if settings.baseline else None, "every finding is reported"),
        item("cache-dir", str(settings.cache_folder), "beside the settings file" if settings.path else "in the user cache folder"),
        item("fail-on", settings.fail_on, "infos alone exit 0"),
        item("severity", settings.severity, "each rule's own"),
    ]
    for engine in ENGINE_NAMES:
        overrides = settings.engines.get(engine)
        members = [m.__dict__ for m in overrides.extra_members] if overrides else []
        models = [str(p) for p in overrides.extra_models] if overrides else []
        items.append(item(f"{engine}.extra-members", members))
        items.append(item(f"{engine}.extra-models", models))
    return items


def default_selection() -> list[str]:
    from eagle3lint.engines import rule_registry

    return [rule.code for rule in rule_registry() if rule.default_enabled]


def _off_by_default() -> str:
    from eagle3lint.engines import rule_registry

    off = [rule.code for rule in rule_registry() if not rule.default_enabled]
    return f"every rule but {', '.join(off)}" if off else "every rule"


def write_text(settings: Settings, out: TextIO) -> None:
    items = shown_settings(settings)
    if settings.path:
        out.write(f"# Settings in effect, from {line_text(str(settings.path))}.\n# '# default': not set in that file.\n")
    else:
        out.write(f"# Settings in effect: no pyproject.toml with [tool.eagle3lint] from {line_text(str(Path.cwd()))} up, so all are defaults.\n")
    lines = [(s.text_line(), s) for s in items]
    # Comments line up, except after a long value (the default selection), which is not padded.
    width = max(len(text) for text, _ in lines if len(text) <= _ALIGN_LIMIT)
    for text, shown in lines:
        if shown.from_file:
            out.write(text + "\n")
            continue
        comment = f"# default: {shown.meaning}" if shown.meaning else "# default"
        out.write(f"{text:<{width}}  {comment}\n")


def write_json(settings: Settings, out: TextIO) -> None:
    """The keys ``show-config`` always printed, with effective values, and ``defaults``: the keys
    the file leaves unset."""
    items = shown_settings(settings)
    data: dict[str, Any] = {"config-file": str(settings.path) if settings.path else None}
    for shown in items:
        engine, dot, key = shown.key.partition(".")
        if dot:
            data.setdefault(engine, {})[key] = shown.value
        else:
            data[shown.key] = shown.value
    data["defaults"] = [s.key for s in items if not s.from_file]
    out.write(json.dumps(data, indent=2))
    out.write("\n")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)
