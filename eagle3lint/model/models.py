"""Which classes are models, and what kind: target candidate, draft head, or other."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.source.index import ClassRef, ProjectIndex, Resolved
from eagle3lint.source.sources import iter_python_files, tree_path
from eagle3lint.source.summary_types import ClassSummary

if TYPE_CHECKING:
    from eagle3lint.common.outcomes import ConditionalOutcome, Effect
    from eagle3lint.source.engine import Engine

TARGET = "target"
EAGLE3_DRAFT = "eagle3-draft"
DRAFT = "draft"
OTHER = "other"


@dataclass
class ModelClass:
    ref: ClassRef
    path: str
    summary: ClassSummary
    kind: str  # TARGET | EAGLE3_DRAFT | DRAFT | OTHER
    reason: str
    entry: str  # the name as listed in the registry/EntryClass
    variant: str | None = None  # platform variant (vLLM)
    architectures: list[str] = field(default_factory=list)
    # The verdict of a checked model (``eagle3lint.checks.verdicts``): supported, broken, ...
    status: str = ""
    status_reason: str = ""
    # What the engine does when launched with EAGLE-3 on it, under the run's options (targets
    # only), the cause that decided it (its evidence: the engine's file:line), the options under
    # which it would differ, and the codes of every finding on it (whatever the selection,
    # suppressions or baseline report).
    outcome: str = ""
    decided: Effect | None = None
    conditions: list[ConditionalOutcome] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    # Where an out-of-tree package registers it, and which engine class it replaces for its
    # architecture ("registered by vllm-ascend 0.11.0 at ...; replaces ...").
    origin: str = ""
    replaces: ClassRef | None = None  # the engine's own class for that architecture
    registered_in: str = ""  # the file of a plugin's registration of it

    def in_scope(self, scope: list[Path]) -> bool:
        """Reported when its file is in scope, or the plugin that registers it is (a plugin may
        register an engine class under a new architecture)."""
        return in_scope(self.path, scope) or bool(self.registered_in and in_scope(self.registered_in, scope))

    @property
    def role(self) -> str | None:
        if self.kind == TARGET:
            return "target"
        if self.kind in (EAGLE3_DRAFT, DRAFT):
            return "draft"
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "class": self.ref.qualname,
            "module": self.ref.module,
            "path": self.path,
            "line": self.summary.lineno,
            "kind": self.kind,
            "reason": self.reason,
            "variant": self.variant,
            "architectures": self.architectures,
            "status": self.status or None,
            "status_reason": self.status_reason or None,
            "outcome": self.outcome or None,
            "outcome_evidence": self.decided.evidence.to_json() if self.decided and self.decided.evidence else None,
            "conditions": [c.to_json() for c in self.conditions],
            **({"origin": self.origin} if self.origin else {}),
        }


@dataclass
class UnresolvedEntry:
    module: str
    path: str
    name: str
    reason: str


def _has_lm_head(index: ProjectIndex, ref: ClassRef) -> str | None:
    for current in index.mro(ref).classes:
        cls = index.class_summary(current)
        if cls is None:
            continue
        for attr in index.engine.pack.lm_head_attributes:
            if attr in cls.instance_attrs or attr in cls.class_attrs:
                return attr
    return None


def inner_models(index: ProjectIndex, ref: ClassRef) -> list[tuple[str, ClassRef]]:
    """Attributes holding another engine model class (``self.language_model = X(...)``),
    preferred names first; the first class each may hold (see :func:`inner_model_choices`)."""
    return [(attr, classes[0]) for attr, classes in inner_model_choices(index, ref)]


def inner_model_choices(index: ProjectIndex, ref: ClassRef) -> list[tuple[str, list[ClassRef]]]:
    """Each attribute holding another engine model class, with every class it may hold: more
    than one where ``__init__`` picks the backbone by config (``if use_mla: ... else: ...``)."""
    preferred = index.engine.pack.inner_model_attributes
    pattern = index.engine.pack.inner_model_class_pattern
    attrs: list[str] = []
    classes = [cls for current in index.mro(ref).classes if (cls := index.class_summary(current)) is not None]
    # What a ``__getattr__`` forwards to stands for the class, whatever its name (a dispatcher).
    forwarded = {attr for cls in classes if (fn := cls.methods.get("__getattr__")) is not None for attr in fn.self_reads}
    for cls in classes:
        for attr, entry in cls.instance_attrs.items():
            if attr in attrs:
                continue
            # Resolving a callee may parse its module: only follow ones that can be models.
            if attr in preferred or attr in forwarded or any(
                c.table or c.callee.startswith("self.") or pattern.search(c.callee.rsplit(".", 1)[-1])
                for c in entry.constructions
            ):
                attrs.append(attr)
        for name, fn in cls.methods.items():
            if fn.is_property and fn.returns_self_attr and name not in attrs:
                attrs.append(name)
    ordered = sorted(attrs, key=lambda a: (preferred.index(a) if a in preferred else len(preferred), attrs.index(a)))
    out: list[tuple[str, list[ClassRef]]] = []
    for attr in ordered:
        held = [h for h in index.attribute_classes(ref, attr) if isinstance(h, ClassRef) and h != ref]
        if held:
            out.append((attr, list(dict.fromkeys(held))))
    return out


_MODEL_CLASS_NAME = re.compile(r"(Model|LM|ForCausalLM|ForConditionalGeneration|Head)$")


def _kind_of_bases(index: ProjectIndex, ref: ClassRef, drafts: bool = True) -> tuple[str, str] | None:
    """A subclass of a draft head (or of a non-target model) is one too, whatever its own name
    says (``DFlashLagunaForCausalLM(DFlashDraftModel)``)."""
    pack = index.engine.pack
    for base in index.mro(ref).classes[1:]:
        name = base.qualname.rsplit(".", 1)[-1]
        if not _MODEL_CLASS_NAME.search(name):
            # Interfaces and mixins (SupportsEagle3, SupportsMultiModalEmbeddings,
            # AudioEncoderMixin) add a capability; they say nothing of what the model is.
            continue
        if drafts and pack.eagle3_draft_pattern.search(name):
            return EAGLE3_DRAFT, f"EAGLE-3 draft head (subclass of {name})"
        if (drafts and pack.draft_pattern.search(name)) or pack.draft_by_name_pattern.search(name):
            return DRAFT, f"draft head for EAGLE/MTP (subclass of {name})"
        for other in pack.other_patterns:
            if other.pattern.search(name):
                return OTHER, f"{other.reason} (subclass of {name})"
    return None


def _never_built(index: ProjectIndex, ref: ClassRef) -> str | None:
    """A stand-in registered for platforms without the model: its ``__init__`` always raises,
    so it never loads and there is nothing for EAGLE-3 to call. Not when the name is defined
    more than once in its module (which definition runs is decided at import time) or when a
    ``__new__`` builds something else."""
    init = index.lookup(ref, "__init__")
    if init.function is None or not init.function.always_raises or init.owner is None:
        return None
    for current in index.mro(ref).classes:
        module = index.module(current.module)
        if module is not None and current.qualname in module.redefined_classes:
            return None
    if index.lookup(ref, "__new__").status != "missing":
        return None
    return f"never built: `{init.owner.qualname}.__init__` always raises"


def classify(index: ProjectIndex, ref: ClassRef, _depth: int = 0, drafts: bool = True) -> tuple[str, str]:
    """``drafts=False`` when a registry already says the class is a generative model (vLLM's
    sections): then a name such as ``Eagle2_5_VL...`` (NVIDIA's Eagle VLM) is not a draft head."""
    pack = index.engine.pack
    name = ref.qualname.rsplit(".", 1)[-1]
    never = _never_built(index, ref)
    if never is not None:
        return OTHER, never
    if drafts and pack.eagle3_draft_pattern.search(name):
        return EAGLE3_DRAFT, f"EAGLE-3 draft head (name matches {pack.eagle3_draft_pattern.pattern!r})"
    if drafts and pack.draft_pattern.search(name):
        return DRAFT, f"draft head for EAGLE/MTP (name matches {pack.draft_pattern.pattern!r})"
    if pack.draft_by_name_pattern.search(name):
        return DRAFT, f"draft head for EAGLE/MTP (name matches {pack.draft_by_name_pattern.pattern!r})"
    for other in pack.other_patterns:
        if other.pattern.search(name):
            return OTHER, other.reason
    inherited = _kind_of_bases(index, ref, drafts)
    if inherited is not None:
        return inherited
    head = _has_lm_head(index, ref)
    if head:
        return TARGET, f"generative model (has self.{head})"
    if _depth < 3:
        for attr, held in inner_model_choices(index, ref):
            models = [inner for inner in held if classify(index, inner, _depth + 1)[0] == TARGET]
            if len(held) > 1 and models:
                # A dispatcher: ``__init__`` picks the implementation by config (MiniCPMV).
                picks = " or ".join(c.qualname for c in held)
                return TARGET, f"wrapper around a language model (self.{attr}: {picks}, picked by config)"
            if models:
                return TARGET, f"wrapper around a language model (self.{attr}: {models[0].qualname})"
    if pack.target_name_pattern.search(name):
        return TARGET, "generative model (by its name; no LM head found statically)"
    return OTHER, "no LM head or inner language model found"


def why_unresolved(resolved: Resolved) -> str:
    """What a registration that names no engine class names instead."""
    reason = getattr(resolved, "reason", None)
    if reason:
        return str(reason)
    qualified = getattr(resolved, "qualified", None)
    if qualified:
        return f"names {qualified}, outside the engine"
    return f"is not a class ({type(resolved).__name__})"


def model_files(engine: Engine) -> list[Path]:
    """Every ``*.py`` of the engine's models folders (the rule pack's ``models``)."""
    files: list[Path] = []
    for rel in engine.pack.models:
        folder = engine.root / rel
        if folder.is_dir():
            files.extend(iter_python_files(folder))
    return files


def model_files_in_scope(engine: Engine, scope: list[Path]) -> list[Path]:
    """The model files whose registrations are read up front: those in the reporting scope.

    Anything else a model needs (bases, inner models) is parsed on demand by the index, so a
    pre-commit run on one file parses that file and what it leans on, not the whole folder.
    """
    return [f for f in model_files(engine) if in_scope(str(f), scope)]


def in_scope(path: str, scope: list[Path]) -> bool:
    resolved = tree_path(path)
    for item in scope:
        target = tree_path(str(item))
        if resolved == target or resolved.startswith(target.rstrip(os.sep) + os.sep):
            return True
    return False
