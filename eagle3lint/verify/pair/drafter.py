"""Which target layers a drafter was trained on, from its ``config.json``: the key that names its
ids tells the framework that wrote it (``[[framework]]`` in ``verify/common.toml``, each with the
place its convention is documented), and the framework tells what an id means.

Two meanings exist: *output* (SpecForge, AngelSlim: id k is decoder layer k's output, state
k + 1) and *hidden_states* (vLLM speculators, the EAGLE reference code: id k is a transformers
forward's ``hidden_states[k]``, the input of layer k, state k). A config that names no ids does
not say what it was trained on: unknown, with the frameworks' shared default as what decides it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.configs import ModelConfig
from eagle3lint.verify.knowledge import layer_expression
from eagle3lint.verify.model_files import MAX_SIZE, describe
from eagle3lint.verify.pair.facts import Framework

MEANINGS = ("output", "hidden_states")
# More aux layers than any drafter's fusion layer takes: not layer ids (a hostile config's list).
MAX_IDS = 256


@dataclass
class DrafterIds:
    ids: list[int] | None = None  # the ids its config names (None: it names none)
    key: str | None = None  # where: "eagle_config.eagle_aux_hidden_state_layer_ids"
    framework: Framework | None = None
    meaning: str | None = None  # "output" | "hidden_states"
    meaning_from: str = ""  # the framework's documentation, or the command line
    invalid: str = ""  # a value that is not a list of layer ids
    # Every key holding ids, by name (a drafter may carry several frameworks' keys).
    found: dict[str, Any] = field(default_factory=dict)

    def states(self) -> list[int] | None:
        """The hidden states the drafter was trained on (see ``capture_map``)."""
        if self.ids is None or self.meaning is None:
            return None
        shift = 1 if self.meaning == "output" else 0
        return [i + shift for i in self.ids]


def layer_ids(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and len(value) <= MAX_IDS and all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_SIZE for v in value):
        return list(value)
    return None


def read_drafter_ids(
    drafter: ModelConfig, frameworks: tuple[Framework, ...], override: str | None = None, num_layers: int | None = None,
) -> DrafterIds:
    """The drafter's ids and what they mean, decided by evidence in this order: ``override``
    (``output``/``hidden_states``, what the user says), the drafter's own metadata (a key only
    one framework writes beside its ids), the shape of the list for a target of ``num_layers``
    layers (see :func:`_meaning_from_shape`), and only then the documented convention of the
    framework whose key names the ids."""
    out = DrafterIds()
    keys = [k for f in frameworks for k in f.id_keys]
    for key in dict.fromkeys(keys):
        value = drafter.get(key)
        if value is not None:
            out.found[key] = value
    for framework in frameworks:
        marked = not framework.markers or any(drafter.get(m) is not None for m in framework.markers)
        chosen = next((k for k in framework.id_keys if k in out.found), None)
        if chosen is None or not marked:
            continue
        key = chosen
        out.key, out.framework = key, framework
        ids = layer_ids(out.found[key])
        if ids is None:
            out.invalid = f"`{key}` is {describe(out.found[key])}, not a list of at most {MAX_IDS} integers"
            return out
        out.ids = ids
        out.meaning = framework.meaning
        out.meaning_from = f"{framework.name}'s convention ({framework.reference})"
        if framework.markers:
            marker = next(m for m in framework.markers if drafter.get(m) is not None)
            out.meaning_from = f"the drafter's metadata (`{marker}`: written by {framework.name}), {framework.name}'s convention ({framework.reference})"
        elif num_layers is not None:
            # The key alone does not say who wrote the list: several trainers write it, each
            # with its own meaning (sgl-project/sglang#25454).
            shaped = _meaning_from_shape(ids, (framework, *frameworks), num_layers)
            if shaped is not None:
                out.meaning, why = shaped
                out.meaning_from = f"{why} (the key `{key}` alone does not say which trainer wrote it)"
        break
    if override is not None:
        out.meaning = override
        out.meaning_from = f"the command line (--drafter-ids {override.replace('_', '-')})"
    return out


def framework_defaults(frameworks: tuple[Framework, ...], num_layers: int) -> list[tuple[Framework, list[int]]]:
    """Each framework's default states for a target of ``num_layers`` layers."""
    out = []
    for framework in frameworks:
        if not framework.default:
            continue
        try:
            ids = [layer_expression(e, num_layers) for e in framework.default]
        except UsageError:  # a bad expression in the data: that framework is left out
            continue
        shift = 1 if framework.meaning == "output" else 0
        out.append((framework, [i + shift for i in ids]))
    return out


def _meaning_from_shape(ids: list[int], frameworks: tuple[Framework, ...], num_layers: int) -> tuple[str, str] | None:
    """What a list's shape says its ids mean: a trainer's default list for this depth, a last id
    only one meaning reaches, or the first id (1 is the output-of-layer default, 2 the input-of-
    layer one, 0 the embeddings, which no trainer feeds). None where the shape says nothing."""
    if not ids:
        return None
    for framework in frameworks:
        if not framework.default or framework.meaning not in MEANINGS:
            continue
        try:
            default = [layer_expression(e, num_layers) for e in framework.default]
        except UsageError:
            continue
        if ids == default:
            return framework.meaning, f"the list is {framework.name}'s default for a {num_layers}-layer target ({framework.reference})"
    if max(ids) == num_layers:
        return "hidden_states", f"the last id {num_layers} is the state after all {num_layers} layers, which only the input-of-layer reading names"
    first = min(ids)
    if first == 0:
        return "output", "the first id 0 read as a layer input is the embeddings, which no trainer feeds: the ids are layer outputs"
    if first == 2:
        return "hidden_states", "the first id 2 is the input-of-layer convention's first layer (the output-of-layer one starts at 1)"
    if first == 1:
        return "output", "the first id 1 is the output-of-layer convention's first layer (the input-of-layer one starts at 2)"
    return None
