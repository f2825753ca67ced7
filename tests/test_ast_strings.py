"""The shared readings of strings in source: raise/assert messages and folded constants."""

from __future__ import annotations

import ast

from eagle3lint.source.ast_strings import fold_string, hole_source, message_text


def _expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def test_message_keeps_text_and_marks_holes() -> None:
    node = _expr('ValueError(f"Pipeline parallelism is not compatible with {method} speculative decoding")')
    assert message_text(node) == "Pipeline parallelism is not compatible with {...} speculative decoding"
    assert message_text(node, hole_source) == "Pipeline parallelism is not compatible with {method} speculative decoding"


def test_message_joins_concatenations_and_reads_percent_format_strings() -> None:
    assert message_text(_expr('RuntimeError("a " + f"b{x}" + "c")')) == "a b{...}c"
    assert message_text(_expr('AssertionError("layers %d" % n)')) == "layers %d"
    assert message_text(_expr("err")) == ""
    assert message_text(None) == ""


def test_a_long_concatenation_is_read_without_recursion() -> None:
    # Built by hand: the parser itself refuses a chain this long, a crafted tree need not.
    node: ast.expr = ast.Constant("x")
    for _ in range(4999):
        node = ast.BinOp(node, ast.Add(), ast.Constant("x"))
    assert message_text(node) == "x" * 5000
    assert fold_string(node, lambda _name: None) == "x" * 5000


def test_deep_nesting_is_not_read() -> None:
    node: ast.expr = ast.Constant("a")
    for _ in range(5000):
        node = ast.JoinedStr([ast.FormattedValue(node, -1, None)])
    assert fold_string(node, lambda _name: None) is None
    assert fold_string(_expr("f\"{f'{NAME}'}\""), {"NAME": "a"}.get) == "a"


def test_fold_reads_names_the_lookup_knows_and_no_others() -> None:
    names = {"PREFIX": "sglang.srt.models"}
    assert fold_string(_expr('f"{PREFIX}.llama"'), names.get) == "sglang.srt.models.llama"
    assert fold_string(_expr('PREFIX + "." + other'), names.get) is None
    assert fold_string(_expr('f"{PREFIX!r}"'), names.get) is None
