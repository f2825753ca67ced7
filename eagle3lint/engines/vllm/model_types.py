"""The HF model types of a vLLM model class's checkpoints, judged against the allow-list.

Releases up to 0.21 refuse EAGLE-3 before the weights load unless the target's
``hf_text_config.model_type`` contains a word of a list (:class:`~.protocol.AllowList`). The
tree names architectures; their types come from two tables, both read as source:

* transformers' (:mod:`eagle3lint.model.hf_types`), of the release the engine pins
  (``Engine.library``, the one ``[model_types] library`` names): a class name maps to every model type that lists it;
* the engine's own config registry (``_CONFIG_REGISTRY`` in ``transformers_utils/config.py``:
  model type -> config class, the classes in ``transformers_utils/configs/``), for types
  transformers does not know, or whose config vLLM replaces. A registry class ``FooConfig``
  serves the architectures ``Foo`` + a head suffix (``FooForCausalLM``), the naming both
  transformers and vLLM follow.

The text type is the checkpoint's own type, or its text sub-config's where the config class
names one; where it is whatever model the checkpoint wraps (``AutoConfig``), it is unknown, and
said so: nothing is judged on a guess.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.model.hf_types import (
    ConfigFacts,
    TextType,
    TypeTables,
    matches,
    parse_bounded,
    read_config_classes,
    read_tables,
    text_type,
)
from eagle3lint.source.engine import Engine


@dataclass(frozen=True)
class Checkpoint:
    """Checkpoints of one architecture and one model type."""

    architecture: str
    model_type: str
    text: TextType
    source: str  # "transformers" | "vllm"
    config_class: str = ""  # the config class it is loaded as ("" where no table names one)

    def describe(self) -> str:
        text = self.text.model_type
        return self.model_type if text in (None, self.model_type) else f"{self.model_type} (text {text})"


@dataclass
class TypeJudgement:
    """A model class's checkpoints against the allow-list."""

    allowed: list[Checkpoint] = field(default_factory=list)
    refused: list[Checkpoint] = field(default_factory=list)
    undetermined: list[Checkpoint] = field(default_factory=list)  # text type unknown statically
    unknown_architectures: list[str] = field(default_factory=list)  # no table knows their types

    @property
    def all_refused(self) -> bool:
        """Every checkpoint of every architecture is refused: no type is allowed or unknown."""
        return bool(self.refused) and not (self.allowed or self.undetermined or self.unknown_architectures)


@dataclass
class ModelTypeTables:
    """What the contract keeps (``VllmContract.model_types``): each architecture's checkpoints'
    types with their text types, from transformers and the engine's registry."""

    origin: str  # which transformers and why, or why there is none
    label: str = ""  # which transformers, in two words ("transformers 4.56.0")
    # A transformers release was looked for (the engine pins one, or none) and none can be read.
    unreadable: bool = False
    # transformers: class name -> model types; model type -> text type
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    texts: dict[str, TextType] = field(default_factory=dict)
    # the engine's registry: config class stem ("Afmoe") -> [(model type, text type)]
    registry: dict[str, list[tuple[str, TextType]]] = field(default_factory=dict)
    registry_path: str = ""  # where it was read, relative to the source root
    suffixes: tuple[str, ...] = ()
    # model type -> config class: transformers' table, the engine's registry; and every config
    # class read (transformers' and the engine's own), by name
    config_of: dict[str, str] = field(default_factory=dict)
    registry_configs: dict[str, str] = field(default_factory=dict)
    configs: dict[str, ConfigFacts] = field(default_factory=dict)

    def checkpoints(self, architecture: str) -> list[Checkpoint]:
        out = [
            Checkpoint(architecture, t, self.texts.get(t, TextType(None, "not in transformers' config table")), "transformers", self.config_of.get(t, ""))
            for t in self.classes.get(architecture, ())
        ]
        known = {c.model_type for c in out}
        for suffix in self.suffixes:
            if not architecture.endswith(suffix) or architecture == suffix:
                continue
            for model_type, text in self.registry.get(architecture[: -len(suffix)], []):
                if model_type in known:
                    # vLLM's own config replaces transformers' for this type: its text type holds.
                    own = self.registry_configs.get(model_type, "")
                    out = [Checkpoint(architecture, model_type, text, "vllm", own) if c.model_type == model_type else c for c in out]
                else:
                    out.append(Checkpoint(architecture, model_type, text, "vllm", self.registry_configs.get(model_type, "")))
                    known.add(model_type)
        return out

    def judge(self, architectures: list[str], words: tuple[str, ...]) -> TypeJudgement:
        judgement = TypeJudgement()
        for architecture in architectures:
            found = self.checkpoints(architecture)
            if not found:
                judgement.unknown_architectures.append(architecture)
            for checkpoint in found:
                text = checkpoint.text.model_type
                bucket = judgement.undetermined if text is None else judgement.allowed if matches(words, text) else judgement.refused
                bucket.append(checkpoint)
        return judgement

    def to_json(self) -> dict[str, object]:
        return {"origin": self.origin, "architectures": len(self.classes), "registry": self.registry_path or None}


def _registry_entries(tree: ast.Module, name: str) -> dict[str, str]:
    """``_CONFIG_REGISTRY = LazyConfigDict(afmoe="AfmoeConfig", ...)`` or a dict literal of
    ``"type": ConfigClass`` (older releases): model type -> config class name."""
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        value = getattr(stmt, "value", None)
        if not (isinstance(target, ast.Name) and target.id == name) or value is None:
            continue
        out: dict[str, str] = {}
        pairs: list[tuple[str, ast.expr]] = []
        literal = value if isinstance(value, ast.Dict) else None
        if isinstance(value, ast.Call):
            pairs = [(kw.arg, kw.value) for kw in value.keywords if kw.arg]
            literal = value.args[0] if value.args and isinstance(value.args[0], ast.Dict) else None
        if literal is not None:
            pairs += [(k.value, v) for k, v in zip(literal.keys, literal.values, strict=True) if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        for key, val in pairs:
            if isinstance(val, ast.Constant) and isinstance(val.value, str):
                out[str(key)] = val.value
            elif isinstance(val, ast.Name):
                out[str(key)] = val.id
            elif isinstance(val, ast.Attribute):
                out[str(key)] = val.attr
        return out
    return {}


def _load_transformers(engine: Engine, name: str) -> tuple[TypeTables | None, str]:
    library = engine.library(name)
    if library is None:
        return None, "no transformers was looked for"
    if library.root is None:
        return None, library.origin
    tables = None
    if library.tables is not None:
        try:
            tables = TypeTables.from_json(json.loads(library.tables.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            tables = None
    if tables is None:
        tables = read_tables(library.root, library.origin)
    if tables is None:
        return None, f"{library.origin}: its models/auto/modeling_auto.py could not be read"
    tables.origin = library.origin
    return tables, library.origin


def read_model_types(engine: Engine, vpack: VllmPack) -> ModelTypeTables:
    """The tables for this tree: transformers' (where a release was found) and the registry's."""
    # The library the pack names (``[model_types] library``), as the adapter asked it fetched.
    transformers, origin = _load_transformers(engine, vpack.types_library)
    configs: dict[str, ConfigFacts] = dict(transformers.configs) if transformers else {}
    library = engine.library(vpack.types_library)
    label = f"transformers {library.version}" if library is not None and transformers is not None else ""
    result = ModelTypeTables(origin, label, suffixes=vpack.architecture_suffixes, unreadable=library is not None and transformers is None)
    registry_path = engine.root / vpack.config_registry if vpack.config_registry else None
    tree = parse_bounded(registry_path) if registry_path is not None else None
    entries = _registry_entries(tree, vpack.config_registry_name) if tree is not None else {}
    # Attributes vLLM renames on every loaded config (``llm_config`` -> ``text_config``).
    renames = _registry_entries(tree, vpack.config_renames_name) if tree is not None and vpack.config_renames_name else {}
    result.configs = configs
    if transformers is not None:
        result.classes = transformers.classes
        result.config_of = transformers.config_of
        result.texts = {t: text_type(t, c, configs, renames) for t, c in transformers.config_of.items()}
    if not entries:
        return result
    assert registry_path is not None
    result.registry_path = Path(registry_path).relative_to(engine.source_root).as_posix()
    own: dict[str, ConfigFacts] = {}
    folder = engine.root / vpack.configs_folder if vpack.configs_folder else None
    for path in _python_files(folder) if folder is not None else []:
        parsed = parse_bounded(path)
        for facts in read_config_classes(parsed) if parsed is not None else []:
            own.setdefault(facts.name, facts)
    merged = {**configs, **own}
    result.configs = merged
    result.registry_configs = dict(entries)
    for model_type, config_class in entries.items():
        stem = config_class.removesuffix("Config")
        result.registry.setdefault(stem, []).append((model_type, text_type(model_type, config_class, merged, renames)))
    return result


def _python_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


__all__ = ["Checkpoint", "ModelTypeTables", "TypeJudgement", "read_model_types"]
