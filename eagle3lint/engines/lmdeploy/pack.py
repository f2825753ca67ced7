"""The ``[lmdeploy]`` table of ``rules/lmdeploy.toml``: where the engine states its contract.

Read here, not in :mod:`eagle3lint.source.rulepack`, because only the LMDeploy analysis uses it; a
malformed value is a :class:`UsageError` naming the pack file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.source.rulepack import RulePack, rules_dir


@dataclass(frozen=True)
class LmdeployPack:
    # The architecture map.
    module_map: str
    maps: tuple[str, ...]
    device_maps: str
    removed_map: str
    # The config builders.
    builders_folder: str
    builder_base: str
    default_builder: str
    build_method: str
    arguments: tuple[tuple[str, Any], ...]
    after_file: str
    after_function: str
    paradigm_attribute: str
    paradigm_value: str
    layers_attribute: str
    config_registry: str
    architecture_suffixes: tuple[str, ...]
    # What a target the builders never opt in runs into.
    strategies_file: str
    plain_inputs_file: str
    agent_file: str
    dummy_call: str
    # The build context.
    context_attribute: str
    context_file: str
    context_function: str
    context_field: str
    method_parameter: str
    # The data flow.
    aux_key: str
    fallback_files: tuple[str, ...]
    graph_method: str
    graph_mixin_file: str


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise UsageError(f"{where}: [{key}] must be a table")
    return value


def _string(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where}: '{key}' must be a non-empty string")
    return value


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{where}: '{key}' must be a list of strings")
    return tuple(value)


def _parse(pack: RulePack) -> LmdeployPack:
    where = str(rules_dir() / f"{pack.engine}.toml")
    top = _table(pack.raw, "lmdeploy", where)
    builders = _table(top, "builders", f"{where} [lmdeploy]")
    paradigm = _table(top, "paradigm", f"{where} [lmdeploy]")
    context = _table(top, "build_context", f"{where} [lmdeploy]")
    flow = _table(top, "flow", f"{where} [lmdeploy]")
    arguments = builders.get("arguments", {})
    after = builders.get("after", {})
    if not isinstance(arguments, dict) or not isinstance(after, dict):
        raise UsageError(f"{where}: [lmdeploy.builders] 'arguments' and 'after' must be tables")
    return LmdeployPack(
        module_map=_string(top, "module_map", where),
        maps=_strings(top, "maps", where),
        device_maps=_string(top, "device_maps", where),
        removed_map=_string(top, "removed_map", where),
        builders_folder=_string(builders, "folder", where),
        builder_base=_string(builders, "base", where),
        default_builder=_string(builders, "default", where),
        build_method=_string(builders, "method", where),
        arguments=tuple(sorted(arguments.items())),
        after_file=_string(after, "file", where),
        after_function=_string(after, "function", where),
        paradigm_attribute=_string(builders, "paradigm_attribute", where),
        paradigm_value=_string(builders, "paradigm_value", where),
        layers_attribute=_string(builders, "layers_attribute", where),
        config_registry=_string(builders, "config_registry", where),
        architecture_suffixes=_strings(builders, "architecture_suffixes", where),
        strategies_file=_string(paradigm, "strategies", where),
        plain_inputs_file=_string(paradigm, "plain_inputs", where),
        agent_file=_string(paradigm, "agent", where),
        dummy_call=_string(paradigm, "call", where),
        context_attribute=_string(context, "attribute", where),
        context_file=_string(context, "file", where),
        context_function=_string(context, "function", where),
        context_field=_string(context, "field", where),
        method_parameter=_string(context, "method_parameter", where),
        aux_key=_string(flow, "aux_key", where),
        fallback_files=_strings(flow, "fallback_files", where),
        graph_method=_string(flow, "graph_method", where),
        graph_mixin_file=_string(flow, "graph_mixin_file", where),
    )


_PARSED: dict[str, LmdeployPack] = {}


def lmdeploy_pack(pack: RulePack) -> LmdeployPack:
    parsed = _PARSED.get(pack.digest)
    if parsed is None:
        parsed = _PARSED[pack.digest] = _parse(pack)
    return parsed
