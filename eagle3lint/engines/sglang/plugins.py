"""SGLang plugins: external model packages and ``sglang.srt.plugins`` functions.

An external model package (``SGLANG_EXTERNAL_MODEL_PACKAGE``, 0.5.6+) is a package whose
modules list classes in ``EntryClass``, as SGLang's own model files do; the registry keys them
by class name, and an external class named like a built-in replaces it. A plugin function may
also write the registry's dict directly (``ModelRegistry.models["Arch"] = Class``, read from the
rule pack's ``[plugins]``). Either way the plugin's class is the one checked for the name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from eagle3lint.model.models import ModelClass, classify, model_files
from eagle3lint.model.registrations import RegistrationShapes, read_registrations
from eagle3lint.source.engine import Engine
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.plugins import PluginPackage
from eagle3lint.source.sources import read_source, tree_path


def plugin_model_files(engine: Engine) -> list[Path]:
    """The plugins' files that define models (the pack's model patterns: ``EntryClass``)."""
    pattern = engine.pack.plugin_model_pattern
    files: list[Path] = []
    for path in engine.plugin_files():
        data = read_source(path)
        if isinstance(data, bytes) and (pattern is None or pattern.search(data.decode("utf-8", "replace"))):
            files.append(Path(path))
    return files


def _shapes(engine: Engine) -> RegistrationShapes:
    table = engine.pack.raw.get("plugins", {})
    names = table.get("registry_names", []) if isinstance(table, dict) else []
    registry_dict = table.get("registry_dict", "") if isinstance(table, dict) else ""
    return RegistrationShapes((), tuple(n for n in names if isinstance(n, str)), registry_dict if isinstance(registry_dict, str) else "")


def _plugin_of(engine: Engine, path: str) -> PluginPackage | None:
    resolved = tree_path(path)
    for plugin in engine.plugins:
        root = os.path.realpath(plugin.root)
        if resolved == root or resolved.startswith(root + os.sep):
            return plugin
    return None


def registered_models(index: ProjectIndex, known: list[ModelClass]) -> list[ModelClass]:
    """Classes a plugin writes into the registry's dict that no ``EntryClass`` lists already."""
    engine = index.engine
    seen = {m.ref for m in known}
    found: list[ModelClass] = []
    for plugin in engine.plugins:
        for reg in read_registrations(index, plugin, _shapes(engine)):
            ref = ClassRef(reg.module, reg.class_name)
            summary = index.class_summary(ref)
            module = index.module(ref.module)
            if summary is None or module is None:
                continue
            where = f"{Path(reg.path).relative_to(plugin.source_root).as_posix()}:{reg.line}"
            if ref in seen:
                model = next(m for m in [*known, *found] if m.ref == ref)
                model.origin = f"registered by {plugin.label} at {where} as {reg.architecture}"
                continue
            seen.add(ref)
            kind, reason = classify(index, ref)
            model = ModelClass(ref, module.path, summary, kind, reason, reg.architecture, architectures=[reg.architecture])
            model.origin = f"registered by {plugin.label} at {where} as {reg.architecture}"
            model.registered_in = reg.path
            found.append(model)
    return found


def mark_plugin_models(index: ProjectIndex, models: list[ModelClass]) -> None:
    """Say where each plugin model comes from, and which built-in class of the same name (the
    registry's key) it replaces."""
    engine = index.engine
    builtins: dict[str, ClassRef] | None = None
    for model in models:
        plugin = _plugin_of(engine, model.path)
        if plugin is None:
            continue
        if not model.origin:
            where = Path(model.path).relative_to(plugin.source_root).as_posix() if Path(model.path).is_absolute() else model.path
            model.origin = f"from {plugin.label} (EntryClass in {where})"
        if builtins is None:
            builtins = _builtin_classes(engine, {a for m in models for a in (m.architectures or [m.summary.name])})
        for name in model.architectures or [model.summary.name]:
            replaced = builtins.get(name)
            if replaced is not None and replaced != model.ref:
                model.replaces = replaced
                model.origin += f"; replaces {engine.name}'s `{name}` ({replaced.module}): the external class wins for that architecture"
                break


def _builtin_classes(engine: Engine, names: set[str]) -> dict[str, ClassRef]:
    """Where the engine's own models folders define classes of these names (a text search:
    nothing there is parsed for it)."""
    if not names:
        return {}
    pattern = re.compile(rb"^class (" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\b", re.M)
    found: dict[str, ClassRef] = {}
    for path in model_files(engine):
        data = read_source(str(path))
        if not isinstance(data, bytes) or not any(n.encode() in data for n in names):
            continue
        for match in pattern.finditer(data):
            name = match.group(1).decode()
            rel = path.relative_to(engine.source_root).with_suffix("")
            module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            found.setdefault(name, ClassRef(module, name))
    return found
