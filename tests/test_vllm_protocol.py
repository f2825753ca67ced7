"""Reading the protocol from interfaces.py, and the check function's guard at call sites."""

from __future__ import annotations

import ast
import textwrap

from eagle3lint.engines.vllm.pack import vllm_pack
from eagle3lint.engines.vllm.protocol import parse_interfaces
from eagle3lint.source.rulepack import load_pack
from tests.helpers import FIXTURES, run_cli, run_json

STUB_PROTOCOL = """
@runtime_checkable
class SupportsEagleBase(Protocol):
    has_own_lm_head: bool = False

@runtime_checkable
class SupportsEagle3(SupportsEagleBase, Protocol):
    supports_eagle3: ClassVar[Literal[True]] = True

    def set_aux_hidden_state_layers(self, layers) -> None:
        \"\"\"Doc.\"\"\"
        ...

    def get_eagle3_aux_hidden_state_layers(self):
        raise NotImplementedError

@overload
def supports_eagle3(model: type[object]) -> bool: ...

def supports_eagle3(model) -> bool:
    return isinstance(model, SupportsEagle3)
"""

# The 0.18.0 shape: `.model` is required (asserted), then the mixin is asserted on it.
REQUIRED_INNER = """
class EagleModelMixin:
    aux_hidden_state_layers = ()

    def _set_aux_hidden_state_layers(self, layers):
        self.aux_hidden_state_layers = layers
        self._cache_layout()

    def _cache_layout(self):
        self.slots = len(self.aux_hidden_state_layers)

    def _maybe_add_hidden_state(self, aux, idx, hidden, residual):
        if idx in self.aux_hidden_state_layers:
            aux.append(hidden)
        return aux

class SupportsEagle3(Protocol):
    supports_eagle3: ClassVar[Literal[True]] = True

    def set_aux_hidden_state_layers(self, layers) -> None:
        parent_ref = self
        if hasattr(self, "get_language_model"):
            parent_ref = self.get_language_model()
        elif hasattr(self, "language_model"):
            parent_ref = self.language_model
        assert hasattr(parent_ref, "model"), "needs a model"
        assert isinstance(parent_ref.model, EagleModelMixin), "needs the mixin"
        parent_ref.model._set_aux_hidden_state_layers(layers)

    def get_eagle3_default_aux_hidden_state_layers(self):
        parent_ref = self
        if hasattr(self, "language_model"):
            parent_ref = self.language_model
        assert hasattr(parent_ref, "model")
        assert hasattr(parent_ref.model, "layers")
        return (2,)
"""


def _parse(source: str):  # type: ignore[no-untyped-def]
    tree = ast.parse(textwrap.dedent(source))
    vpack = vllm_pack(load_pack("vllm"))
    return parse_interfaces(tree, "vllm.model_executor.models.interfaces", "vllm/model_executor/models/interfaces.py", vpack)


def test_members_flags_and_stub_bodies() -> None:
    proto = _parse(STUB_PROTOCOL)
    assert proto is not None
    assert proto.chain == ["SupportsEagle3", "SupportsEagleBase"]
    assert proto.runtime_checkable
    kinds = {m.name: (m.kind, m.body, m.owner) for m in proto.members}
    assert kinds == {
        "supports_eagle3": ("flag", None, "SupportsEagle3"),
        "set_aux_hidden_state_layers": ("method", "stub", "SupportsEagle3"),
        "get_eagle3_aux_hidden_state_layers": ("method", "stub", "SupportsEagle3"),
        "has_own_lm_head": ("attribute", None, "SupportsEagleBase"),
    }
    assert proto.member("supports_eagle3").value == "True"  # type: ignore[union-attr]
    # The overload is skipped: the check function is the one that does the isinstance.
    assert proto.check_function == "supports_eagle3"
    assert proto.walks == {}
    assert proto.mixin is None


def test_no_protocol_in_older_trees() -> None:
    assert _parse("class SupportsPP(Protocol):\n    supports_pp: ClassVar[bool] = True\n") is None


def test_default_walk_with_required_inner_and_mixin_assertion() -> None:
    proto = _parse(REQUIRED_INNER)
    assert proto is not None
    walk = proto.walks["set_aux_hidden_state_layers"]
    assert [d.render() for d in walk.delegations] == ["self.get_language_model()", "self.language_model"]
    assert (walk.inner, walk.inner_optional) == ("model", False)
    assert walk.asserted_mixin == "EagleModelMixin"
    assert walk.mixin_call == "_set_aux_hidden_state_layers"
    getter = proto.walks["get_eagle3_default_aux_hidden_state_layers"]
    assert [d.render() for d in getter.delegations] == ["self.language_model"]
    assert getter.required_attributes == ["layers"]
    assert getter.asserted_mixin is None
    # The setter's own helper reads the layer ids but collects nothing.
    assert proto.mixin is not None
    assert proto.mixin.setter == "_set_aux_hidden_state_layers"
    assert proto.mixin.collect_methods == ["_maybe_add_hidden_state"]


def test_default_walk_with_optional_inner() -> None:
    proto = _parse((FIXTURES / "vllm_modern/vllm/model_executor/models/interfaces.py").read_text())
    assert proto is not None
    walk = proto.walks["set_aux_hidden_state_layers"]
    assert (walk.inner, walk.inner_optional, walk.asserted_mixin) == ("model", True, "EagleModelMixin")
    assert "then .model (if present)" in walk.describe()


def test_contract_json_carries_the_protocol_and_check_sites() -> None:
    code, data = run_json("contract", FIXTURES / "vllm_stubs")
    assert code == 0
    vllm = data["vllm"]
    assert vllm["protocol"]["name"] == "SupportsEagle3"
    assert vllm["protocol"]["check_function"] == "supports_eagle3"
    (site,) = vllm["check_sites"]
    assert (site["path"], site["argument"], site["guard"]) == ("vllm/v1/worker/gpu_model_runner.py", "self.model", "error")
    guards = {m["name"]: m["guard"] for m in data["members"] if m["sites"]}
    assert guards == {"set_aux_hidden_state_layers": {"target": "error"}, "get_eagle3_aux_hidden_state_layers": {"target": "error"}}


def test_contract_guard_after_a_raising_check() -> None:
    # `if not supports_eagle3(m): raise` guards the calls after it with an error.
    code, data = run_json("contract", FIXTURES / "vllm_modern")
    assert code == 0
    sites = [s for m in data["members"] for s in m["sites"]]
    assert sites and all(s["guard"] == "error" for s in sites)
    assert data["vllm"]["protocol"]["default_walks"]["set_aux_hidden_state_layers"]["inner_optional"] is True


def test_contract_without_protocol_is_call_sites_alone() -> None:
    code, data = run_json("contract", FIXTURES / "vllm_legacy")
    assert code == 0
    assert data["vllm"]["protocol"] is None
    assert data["vllm"]["check_sites"] == []
    # The config's HF model_type allow-list of older releases is part of the contract.
    assert data["vllm"]["model_type_allow_list"] == {"path": "vllm/config.py", "line": 3, "model_types": ["llama"]}
    guards = {s["guard"] for m in data["members"] for s in m["sites"]}
    assert guards == {"none"}


def test_contract_text_describes_the_default_walk() -> None:
    done = run_cli("contract", FIXTURES / "vllm_modern")
    assert done.returncode == 0
    assert "protocol SupportsEagle3" in done.stdout
    assert "mixin EagleModelMixin: setter _set_aux_hidden_state_layers; collect with _maybe_add_hidden_state" in done.stdout
    assert "raises when false" in done.stdout
