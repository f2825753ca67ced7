"""Everything one pair pre-flight reads, gathered once: the engine tree and its index, the
target's and the drafter's classes in it, both configs, the drafter's tensors, the launch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3lint.model.capture import CaptureAnalysis
from eagle3lint.verify.pair.facts import DrafterKey, Framework, PairFacts
from eagle3lint.verify.pair.source import ReleaseCode

if TYPE_CHECKING:
    from eagle3lint.model.models import ModelClass
    from eagle3lint.source.engine import Engine
    from eagle3lint.source.index import ProjectIndex
    from eagle3lint.verify.configs import ModelConfig
    from eagle3lint.verify.safetensors_header import CheckpointTensors


@dataclass
class Launch:
    """The launch the pre-flight judges: parallelism, the launch options, the raw server flags
    and the speculative flags."""

    tp: int = 1
    pp: int = 1
    options: dict[str, str] = field(default_factory=dict)  # launch option -> value ("runner": "v2")
    engine_args: tuple[str, ...] = ()
    num_steps: int | None = None
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None
    draft_given: bool = True  # False: EAGLE-3 launched without a draft model path

    @property
    def runner(self) -> str:
        return self.options.get("runner", "")

    def flag_value(self, flag: str) -> str | None:
        """The value ``--flag VALUE`` / ``--flag=VALUE`` has in the raw server flags, "" for a bare
        ``--flag``, None when absent."""
        words = [w for arg in self.engine_args for w in arg.split()]
        for i, word in enumerate(words):
            if word == flag:
                following = words[i + 1] if i + 1 < len(words) else ""
                return "" if following.startswith("--") else following
            if word.startswith(flag + "="):
                return word.partition("=")[2]
        return None


@dataclass
class PairContext:
    engine: Engine
    index: ProjectIndex
    code: ReleaseCode
    analysis: CaptureAnalysis
    facts: PairFacts
    frameworks: tuple[Framework, ...]
    drafter_keys: tuple[DrafterKey, ...]
    launch: Launch
    target: ModelConfig | None
    drafter: ModelConfig | None
    target_class: ModelClass | None
    draft_class: ModelClass | None
    tensors: CheckpointTensors | None = None
    # Every model class of the release (the drafter architectures it can load).
    models: list[ModelClass] = field(default_factory=list)
    # What the drafter's ids mean when the user says so (``--drafter-ids output``).
    meaning_override: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return self.engine.label

    def rel(self, path: str | Path) -> str:
        return self.code.relative(path)
