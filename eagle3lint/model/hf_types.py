"""Which HF ``model_type`` a checkpoint of an architecture carries, read from transformers' source.

An engine may judge a checkpoint by its config's ``model_type`` (vLLM up to 0.21 runs EAGLE-3 only
for types containing a word of an allow-list). The tree in front of us names architectures, not
types; transformers states the link as literals in ``models/auto/modeling_auto.py``
(``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict([("llama", "LlamaForCausalLM"), ...])``): a
class name maps to every model type that lists it. ``models/auto/configuration_auto.py`` names
each type's config class, and the ``configuration_*.py`` files say whether that class has a text
sub-config (``sub_configs = {"text_config": Qwen2_5_VLTextConfig}``), whose ``model_type`` is then
the one ``config.get_text_config()`` returns, or whether it is whatever model the checkpoint
names (``AutoConfig``), which no static reading can tell.

Nothing is imported: every file is parsed with ``ast``. The tables are small and engine-neutral,
so they are kept as JSON beside a downloaded transformers release (:meth:`TypeTables.to_json`).
"""

from __future__ import annotations

import ast
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.source.sources import parse_file

# Bumped when what is read changes: tables kept as JSON by an older reader are read again.
FORMAT = 4
# ``PretrainedConfig.get_text_config()``: the sub-configs it returns, when exactly one is set.
TEXT_CONFIG_NAMES = ("text_encoder", "decoder", "generator", "text_config")
_CONFIG_BASES = frozenset({"PretrainedConfig", "PreTrainedConfig"})
# Where the base config class lives, relative to the package folder.
BASE_CONFIG_FILE = "configuration_utils.py"
_AUTO = "AutoConfig"
# Config files larger than this are not transformers' (the largest is ~60 kB).
_MAX_BYTES = 2 << 20


@dataclass(frozen=True)
class SubConfig:
    """One sub-config attribute a config class declares (``sub_configs``) or builds in
    ``__init__``: the config class it holds, or why that cannot be told."""

    attribute: str
    config_class: str = ""  # "" where it cannot be told
    unknown: str = ""  # why not ("whatever model the checkpoint names (`AutoConfig`)")


@dataclass(frozen=True)
class ConfigFacts:
    """One config class, as its body states it."""

    name: str
    model_type: str | None  # its ``model_type = "..."``, None where the body sets none
    bases: tuple[str, ...]
    subs: tuple[SubConfig, ...] = ()
    # Why its sub-configs cannot be read at all ("" where they can): a computed ``sub_configs``.
    unreadable: str = ""
    # The attributes the class itself defines (class-level assignments and annotations, the
    # fields of transformers 5's dataclass-style configs; ``self.x = ...`` in its methods;
    # properties; ``attribute_map`` keys), and why that set is not all it may have ("" where
    # it is: a ``setattr(self, ...)``, a ``__getattr__``, a computed ``attribute_map``).
    attributes: tuple[str, ...] = ()
    open_attributes: str = ""

    def to_json(self) -> list[Any]:
        subs = [[s.attribute, s.config_class, s.unknown] for s in self.subs]
        return [self.name, self.model_type, list(self.bases), subs, self.unreadable, list(self.attributes), self.open_attributes]

    @classmethod
    def from_json(cls, data: list[Any]) -> ConfigFacts:
        name, model_type, bases, subs, unreadable, attributes, open_attributes = data
        return cls(
            str(name), model_type, tuple(bases), tuple(SubConfig(str(a), str(c), str(u)) for a, c, u in subs), str(unreadable),
            tuple(map(str, attributes)), str(open_attributes),
        )


@dataclass(frozen=True)
class TextType:
    """``config.get_text_config().model_type`` for a checkpoint of one model type."""

    model_type: str | None  # None: it depends on the checkpoint
    via: str  # how it is known ("itself", "its text_config is Qwen2_5_VLTextConfig"), or why not


@dataclass
class TypeTables:
    """What transformers says of architectures and model types."""

    origin: str  # which transformers, and why that one, in words
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class name -> model types
    config_of: dict[str, str] = field(default_factory=dict)  # model type -> config class name
    configs: dict[str, ConfigFacts] = field(default_factory=dict)  # config class name -> facts

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "origin": self.origin,
            "classes": {k: list(v) for k, v in self.classes.items()},
            "config_of": self.config_of,
            "configs": [c.to_json() for c in self.configs.values()],
        }

    @classmethod
    def from_json(cls, data: Any) -> TypeTables | None:
        """None for anything this reader did not write (another format, a damaged file)."""
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                return None
            configs = [ConfigFacts.from_json(c) for c in data["configs"]]
            return cls(
                str(data["origin"]),
                {str(k): tuple(map(str, v)) for k, v in data["classes"].items()},
                {str(k): str(v) for k, v in data["config_of"].items()},
                {c.name: c for c in configs},
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def text_type(model_type: str, config_class: str | None, configs: dict[str, ConfigFacts], renames: dict[str, str] | None = None) -> TextType:
    """The text sub-config's model type of a checkpoint whose config is ``config_class``: the
    checkpoint's own type where the class (and its bases) hold no text sub-config, the
    sub-config class's ``model_type`` where one is named, else unknown (and why). ``renames``:
    attributes the engine renames after loading (vLLM: ``llm_config`` -> ``text_config``)."""
    if config_class is None:
        return TextType(None, f"no config class is named for {model_type}")
    subs: dict[str, SubConfig] = {}
    seen: set[str] = set()
    pending = [config_class]
    while pending:
        name = pending.pop(0)
        if name in seen or name in _CONFIG_BASES:
            continue
        seen.add(name)
        facts = configs.get(name)
        if facts is None:
            return TextType(None, f"`{config_class}` derives from `{name}`, which was not read")
        if facts.unreadable:
            return TextType(None, facts.unreadable)
        for sub in facts.subs:
            subs.setdefault(sub.attribute, sub)
        pending.extend(facts.bases)
    texts = [subs[a] for a in TEXT_CONFIG_NAMES if a in subs]
    for old, new in (renames or {}).items():
        if new in TEXT_CONFIG_NAMES and new not in subs and old in subs:
            texts.append(subs[old])
    if not texts:
        return TextType(model_type, "itself")
    if len(texts) > 1:
        return TextType(None, f"`{config_class}` has several text sub-configs ({', '.join(t.attribute for t in texts)})")
    text = texts[0]
    if not text.config_class:
        return TextType(None, f"its {text.attribute} is {text.unknown}")
    sub_type = _model_type_of(text.config_class, configs)
    if sub_type is None:
        return TextType(None, f"its {text.attribute} `{text.config_class}` states no model_type")
    return TextType(sub_type, f"its {text.attribute} is `{text.config_class}`")


def defines(config_class: str, attribute: str, configs: dict[str, ConfigFacts]) -> tuple[bool | None, str]:
    """Whether an instance of ``config_class`` built by transformers has ``attribute``: True
    where the class or a base defines it, False where every class up to ``PreTrainedConfig``
    was read and none does, None (and why) where that cannot be told. Extra keys of a
    checkpoint's ``config.json`` become attributes too; this answers for the class alone."""
    pending, seen, why = [config_class], set(), ""
    while pending:
        name = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        facts = configs.get(name)
        if facts is None:
            why = why or f"`{name}` was not read"
            continue
        if attribute in facts.attributes:
            return True, ""
        if name in _CONFIG_BASES:
            continue  # its own setattr serves the checkpoint's extra keys; its mixins add no model attributes
        if facts.open_attributes:
            why = why or facts.open_attributes
        pending.extend(facts.bases)
    return (None, why) if why else (False, "")


def _model_type_of(name: str, configs: dict[str, ConfigFacts], depth: int = 0) -> str | None:
    facts = configs.get(name)
    if facts is None or depth > 8:
        return None
    if facts.model_type is not None:
        return facts.model_type
    for base in facts.bases:
        found = _model_type_of(base, configs, depth + 1)
        if found is not None:
            return found
    return None


# ---- reading the source ------------------------------------------------------------------------


def parse_bounded(path: Path) -> ast.Module | None:
    """The file's tree; None when it is missing, too large, unreadable or not Python."""
    try:
        if not path.is_file() or path.stat().st_size > _MAX_BYTES:
            return None
    except OSError:
        return None
    tree = parse_file(str(path))
    return tree if isinstance(tree, ast.Module) else None


def _pairs(value: ast.expr) -> list[tuple[str, list[str]]] | None:
    """``OrderedDict([("a", "A"), ("b", ("B", "C"))])``, ``OrderedDict[str, str]([...])``,
    ``{"a": "A"}`` -> [("a", ["A"]), ("b", ["B", "C"])]; None for anything else."""
    items: list[tuple[ast.expr, ast.expr]] = []
    if isinstance(value, ast.Dict):
        items = [(k, v) for k, v in zip(value.keys, value.values, strict=True) if k is not None]
    elif isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], (ast.List, ast.Tuple)):
        func = value.func.value if isinstance(value.func, ast.Subscript) else value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in ("OrderedDict", "dict"):
            return None
        for elt in value.args[0].elts:
            if isinstance(elt, ast.Tuple) and len(elt.elts) == 2:
                items.append((elt.elts[0], elt.elts[1]))
    else:
        return None
    out: list[tuple[str, list[str]]] = []
    for key, val in items:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        names = [val] if isinstance(val, ast.Constant) else list(val.elts) if isinstance(val, (ast.Tuple, ast.List)) else []
        strings = [n.value for n in names if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value]
        if strings:
            out.append((key.value, strings))
    return out


def _assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    out: list[tuple[str, ast.expr]] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            out.append((stmt.targets[0].id, stmt.value))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            out.append((stmt.target.id, stmt.value))
    return out


def read_model_mappings(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Every ``*_MAPPING_NAMES`` literal of ``modeling_auto.py``, inverted: class name -> the
    model types that list it, in the order first listed."""
    classes: dict[str, list[str]] = {}
    for name, value in _assignments(tree):
        if not name.endswith("_MAPPING_NAMES"):
            continue
        for model_type, class_names in _pairs(value) or []:
            for class_name in class_names:
                types = classes.setdefault(class_name, [])
                if model_type not in types:
                    types.append(model_type)
    return {k: tuple(v) for k, v in classes.items()}


def read_config_names(tree: ast.Module, name: str = "CONFIG_MAPPING_NAMES", start: dict[str, str] | None = None) -> dict[str, str]:
    """``CONFIG_MAPPING_NAMES`` of ``configuration_auto.py``: model type -> config class name.
    transformers 5 builds it in ``auto_mappings.py`` (``start``: what was read there) and adds
    to it: ``CONFIG_MAPPING_NAMES.update({...})``, ``CONFIG_MAPPING_NAMES = OrderedDict(**{...},
    **CONFIG_MAPPING_NAMES)``. Statements are taken in order; a literal assignment replaces."""
    out: dict[str, str] = dict(start or {})
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        value = getattr(stmt, "value", None)
        if isinstance(target, ast.Name) and target.id == name and value is not None:
            pairs = _pairs(value)
            if pairs is not None:
                out = {model_type: names[0] for model_type, names in pairs}
            elif isinstance(value, ast.Call) and not value.args and all(kw.arg is None for kw in value.keywords):
                merged: dict[str, str] = {}
                for kw in value.keywords:
                    if isinstance(kw.value, ast.Name) and kw.value.id == name:
                        merged.update(out)
                    else:
                        merged.update({model_type: names[0] for model_type, names in _pairs(kw.value) or []})
                out = merged
        elif (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
            and stmt.value.func.attr == "update" and isinstance(stmt.value.func.value, ast.Name)
            and stmt.value.func.value.id == name and len(stmt.value.args) == 1
        ):
            out.update({model_type: names[0] for model_type, names in _pairs(stmt.value.args[0]) or []})
    return out


def _base_names(cls: ast.ClassDef) -> tuple[str, ...]:
    out = []
    for base in cls.bases:
        if isinstance(base, ast.Name):
            out.append(base.id)
        elif isinstance(base, ast.Attribute):
            out.append(base.attr)
    return tuple(out)


def _callee(call: ast.Call) -> str | None:
    """The config class a call builds: ``X(...)``, ``mod.X(...)``, ``self.sub_configs["k"](...)``
    (returned as ``sub_configs:k``); None for anything else (``CONFIG_MAPPING[t](...)``)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    if (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "sub_configs"
        and isinstance(func.slice, ast.Constant)
        and isinstance(func.slice.value, str)
    ):
        return f"sub_configs:{func.slice.value}"
    return None


def _sub_configs(cls: ast.ClassDef) -> tuple[dict[str, str] | None, bool]:
    """The class's ``sub_configs`` literal (key -> class name, "" for what is not a name), and
    whether the class assigns one at all."""
    for stmt in cls.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if not (isinstance(target, ast.Name) and target.id == "sub_configs"):
            continue
        value = getattr(stmt, "value", None)
        if not isinstance(value, ast.Dict) or any(k is None for k in value.keys):
            return None, True
        out: dict[str, str] = {}
        for key, val in zip(value.keys, value.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out[key.value] = val.id if isinstance(val, ast.Name) else val.attr if isinstance(val, ast.Attribute) else ""
        return out, True
    return None, False


def _is_sub_config_name(name: str) -> bool:
    return name in TEXT_CONFIG_NAMES or name.endswith("_config")


def _init_builds(cls: ast.ClassDef) -> dict[str, list[str | None]]:
    """In ``__init__``: for each sub-config attribute, what is built for it (assigned to
    ``self.<name>`` or first to a local of that name): class names, None for a build that
    names no class (``CONFIG_MAPPING[t](...)``); an empty list where ``self.<name>`` is only
    assigned what was passed in."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    builds: dict[str, list[str | None]] = {}
    if init is None:
        return builds
    for node in ast.walk(init):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                name = target.attr
                if _is_sub_config_name(name):
                    builds.setdefault(name, [])
            elif isinstance(target, ast.Name):
                name = target.id
            else:
                continue
            if not _is_sub_config_name(name):
                continue
            for call in (n for n in ast.walk(node.value) if isinstance(n, ast.Call)):
                callee = _callee(call)
                if callee is None or callee.endswith("Config") or callee.startswith("sub_configs:"):
                    builds.setdefault(name, []).append(callee)
    return builds


def _class_attributes(cls: ast.ClassDef) -> tuple[tuple[str, ...], str]:
    """What the class defines (see :attr:`ConfigFacts.attributes`), and why it may have more."""
    names: list[str] = []
    why = ""
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign):
            names.extend(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.append(stmt.target.id)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == "__getattr__":
                why = f"`{cls.name}` defines `__getattr__`"
            if any((dotted_name(d) or "").split(".")[-1] in ("property", "cached_property") for d in stmt.decorator_list):
                names.append(stmt.name)
            for node in ast.walk(stmt):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
                names.extend(t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self")
                if (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
                ):
                    if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                        names.append(node.args[1].value)
                    else:
                        why = why or f"`{cls.name}` sets attributes with `setattr(self, ...)`"
    for stmt in cls.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if not (isinstance(target, ast.Name) and target.id == "attribute_map"):
            continue
        value = getattr(stmt, "value", None)
        if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
            names.extend(str(k.value) for k in value.keys if isinstance(k, ast.Constant))
        elif value is not None:
            why = why or f"`{cls.name}.attribute_map` is not a literal"
    return tuple(dict.fromkeys(names)), why


def dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Call):
        return dotted_name(node.func)
    return None


def read_config_class(cls: ast.ClassDef) -> ConfigFacts:
    model_type: str | None = None
    for stmt in cls.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        value = getattr(stmt, "value", None)
        if isinstance(target, ast.Name) and target.id == "model_type" and isinstance(value, ast.Constant) and isinstance(value.value, str):
            model_type = value.value
    declared, has_subs = _sub_configs(cls)
    bases = _base_names(cls)
    attributes, open_attributes = _class_attributes(cls)
    if has_subs and declared is None:
        return ConfigFacts(
            cls.name, model_type, bases, unreadable=f"`{cls.name}.sub_configs` is not a literal",
            attributes=attributes, open_attributes=open_attributes,
        )
    named = declared or {}
    builds = _init_builds(cls)
    subs: list[SubConfig] = []
    for attribute in [*named, *(b for b in builds if b not in named)]:
        held = named.get(attribute)
        if held == _AUTO:
            subs.append(SubConfig(attribute, unknown=f"whatever model the checkpoint names (`{_AUTO}`)"))
            continue
        if held:
            subs.append(SubConfig(attribute, held))
            continue
        built = {named.get(b.split(":", 1)[1], "") if b and b.startswith("sub_configs:") else b for b in builds.get(attribute, [])}
        if len(built) == 1 and None not in built and "" not in built and _AUTO not in built:
            subs.append(SubConfig(attribute, str(next(iter(built)))))
            continue
        why = "set from the arguments" if not built else "built from the checkpoint's own model_type" if None in built else f"one of {', '.join(sorted(b or '?' for b in built))}"
        subs.append(SubConfig(attribute, unknown=why))
    return ConfigFacts(cls.name, model_type, bases, tuple(subs), attributes=attributes, open_attributes=open_attributes)


def read_config_classes(tree: ast.Module) -> list[ConfigFacts]:
    """Every top-level class of a configuration file that looks like a config (its name ends in
    ``Config`` or it states a ``model_type``)."""
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            facts = read_config_class(stmt)
            if stmt.name.endswith("Config") or facts.model_type is not None:
                out.append(facts)
    return out


def config_files(models: Path) -> list[Path]:
    """``models/*/configuration_*.py`` and ``models/deprecated/*/configuration_*.py``, sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(models):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.startswith("configuration_") and f.endswith(".py"))
    return found


def read_tables(root: Path, origin: str) -> TypeTables | None:
    """The tables of the transformers package folder ``root``; None where it has no readable
    ``models/auto/modeling_auto.py``."""
    auto = root / "models" / "auto"
    modeling = parse_bounded(auto / "modeling_auto.py")
    if modeling is None:
        return None
    classes = read_model_mappings(modeling)
    if not classes:
        return None
    mappings = parse_bounded(auto / "auto_mappings.py")  # transformers 5
    config_of = read_config_names(mappings) if mappings is not None else {}
    configuration = parse_bounded(auto / "configuration_auto.py")
    config_of = read_config_names(configuration, start=config_of) if configuration is not None else config_of
    configs: dict[str, ConfigFacts] = {}
    for path in [root / BASE_CONFIG_FILE, *config_files(root / "models")]:
        tree = parse_bounded(path)
        for facts in read_config_classes(tree) if tree is not None else []:
            configs.setdefault(facts.name, facts)
    # ``PretrainedConfig = PreTrainedConfig``: the base under both spellings.
    for name in _CONFIG_BASES:
        base = next((configs[b] for b in sorted(_CONFIG_BASES) if b in configs), None)
        if base is not None and name not in configs:
            configs[name] = dataclasses.replace(base, name=name)
    return TypeTables(origin, classes, config_of, configs)


def matches(words: tuple[str, ...], model_type: str) -> bool:
    """vLLM's test: some word of the list is a substring of the model type."""
    return any(word in model_type for word in words)
