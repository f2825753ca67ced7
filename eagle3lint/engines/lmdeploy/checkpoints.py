"""Which config builder builds the config of each checkpoint a model class serves.

A class serves the architectures the map names it for; a builder is picked by the checkpoint's
``architectures[0]`` or its ``model_type``. A checkpoint's model type is not in the tree, so it is
taken from the two places that name it: the architecture's own name (``Qwen3_5MoeForConditional
Generation`` is a ``qwen3_5_moe``: both projects name them so; compared without case, ``_`` and a
``_text`` suffix) and the engine's config classes for types transformers does not ship
(``KimiK2Config(DeepseekV3Config)``: ``kimi_k2`` checkpoints say ``DeepseekV3ForCausalLM``).
The first builder in registration order whose condition surely holds builds it, else the
default; a builder whose condition is not a plain test (``_is_meta_moe_config(hf_config)``) and
names the checkpoint's type may come first, which the family then notes (one naming its
architecture is taken to be written for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eagle3lint.engines.lmdeploy.builders import BuilderFacts, Condition
from eagle3lint.engines.lmdeploy.facts import LmdeployContract


@dataclass(frozen=True)
class Checkpoint:
    architecture: str
    model_type: str  # "" where only the architecture's name says it

    def describe(self) -> str:
        return f"{self.architecture} (model_type {self.model_type})" if self.model_type else self.architecture


@dataclass(frozen=True)
class Family:
    """The checkpoints of a class one builder builds."""

    builder: BuilderFacts
    checkpoints: tuple[Checkpoint, ...]
    # Builders that may come first for them, with other facts ("" where none).
    note: str = ""

    def describe(self) -> str:
        return ", ".join(c.describe() for c in self.checkpoints)


def _norm(name: str) -> str:
    text = re.sub(r"[^a-z0-9]", "", name.lower())
    return text[: -len("text")] if text.endswith("text") and len(text) > len("text") else text


def type_of(architecture: str, suffixes: tuple[str, ...]) -> str:
    """``Qwen3_5MoeForConditionalGeneration`` -> ``qwen35moe`` (normalised)."""
    for suffix in sorted(suffixes, key=len, reverse=True):
        if architecture.endswith(suffix) and len(architecture) > len(suffix):
            return _norm(architecture[: -len(suffix)])
    return _norm(architecture)


def _matches(condition: Condition, checkpoint: Checkpoint, guessed: str) -> str | None:
    """"exact", "partial" or None."""
    names = condition.names
    if condition.kind == "always":
        return "exact"
    if condition.kind == "architectures":
        return "exact" if checkpoint.architecture in names else None
    wanted = {_norm(n) for n in names}
    typed = _norm(checkpoint.model_type) if checkpoint.model_type else guessed
    if condition.kind == "types":
        return "exact" if typed in wanted else None
    # A condition eagle3lint cannot read as a plain test: one naming the architecture itself
    # is written for it (``any(arch in ['MetaMoeForConditionalGeneration', ...] ...)``); one
    # naming its type may take some of its checkpoints.
    if checkpoint.architecture in names:
        return "exact"
    return "partial" if typed in wanted else None


def families(contract: LmdeployContract, architectures: list[str], suffixes: tuple[str, ...]) -> list[Family]:
    grouped: dict[str, tuple[BuilderFacts, list[Checkpoint], list[str]]] = {}
    for architecture in architectures:
        checkpoints = [Checkpoint(architecture, "")]
        checkpoints += [Checkpoint(architecture, t) for t, archs in sorted(contract.config_types.items()) if architecture in archs]
        guessed = type_of(architecture, suffixes)
        for checkpoint in checkpoints:
            chosen: BuilderFacts | None = None
            earlier: list[BuilderFacts] = []
            for builder in contract.builders:
                match = _matches(builder.condition, checkpoint, guessed)
                if match == "exact":
                    chosen = builder
                    break
                if match == "partial":
                    earlier.append(builder)
            if chosen is None:
                continue
            entry = grouped.setdefault(chosen.name, (chosen, [], []))
            entry[1].append(checkpoint)
            for other in earlier:
                if other.describe() != chosen.describe():
                    note = f"{other.name} ({other.place.path}:{other.place.line}) may build some of them first ({other.describe()})"
                    if note not in entry[2]:
                        entry[2].append(note)
    return [Family(builder, tuple(points), "; ".join(notes)) for builder, points, notes in grouped.values()]
