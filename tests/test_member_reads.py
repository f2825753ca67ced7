"""E3L023: an interface member whose own body reads an attribute chain its holder lacks.

A synthetic tree (``fixtures/sglang_member_reads``: OPT's shape, guarded reads, attributes
that are there or may be) and the reads themselves, read from source text."""

from __future__ import annotations

import ast
import textwrap

import pytest

from eagle3lint.source.attribute_writes import opens_attributes
from eagle3lint.source.member_reads import unconditional_reads
from tests.helpers import FIXTURES, run_json

TREE = FIXTURES / "sglang_member_reads"


@pytest.fixture(scope="module")
def report() -> dict:
    code, data = run_json("check", TREE)
    assert code == 1
    return data


def _findings(report: dict, cls: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == "E3L023" and f["class"] == cls]


def _model(report: dict, cls: str) -> dict:
    (model,) = [m for m in report["models"] if m["class"] == cls]
    return model


def test_a_getter_reading_a_link_its_holder_lacks_is_the_crash(report: dict) -> None:
    (finding,) = _findings(report, "OptLikeForCausalLM")
    assert finding["severity"] == "error" and finding["method"] == "get_embed_and_head"
    assert finding["path"].endswith("opt_like.py") and finding["line"] == 17
    assert "`self.model` holds `DeepModel`, which has no `embed_tokens` (it has `decoder.embed_tokens`)" in finding["message"]
    assert "sglang/srt/speculative/eagle_worker.py:7" in finding["message"]
    model = _model(report, "OptLikeForCausalLM")
    assert (model["status"], model["outcome"]) == ("broken", "crash")
    assert model["status_reason"].startswith("crash: E3L023: `get_embed_and_head` reads `self.model.embed_tokens`")
    assert model["outcome_evidence"]["path"].endswith("eagle_worker.py")


def test_not_reached_where_start_up_stops_at_a_member_the_class_lacks(report: dict) -> None:
    (finding,) = _findings(report, "OptLikeNoSetterForCausalLM")
    assert finding["severity"] == "warning"
    assert "stops first at `set_eagle3_layers_to_capture`, which the class lacks" in finding["message"]
    model = _model(report, "OptLikeNoSetterForCausalLM")
    # The outcome is the first crash's, the missing setter's: the getter's read does not contradict it.
    assert model["outcome"] == "crash" and model["status_reason"].startswith("crash: E3L001:")


@pytest.mark.parametrize(
    "cls",
    [
        "HasattrGuardForCausalLM",  # `if hasattr(self.model, "embed_tokens")`
        "PPGuardForCausalLM",  # `None if isinstance(self.model, PPMissingLayer) else ...`
        "TryGuardForCausalLM",  # `except AttributeError`
        "EarlyReturnForCausalLM",  # after an `if` that may raise: not certain to run
        "BaseAttrForCausalLM",  # the holder's base class sets it
        "ByConfigForCausalLM",  # one of the holders `__init__` may build has it
        "SetattrHolderForCausalLM",  # the holder sets attributes by computed name
        "GetattrHolderForCausalLM",  # the holder forwards with `__getattr__`
        "SharingForCausalLM",  # the wrapper writes it on its holder
    ],
)
def test_guarded_or_possible_reads_are_no_finding(report: dict, cls: str) -> None:
    assert _findings(report, cls) == []
    assert _model(report, cls)["outcome"] == "works"


def _reads(source: str) -> list[str]:
    fn = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return [".".join(r.chain) for r in unconditional_reads(fn)]


def test_reads_every_call_makes_and_not_the_guarded_ones() -> None:
    assert _reads(
        """
        def get(self, x):
            a = self.model.embed_tokens.weight
            self.model.cache.value = x
            del self.lm_head.bias
            ok = hasattr(self.inner, "y") and self.inner.y.z
            b = self.p.q if self.flag.on else self.r.s
            c = [layer.w for layer in self.model.layers]
            with self.ctx.guard():
                d = self.inside.with_block
            return a, self.last.one
        """
    ) == ["model.embed_tokens.weight", "model.cache", "lm_head", "inner", "flag.on", "model.layers", "ctx.guard", "inside.with_block", "last.one"]


def test_reads_stop_at_a_statement_that_may_leave_and_skip_guarded_blocks() -> None:
    assert _reads(
        """
        def get(self):
            x = self.first.read
            if isinstance(self.model, PPMissingLayer):
                return None
            return self.model.embed_tokens.weight
        """
    ) == ["first.read", "model"]
    assert _reads(
        """
        def get(self):
            try:
                x = self.model.embed_tokens
            except AttributeError:
                x = None
            for layer in self.model.layers:
                y = layer.attn.missing
            return x, self.after.loop
        """
    ) == ["model.layers", "after.loop"]
    assert _reads("@staticmethod\ndef get(x):\n    return x.model.embed_tokens\n") == []


def test_a_class_that_writes_attributes_by_computed_name_is_open() -> None:
    assert opens_attributes(["    def __init__(self):", "        setattr(self, name, m)"], "embed_tokens")
    assert opens_attributes(["        self.register_module(key, m)"], "embed_tokens")
    assert opens_attributes(["        self.register_buffer('embed_tokens', t)"], "embed_tokens")
    assert opens_attributes(["        self.register_buffer('other', t)", "        self.x = 1"], "embed_tokens") == ""
