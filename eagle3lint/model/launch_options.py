"""The launch configuration a run assumes: ``--engine-option NAME[=VALUE]`` and ``engine-options``.

``check``, ``models`` and the pre-flight share it, so the three give one answer. What each
option is (its flag, its default, the source that tests it) is rule-pack data
(``[[option]]`` in ``rules/<engine>.toml``); unset options take the engine's defaults, which an
adapter may read from the release itself (vLLM's model-runner generation).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from eagle3lint.common.errors import UsageError
from eagle3lint.common.outcomes import Requirement
from eagle3lint.source.rulepack import OptionSpec

ALL = "all"
_OFF = ("off", "0", "false", "no")
_ON = ("on", "1", "true", "yes")


@dataclass(frozen=True)
class EngineOptions:
    """The options in effect: each known option's value ("on"/"off" for switches and sizes, the
    value of a choice), and whether ``all`` was asked for (every option's path at once)."""

    specs: Mapping[str, OptionSpec] = field(default_factory=dict)
    values: Mapping[str, str] = field(default_factory=dict)
    all: bool = False
    chosen: tuple[str, ...] = ()  # what the user wrote, for the summary

    def value(self, name: str) -> str:
        return self.values.get(name, "off")

    def active(self, condition: Iterable[Requirement]) -> bool:
        """Whether a cause that needs these options acts in this launch."""
        if self.all:
            return True
        return all(self.value(name) == wanted for name, wanted in condition)

    def describe(self, condition: Iterable[Requirement]) -> str:
        """The condition as a user launches it, without the parts this run already has (a
        release's default runner need not be named), unless that leaves nothing."""
        wanted = list(condition)
        missing = [(name, value) for name, value in wanted if self.values.get(name, "off") != value]
        parts = []
        for name, value in missing or wanted:
            spec = self.specs.get(name)
            parts.append(spec.describe(value) if spec else f"{name}={value}")
        return " and ".join(parts)

    def label(self) -> str:
        """The options the user chose, as the engine is launched with them, for a summary line
        ("" when the run assumes the engine's defaults)."""
        if self.all:
            return "every launch option (--engine-option all)"
        parts = []
        for text in self.chosen:
            name = text.partition("=")[0].strip().lower()
            spec = self.specs.get(name)
            value = self.values.get(name, "")
            if spec is None:
                continue
            shown = spec.describe(value) if value not in ("off", "") else f"no {spec.described_on()}"
            if shown not in parts:
                parts.append(shown)
        return ", ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {"all": self.all, "values": dict(sorted(self.values.items())), "chosen": list(self.chosen)}


def options_from_environment(specs: Mapping[str, OptionSpec], environ: Mapping[str, str]) -> list[str]:
    """``NAME=VALUE`` words for the options an environment variable sets (an option whose flag
    is a variable, not a command-line flag: vLLM's ``VLLM_USE_V2_MODEL_RUNNER``), from the way
    the rule pack spells each value (``VLLM_USE_V2_MODEL_RUNNER=1`` is ``runner=v2``)."""
    words = []
    for name, spec in specs.items():
        if spec.flag.startswith("-") or spec.flag not in environ:
            continue
        value = _environment_value(spec, environ[spec.flag])
        if value is not None:
            words.append(f"{name}={value}")
    return words


def unreadable_environment(specs: Mapping[str, OptionSpec], environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(variable, value)`` for each option variable set to a value the engine cannot read: an
    integer switch (vLLM reads ``VLLM_USE_V2_MODEL_RUNNER`` as ``bool(int(value))``) set to
    ``garbage``, ``true`` or nothing, on which the server fails before it starts."""
    return [
        (spec.flag, environ[spec.flag])
        for spec in specs.values()
        if not spec.flag.startswith("-") and spec.flag in environ and _environment_value(spec, environ[spec.flag]) is None
    ]


def _environment_value(spec: OptionSpec, raw: str) -> str | None:
    """The option value an environment variable's text sets; None where the engine cannot read
    it. Values spelled as integers (``=0``/``=1``) are read as the engine reads them, as a truth
    value of ``int(text)`` (``2`` is on)."""
    setting = f"{spec.flag}={raw.strip()}"
    value = next((v for v, spelled in spec.spelled if spelled == setting), None)
    if value is not None:
        return value
    numbers = {v: spelled.partition("=")[2] for v, spelled in spec.spelled}
    if not numbers or not all(n in ("0", "1") for n in numbers.values()):
        return None
    try:
        truth = bool(int(raw))
    except ValueError:
        return None
    return next((v for v, n in numbers.items() if n == str(int(truth))), None)


def parse_options(raw: Iterable[str], specs: Mapping[str, OptionSpec], defaults: Mapping[str, str] | None = None, engine: str = "") -> EngineOptions:
    """``["pp", "runner=v1", "two-batch-overlap=off"]`` against the engine's options; unknown
    names and values are usage errors naming what is known."""
    values = {name: _normal(spec, spec.default) for name, spec in specs.items()}
    for name, value in (defaults or {}).items():
        if name in specs and value:
            values[name] = _normal(specs[name], value)
    chosen: list[str] = []
    everything = False
    for item in raw:
        text = item.strip()
        if not text:
            continue
        name, has_value, value = text.partition("=")
        name = name.strip().lower()
        if name == ALL and not has_value:
            everything = True
            chosen.append(ALL)
            continue
        spec = specs.get(name)
        if spec is None:
            known = ", ".join([*sorted(specs), ALL]) or ALL
            where = f" for {engine}" if engine else ""
            raise UsageError(f"--engine-option {text!r}: unknown option{where} (known: {known})")
        values[name] = _normal(spec, value.strip() if has_value else spec.on_value(), text)
        chosen.append(text)
    return EngineOptions(specs=dict(specs), values=values, all=everything, chosen=tuple(chosen))


def _normal(spec: OptionSpec, value: str, written: str = "") -> str:
    """A switch or size as "on"/"off"; a choice as one of its values."""
    lowered = value.lower()
    if spec.kind == "choice":
        if lowered in spec.values or not lowered:
            return lowered
        raise UsageError(f"--engine-option {written or spec.name!r}: {spec.name} is one of {', '.join(spec.values)}")
    if spec.kind == "size":
        if lowered.isascii() and lowered.isdigit():  # any size, read without int() (no digit limit)
            return "on" if lowered.lstrip("0") not in ("", "1") else "off"
        if lowered in _ON:
            return "on"
        if lowered in _OFF:
            return "off"
        raise UsageError(f"--engine-option {written or spec.name!r}: {spec.name} takes a size (1 = off) or on/off")
    if lowered in _ON:
        return "on"
    if lowered in _OFF:
        return "off"
    raise UsageError(f"--engine-option {written or spec.name!r}: {spec.name} is on or off")
