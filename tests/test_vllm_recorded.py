"""A capture a library records (vLLM's Transformers modeling backend): the setter registers a
recorder per layer and ``forward`` returns what it recorded.

The synthetic tree ``fixtures/vllm_recorded`` has the backend's call shapes (0.18-0.34); the
release tests read the real ``transformers/base.py``.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

import pytest

from eagle3lint.engines.vllm.recorded import read_recording
from tests.helpers import FIXTURES, release_root, run_json

TREE = FIXTURES / "vllm_recorded"


def _rows(*args: str) -> dict[str, dict[str, Any]]:
    code, data = run_json("models", *args)
    assert code in (0, 1), data
    return {m["class"]: m for m in data["models"]}


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, Any]]:
    return _rows(str(TREE))


@pytest.fixture(scope="module")
def findings() -> dict[str, list[dict[str, Any]]]:
    code, data = run_json("check", str(TREE))
    assert code == 1
    out: dict[str, list[dict[str, Any]]] = {}
    for finding in data["findings"]:
        out.setdefault(finding["class"], []).append(finding)
    return out


@pytest.mark.parametrize("cls", ["RecordedForCausalLM", "PassedOnForCausalLM", "DelegatingForCausalLM"])
def test_a_forward_that_returns_the_recorded_states_works(rows: dict[str, dict[str, Any]], cls: str) -> None:
    row = rows[cls]
    assert (row["status"], row["outcome"], row["codes"]) == ("supported", "works", [])


@pytest.mark.parametrize("cls", ["RecordedForCausalLM", "PassedOnForCausalLM", "DelegatingForCausalLM"])
def test_pipeline_parallelism_is_refused_where_the_library_model_records(rows: dict[str, dict[str, Any]], cls: str) -> None:
    # The runner asks the model the recorders live in (a library's) for vLLM's PP flag.
    outcomes = [(c["outcome"], [o["option"] for o in c["condition"]]) for c in rows[cls]["conditions"]]
    assert [(outcome, options[0]) for outcome, options in outcomes] == [("refused", "pp")]


def test_a_forward_that_drops_the_recording_crashes(rows: dict[str, dict[str, Any]], findings: dict[str, list[dict[str, Any]]]) -> None:
    row = rows["ForgetfulForCausalLM"]
    assert (row["status"], row["outcome"], row["codes"]) == ("broken", "crash", ["E3L011"])
    (finding,) = findings["ForgetfulForCausalLM"]
    assert "`Recorder` in `self.model._can_record_outputs`" in finding["message"]
    assert "`ForgetfulForCausalLM.forward` never returns what it records" in finding["message"]


def test_the_fix_for_a_dropped_recording_is_no_decoder_loop_edit(findings: dict[str, list[dict[str, Any]]]) -> None:
    (finding,) = findings["ForgetfulForCausalLM"]
    fix = finding["fix"]
    assert (fix["applicability"], fix["diff"]) == ("display-only", "")
    assert "EagleModelMixin" not in fix["description"] and "_maybe_add_hidden_state" not in fix["description"]
    assert "**self._output_aux_hidden_states_kwargs" in fix["description"]


@pytest.mark.parametrize(
    ("cls", "reason"),
    [
        # ``self._layer_names[layer]``: the output of the requested layer, one past the id.
        ("ShiftedForCausalLM", "names each recorded layer by `self._layer_names[layer]`"),
        ("ChangedForCausalLM", "whether `ChangedForCausalLM` returns what its recorders record: `ChangedForCausalLM.forward` changes"),
    ],
)
def test_what_does_not_fit_the_shape_stays_unknown(rows: dict[str, dict[str, Any]], cls: str, reason: str) -> None:
    row = rows[cls]
    assert (row["status"], row["codes"]) == ("unknown", ["E3L016"])
    assert reason in row["reason"]


# ---- the setter's shape, on its own --------------------------------------------------------

_SETTER = """
def set_aux_hidden_state_layers(self, layers):
    if self.model._can_record_outputs is None:
        self.model._can_record_outputs = {}
    for layer in layers:
        layer_name = self._layer_names[layer - 1]
        layer_key = f"aux_hidden_state_{layer}"
        recorder = OutputRecorder(self._target_class, layer_name=layer_name)
        self.model._can_record_outputs[layer_key] = recorder
        self._output_aux_hidden_states_kwargs[f"output_{layer_key}"] = True
"""


def _read(source: str):  # type: ignore[no-untyped-def]
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return read_recording(function)


def test_the_backend_setter_is_read_as_a_recording() -> None:
    recording = _read(_SETTER)
    assert recording is not None
    assert recording.recorder == "OutputRecorder"
    assert recording.store == ("model", "_can_record_outputs")
    assert recording.switches == ("_output_aux_hidden_states_kwargs",)
    assert (recording.table, recording.offset) == ("_layer_names", -1)
    assert recording.calls == ()


@pytest.mark.parametrize(
    ("change", "by"),
    [
        # No switch: nothing tells forward to return the states.
        ('        self._output_aux_hidden_states_kwargs[f"output_{layer_key}"] = True\n', ""),
        # The recorder is not named from a per-layer table.
        ("self._layer_names[layer - 1]", "str(layer)"),
        # The loop is not over the requested layers.
        ("for layer in layers:", "for layer in self.defaults:"),
        # Entries not keyed by the layer.
        ("self.model._can_record_outputs[layer_key] = recorder", "self.model._can_record_outputs['all'] = recorder"),
    ],
)
def test_other_shapes_are_not_a_recording(change: str, by: str) -> None:
    assert change in _SETTER
    assert _read(_SETTER.replace(change, by)) is None


def test_a_method_the_setter_calls_is_kept_for_the_holder_to_judge() -> None:
    source = _SETTER.replace("    if self.model", '    self.check_version("5.2.0", "Eagle3 support")\n    if self.model', 1)
    recording = _read(source)
    assert recording is not None
    assert [name for name, _ in recording.calls] == ["check_version"]


# ---- the real backend --------------------------------------------------------------------------

_BACKEND = ["TransformersForCausalLM", "TransformersMoEForCausalLM", "TransformersMultiModalForCausalLM", "TransformersMultiModalMoEForCausalLM"]


@pytest.mark.release
@pytest.mark.parametrize("spec", ["vllm==0.32.0", "vllm==0.33.0", "vllm==0.34.0"])
def test_the_transformers_backend_is_supported(spec: str) -> None:
    release_root(spec)
    rows = _rows("--release", spec)
    for cls in _BACKEND:
        assert (rows[cls]["status"], rows[cls]["outcome"]) == ("supported", "works"), (spec, cls, rows[cls]["reason"])


@pytest.mark.release
def test_the_backend_of_0_18_stays_unknown_behind_its_version_check() -> None:
    # 0.18's setter first calls ``self.check_version("5.2.0", ...)``, which raises ImportError
    # below transformers 5.2, and the release pins transformers below 5.
    release_root("vllm==0.18.0")
    rows = _rows("--release", "vllm==0.18.0")
    for cls in _BACKEND:
        assert rows[cls]["status"] == "unknown"
        assert "`self.check_version(...)`" in rows[cls]["reason"]
