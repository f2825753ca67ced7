"""Where the vLLM patterns stop: what they refuse to write, and why (shown as a suggestion)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.helpers import FIXTURES, make_tree, run_json

MODELS = "vllm/model_executor/models"
REGISTRY_HEAD = '"""Architecture name -> (module, class)."""\n\n_TEXT_GENERATION_MODELS = {\n    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n'


def _tree(tmp_path: Path, models: dict[str, str], registry: dict[str, str]) -> Path:
    """The declare golden's engine (interfaces, runner, llama) with these model files and
    registrations (architecture -> module) instead of its own."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "fix_vllm_declare" / "before", root)
    for path in (root / MODELS).glob("*.py"):
        if path.name not in ("__init__.py", "interfaces.py", "llama.py"):
            path.unlink()
    entries = "".join(f'    "{arch}": ("{module}", "{arch}"),\n' for arch, module in registry.items())
    files: dict[str, str | bytes] = {f"{MODELS}/{name}": text for name, text in models.items()}
    files[f"{MODELS}/registry.py"] = REGISTRY_HEAD + entries + "}\n\n_VLLM_MODELS = {**_TEXT_GENERATION_MODELS}\n"
    return make_tree(root, files)


def _fixes(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    _, report = run_json("check", root / MODELS)
    return {(f["code"], f["class"]): f["fix"] for f in report["findings"] if f.get("fix")}


LATE = '''\
class NoImportsForCausalLM:
    """Its imports come after it: there is nowhere above it to put a new import."""

    def __init__(self, *, vllm_config, prefix=""):
        self.model = LlamaModel(vllm_config=vllm_config, prefix=prefix)
        self.lm_head = None


from .llama import LlamaModel  # noqa: E402
'''

TAKEN = '''\
from torch import nn

from .llama import LlamaModel
from .other import Marker as SupportsEagle3


class TakenForCausalLM(nn.Module):
    """The protocol's name already means something else here."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix=prefix)
        self.lm_head = nn.Linear(8, 8)
'''

STALE_USED = '''\
from .llama import LlamaForCausalLM


class UsedForCausalLM(LlamaForCausalLM):
    def get_eagle3_aux_hidden_state_layers(self):
        return (1, 2, 3)

    def layers_for_logging(self):
        return self.get_eagle3_aux_hidden_state_layers()
'''

STALE_ELSEWHERE = '''\
from .llama import LlamaForCausalLM


class ElsewhereForCausalLM(LlamaForCausalLM):
    """Its former getter is called from another module."""

    def get_eagle3_aux_hidden_state_layers(self):
        return (1, 2, 3)
'''

STALE_FORWARDS = '''\
from .llama import LlamaForCausalLM, LlamaModel


class ForwardsForCausalLM(LlamaForCausalLM):
    """Forwards the former getter to a decoder that has neither name."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.inner = LlamaModel(vllm_config=vllm_config, prefix=prefix)

    def get_eagle3_aux_hidden_state_layers(self):
        return self.inner.get_eagle3_aux_hidden_state_layers()
'''

CALLER = '''\
from .llama import LlamaForCausalLM


class CallerForCausalLM(LlamaForCausalLM):
    def log_layers(self, other):
        return other.get_eagle3_aux_hidden_state_layers()
'''

COLLECT_NAMES = '''\
from itertools import islice

from torch import nn

from .interfaces import EagleModelMixin, SupportsEagle3


class BusyLayer(nn.Module):
    def forward(self, positions, hidden_states, residual):
        hidden_states, residual = self.norm(hidden_states, residual)
        return self.mlp(hidden_states), residual


class BusyModel(nn.Module, EagleModelMixin):
    """Uses `idx` already: the loop index the fix adds takes the next name."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer = 0, 4
        self.layers = nn.ModuleList([BusyLayer() for _ in range(4)])

    def forward(self, input_ids, positions, idx=None):
        hidden_states, residual = input_ids, None
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states


class BusyForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = BusyModel(vllm_config=vllm_config, prefix=prefix)


class AuxModel(nn.Module, EagleModelMixin):
    """Already has a variable named like the one the fix adds."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.layers = nn.ModuleList([nn.Identity() for _ in range(4)])

    def forward(self, input_ids, positions):
        hidden_states, residual, aux_hidden_states = input_ids, None, []
        for layer in self.layers:
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states


class AuxForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = AuxModel(vllm_config=vllm_config, prefix=prefix)
'''


def test_refusals_are_display_only_with_the_reason(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {"late.py": LATE, "taken.py": TAKEN, "other.py": "class Marker:\n    pass\n", "stale_used.py": STALE_USED},
        {"NoImportsForCausalLM": "late", "TakenForCausalLM": "taken", "UsedForCausalLM": "stale_used"},
    )
    fixes = _fixes(root)
    late = fixes[("E3L013", "NoImportsForCausalLM")]
    assert late["applicability"] == "display-only"
    assert "no module-level import to put `from vllm.model_executor.models.interfaces import SupportsEagle3` after" in late["description"]
    taken = fixes[("E3L013", "TakenForCausalLM")]
    assert taken["applicability"] == "display-only" and "`SupportsEagle3` already names something else" in taken["description"]
    used = fixes[("E3L014", "UsedForCausalLM")]
    assert used["applicability"] == "display-only" and "is still used on line 9" in used["description"]


def test_a_rename_that_would_break_a_caller_is_only_shown(tmp_path: Path) -> None:
    registry = {"ElsewhereForCausalLM": "stale_elsewhere", "CallerForCausalLM": "caller"}
    root = _tree(tmp_path, {"stale_elsewhere.py": STALE_ELSEWHERE, "caller.py": CALLER}, registry)
    elsewhere = _fixes(root)[("E3L014", "ElsewhereForCausalLM")]
    assert elsewhere["applicability"] == "display-only"
    assert "is also named in" in elsewhere["description"] and "caller.py" in elsewhere["description"]


def test_a_forwarded_rename_needs_a_delegate_with_either_name(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"stale_forwards.py": STALE_FORWARDS}, {"ForwardsForCausalLM": "stale_forwards"})
    forwards = _fixes(root)[("E3L014", "ForwardsForCausalLM")]
    assert forwards["applicability"] == "display-only"
    assert "`LlamaModel` (`self.inner`) has neither `get_eagle3_aux_hidden_state_layers` nor" in forwards["description"]


def test_collect_picks_free_names_and_leaves_a_taken_one(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"collect_names.py": COLLECT_NAMES}, {"BusyForCausalLM": "collect_names", "AuxForCausalLM": "collect_names"})
    fixes = _fixes(root)
    busy = fixes[("E3L011", "BusyForCausalLM")]
    assert busy["applicability"] == "unsafe"
    assert "+        for layer_idx, layer in enumerate(self.layers[self.start_layer:self.end_layer], start=self.start_layer):" in busy["diff"]
    assert "+            self._maybe_add_hidden_state(aux_hidden_states, layer_idx + 1, hidden_states, residual)" in busy["diff"]
    aux = fixes[("E3L011", "AuxForCausalLM")]
    assert aux["applicability"] == "display-only" and "already uses the name `aux_hidden_states`" in aux["description"]
