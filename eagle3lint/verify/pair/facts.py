"""What the pair pre-flight must know about an engine that its code does not say by itself: the
names to start reading from (the setter, the default getter, the capture state), where the
runner and the launch checks live, and how a launch flag is spelled. The ``[pair]`` table of
each engine's ``verify.toml``; every value is checked, a bad one is a usage error naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3lint.common.errors import UsageError


@dataclass(frozen=True)
class PairFacts:
    # The method the runner calls on the target with the drafter's ids.
    setter: str = ""
    # How the runner picks ids the drafter does not name: "none" (it passes None and the setter
    # chooses) or "getter" (it asks the first of ``default_getters`` the model has).
    default_from: str = "none"
    default_getters: tuple[str, ...] = ()
    # The attributes a decoder tests a layer index against, and the per-layer markers it reads.
    capture_attributes: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()
    # Where the runner reads the drafter's ids, per runner generation ("" for every one).
    id_files: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Key names that may hold layer ids, and the drafter sub-configs that may hold them.
    id_keys: tuple[str, ...] = ()
    id_sections: tuple[str, ...] = ()
    # Where the draft model's config comes from in a draft class's ``__init__`` besides its
    # ``config`` parameter (vLLM: ``vllm_config.speculative_config.draft_model_config.hf_config``).
    draft_config_paths: tuple[str, ...] = ()
    # The attribute a draft model keeps its fusion layer in (its input width is the aux count).
    fc_attribute: str = "fc"
    # Files holding the engine's argument checks, and the ServerArgs fields of the launch flags.
    launch_files: tuple[str, ...] = ()
    launch_fields: tuple[tuple[str, str], ...] = ()
    # Fields the launch sets for EAGLE-3 whatever the user gives (the algorithm's name).
    launch_values: tuple[tuple[str, str], ...] = ()
    # The argument checks: which functions of those files (a regular expression on their
    # names), the names the argument object goes by, calls that return it (a view of it) or
    # the target's model config, and calls that set its fields from their keywords.
    launch_functions: str = ""
    # The argument class by the engine's own import path, where the files above have no checks
    # (releases keep it in other modules: vLLM 0.10's config/__init__.py, 0.9's config.py).
    launch_class: str = ""
    launch_objects: tuple[str, ...] = ()
    launch_views: tuple[str, ...] = ()
    launch_model_config: tuple[str, ...] = ()
    launch_setters: tuple[str, ...] = ()
    # The step count ``verify`` launches with when none is given (vLLM needs one).
    default_steps: int | None = None
    # The server flag that turns CUDA graphs off.
    no_cuda_graph_flags: tuple[str, ...] = ()

    def launch_field(self, name: str) -> str:
        return dict(self.launch_fields).get(name, "")

    def files_for(self, runner: str) -> tuple[str, ...]:
        table = dict(self.id_files)
        return table.get(runner) or table.get("", ())


def _strings(path: Path, table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: [pair] {key} must be a list of strings")
    return tuple(value)


def _string_table(path: Path, table: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError(f"{path}: [pair] {key} must be a table of strings")
    return tuple(sorted(value.items()))


def parse_pair_facts(path: Path, raw: Any) -> PairFacts:
    if raw is None:
        return PairFacts()
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: [pair] must be a table")
    files = raw.get("id_files", {})
    if not isinstance(files, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in files.values()):
        raise UsageError(f"{path}: [pair] id_files must map runner names to lists of files")
    default_from = raw.get("default_from", "none")
    if default_from not in ("none", "getter"):
        raise UsageError(f"{path}: [pair] default_from must be 'none' or 'getter'")
    steps = raw.get("default_steps")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise UsageError(f"{path}: [pair] default_steps must be a positive integer")
    for key in ("setter", "fc_attribute", "launch_functions"):
        if not isinstance(raw.get(key, ""), str):
            raise UsageError(f"{path}: [pair] {key} must be a string")
    return PairFacts(
        setter=raw.get("setter", ""),
        default_from=default_from,
        default_getters=_strings(path, raw, "default_getters"),
        capture_attributes=_strings(path, raw, "capture_attributes"),
        markers=_strings(path, raw, "markers"),
        id_files=tuple(sorted((k, tuple(v)) for k, v in files.items())),
        id_keys=_strings(path, raw, "id_keys"),
        id_sections=_strings(path, raw, "id_sections"),
        draft_config_paths=_strings(path, raw, "draft_config_paths"),
        fc_attribute=raw.get("fc_attribute", "fc"),
        launch_files=_strings(path, raw, "launch_files"),
        launch_fields=_string_table(path, raw, "launch_fields"),
        launch_values=_string_table(path, raw, "launch_values"),
        launch_functions=raw.get("launch_functions", ""),
        launch_class=raw.get("launch_class", ""),
        launch_objects=_strings(path, raw, "launch_objects"),
        launch_views=_strings(path, raw, "launch_views"),
        launch_model_config=_strings(path, raw, "launch_model_config"),
        launch_setters=_strings(path, raw, "launch_setters"),
        default_steps=steps,
        no_cuda_graph_flags=_strings(path, raw, "no_cuda_graph_flags"),
    )


@dataclass(frozen=True)
class DrafterKey:
    """A drafter config key that changes what the drafter computes (``[[drafter_key]]`` in
    ``verify/common.toml``): a release that never reads it runs the drafter without it."""

    name: str  # dotted: "norm_before_fc", "eagle_config.use_aux_hidden_state"
    default: Any  # the value that means "off": a drafter at it needs nothing from the release
    effect: str
    outcome: str  # what ignoring it does: "silent" (or "crash")
    reference: str
    # Releases known to read it, for the message ("sglang 0.5.21", "vllm 0.18.0"), by engine.
    read_since: tuple[tuple[str, str], ...] = ()

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def parse_drafter_keys(path: Path, entries: Any) -> tuple[DrafterKey, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{path}: [[drafter_key]] must be a list of tables")
    keys = []
    for entry in entries:
        name = entry.get("name")
        outcome = entry.get("outcome", "silent")
        since = entry.get("read_since", {})
        if not isinstance(name, str) or not name or outcome not in ("silent", "crash"):
            raise UsageError(f"{path}: a [[drafter_key]] needs a 'name' and an outcome of silent or crash")
        if not isinstance(since, dict) or not all(isinstance(v, str) for v in since.values()):
            raise UsageError(f"{path}: drafter_key {name}: read_since must map engines to versions")
        keys.append(
            DrafterKey(
                name=name,
                default=entry.get("default"),
                effect=str(entry.get("effect", "")),
                outcome=outcome,
                reference=str(entry.get("reference", "")),
                read_since=tuple(sorted(since.items())),
            )
        )
    return tuple(keys)


@dataclass(frozen=True)
class Framework:
    """A drafter-training framework: how its configs name the target layers and what an id
    means in it (``[[framework]]`` in ``verify/common.toml``)."""

    name: str
    # Keys (dotted) that hold its layer ids, and keys whose presence marks its configs.
    id_keys: tuple[str, ...]
    markers: tuple[str, ...]
    # "output": id k is decoder layer k's output; "hidden_states": id k is hidden_states[k] of a
    # transformers forward (the input of layer k; 0 is the embeddings).
    meaning: str
    # Its default ids over n, when a config names none ("" where it has none).
    default: tuple[str, ...]
    reference: str


def parse_frameworks(path: Path, entries: Any) -> tuple[Framework, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{path}: [[framework]] must be a list of tables")
    out = []
    for entry in entries:
        name = entry.get("name")
        meaning = entry.get("meaning")
        if not isinstance(name, str) or meaning not in ("output", "hidden_states"):
            raise UsageError(f"{path}: a [[framework]] needs a 'name' and a meaning of output or hidden_states")
        out.append(
            Framework(
                name=name,
                id_keys=_strings(path, entry, "id_keys"),
                markers=_strings(path, entry, "markers"),
                meaning=meaning,
                default=_strings(path, entry, "default"),
                reference=str(entry.get("reference", "")),
            )
        )
    return tuple(out)
