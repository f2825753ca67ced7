"""The vLLM-only sections of ``rules/vllm.toml``: protocol anchors, registry layout, platforms.

These keys are read here, not in :mod:`eagle3lint.source.rulepack`, because only the vLLM analysis
uses them; a malformed value is a :class:`UsageError` naming the pack file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.source.rulepack import RulePack, rules_dir

SECTION_KINDS = ("generation", "draft", "pooling")


@dataclass(frozen=True)
class VllmPack:
    # [protocol]
    interfaces_module: str  # dotted, relative to the package: model_executor.models.interfaces
    protocol: str
    mixin: str
    setter: str
    getter_names: tuple[str, ...]
    capture_attribute: str
    allow_list_files: tuple[str, ...]
    any_model_type_modules: tuple[str, ...]
    # [model_types]: where an architecture's HF model types are read (see rules/vllm.toml)
    types_library: str
    requirement_files: tuple[str, ...]
    config_registry: str
    config_registry_name: str
    config_renames_name: str
    configs_folder: str
    architecture_suffixes: tuple[str, ...]
    # [registry]
    registry_module: str
    relative_package: str  # where registry module names without the package prefix live
    factories: tuple[str, ...]
    architecture_keywords: tuple[str, ...]
    merged_tables: tuple[str, ...]
    sections: dict[str, str]
    default_section: str
    # [platforms]
    platform_markers: tuple[str, ...]
    platform_folders: tuple[str, ...]
    # [pipeline]: the decoder flag the runner reads before EAGLE-3 with PP, the files it is read
    # in, and the calls a decoder packs earlier ranks' aux hidden states with
    pp_flag: str
    pp_guard_files: tuple[str, ...]
    pp_pack_calls: tuple[str, ...]
    # [runners]: the files each GPU model-runner generation runs (a folder ends with /), and the
    # environment variable that picks one; a guard read in one generation's files holds only there
    runner_files: dict[str, tuple[str, ...]]
    runner_env: str
    # [drafter_load]: the proposer whose load_model reads the target before the runner's
    # EAGLE-3 check, where its class and bases live, how the runner calls it, and the names its
    # multimodal branch and its single-stage (PP off) test use
    drafter_proposer: str
    drafter_files: tuple[str, ...]
    drafter_method: str
    drafter_runner_call: str
    drafter_multimodal_check: str
    drafter_multimodal_flag: str
    drafter_language_model: str
    drafter_pp_single: str
    # the multimodal branch's image-token copy: the method the target's class name is tested
    # with, the attribute holding the target's config, the engine's message for a missing key
    drafter_model_name: str
    drafter_target_config: str
    drafter_config_message: str
    drafter_hf_config: str
    # Other platforms' runners (vLLM's CPU build): where they load the drafter, for the report;
    # they do not choose among the GPU generations the `runner` option names.
    drafter_platform_runners: dict[str, tuple[str, ...]]
    # [plugins]: the registration call and the registry it is made on
    register_calls: tuple[str, ...]
    registry_names: tuple[str, ...]
    # top level
    walk_methods: tuple[str, ...]
    inner_model_class: str
    language_model_marker: str


def _platform_runners(drafter: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    table = _table(drafter, "platform_runners") if "platform_runners" in drafter else {}
    return {str(name): _strs(table, "drafter_load.platform_runners", name) for name in table}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{rules_dir() / 'vllm.toml'}: [{key}] must be a table")
    return value


def _str(table: dict[str, Any], section: str, key: str, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise UsageError(f"{rules_dir() / 'vllm.toml'}: {section + '.' if section else ''}{key} must be a string")
    return value


def _strs(table: dict[str, Any], section: str, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    value = table.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{rules_dir() / 'vllm.toml'}: {section + '.' if section else ''}{key} must be a list of strings")
    return tuple(value)


def _parse(pack: RulePack) -> VllmPack:
    data = pack.raw
    protocol = _table(data, "protocol")
    registry = _table(data, "registry")
    platforms = _table(data, "platforms")
    holders = _table(data, "holders")
    pipeline = _table(data, "pipeline")
    plugins = _table(data, "plugins")
    runners = _table(data, "runners")
    types = _table(data, "model_types")
    drafter = _table(data, "drafter_load")
    runner_files = _table(runners, "files") if "files" in runners else {}
    sections = registry.get("sections", {})
    if not isinstance(sections, dict) or not all(v in SECTION_KINDS for v in sections.values()):
        raise UsageError(
            f"{rules_dir() / 'vllm.toml'}: registry.sections values must be one of {', '.join(SECTION_KINDS)}"
        )
    default_section = _str(registry, "registry", "default_section", "generation")
    if default_section not in SECTION_KINDS:
        raise UsageError(f"{rules_dir() / 'vllm.toml'}: registry.default_section must be one of {', '.join(SECTION_KINDS)}")
    return VllmPack(
        interfaces_module=_str(protocol, "protocol", "module", "model_executor.models.interfaces"),
        protocol=_str(protocol, "protocol", "name", "SupportsEagle3"),
        mixin=_str(protocol, "protocol", "mixin", "EagleModelMixin"),
        setter=_str(protocol, "protocol", "setter", "set_aux_hidden_state_layers"),
        getter_names=_strs(protocol, "protocol", "getters", ("get_eagle3_default_aux_hidden_state_layers",)),
        capture_attribute=_str(protocol, "protocol", "capture_attribute", "aux_hidden_state_layers"),
        allow_list_files=_strs(protocol, "protocol", "allow_list_files"),
        any_model_type_modules=_strs(protocol, "protocol", "any_model_type_modules", ()),
        types_library=_str(types, "model_types", "library", "transformers"),
        requirement_files=_strs(types, "model_types", "requirement_files"),
        config_registry=_str(types, "model_types", "config_registry", ""),
        config_registry_name=_str(types, "model_types", "config_registry_name", "_CONFIG_REGISTRY"),
        config_renames_name=_str(types, "model_types", "config_renames_name", ""),
        configs_folder=_str(types, "model_types", "configs", ""),
        architecture_suffixes=_strs(types, "model_types", "architecture_suffixes", ("ForCausalLM",)),
        registry_module=_str(registry, "registry", "module", "model_executor.models.registry"),
        relative_package=_str(registry, "registry", "relative_package", "model_executor.models"),
        factories=_strs(registry, "registry", "factories", ("init_vllm_registered_model",)),
        architecture_keywords=_strs(registry, "registry", "architecture_keywords", ("architectures",)),
        merged_tables=_strs(registry, "registry", "merged"),
        sections={str(k): str(v) for k, v in sections.items()},
        default_section=default_section,
        platform_markers=_strs(platforms, "platforms", "markers", ("current_platform",)),
        platform_folders=_strs(platforms, "platforms", "folders"),
        pp_flag=_str(pipeline, "pipeline", "flag", ""),
        pp_guard_files=_strs(pipeline, "pipeline", "guard_files"),
        pp_pack_calls=_strs(pipeline, "pipeline", "pack_calls"),
        runner_files={str(name): _strs(runner_files, "runners.files", name) for name in runner_files},
        runner_env=_str(runners, "runners", "env", ""),
        drafter_proposer=_str(drafter, "drafter_load", "proposer", ""),
        drafter_files=_strs(drafter, "drafter_load", "files"),
        drafter_method=_str(drafter, "drafter_load", "method", "load_model"),
        drafter_runner_call=_str(drafter, "drafter_load", "runner_call", ""),
        drafter_multimodal_check=_str(drafter, "drafter_load", "multimodal_check", ""),
        drafter_multimodal_flag=_str(drafter, "drafter_load", "multimodal_flag", ""),
        drafter_language_model=_str(drafter, "drafter_load", "language_model", ""),
        drafter_pp_single=_str(drafter, "drafter_load", "pp_single", ""),
        drafter_model_name=_str(drafter, "drafter_load", "model_name", ""),
        drafter_target_config=_str(drafter, "drafter_load", "target_config", ""),
        drafter_config_message=_str(drafter, "drafter_load", "config_message", ""),
        drafter_hf_config=_str(drafter, "drafter_load", "hf_config", ""),
        drafter_platform_runners=_platform_runners(drafter),
        register_calls=_strs(plugins, "plugins", "register_calls", ("register_model",)),
        registry_names=_strs(plugins, "plugins", "registry_names", ("ModelRegistry",)),
        walk_methods=_strs(data, "", "walk_methods"),
        inner_model_class=_str(data, "", "inner_model_class", "."),
        language_model_marker=_str(holders, "holders", "language_model_marker", ""),
    )


_PARSED: dict[str, VllmPack] = {}


def vllm_pack(pack: RulePack) -> VllmPack:
    parsed = _PARSED.get(pack.digest)
    if parsed is None:
        parsed = _PARSED[pack.digest] = _parse(pack)
    return parsed
