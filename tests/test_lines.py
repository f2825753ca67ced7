"""Source text split into lines as the ``ast`` numbers them (``eagle3lint/common/lines.py``)."""

from __future__ import annotations

import ast

import pytest

from eagle3lint.common.lines import count_line_ends, line_ending, line_texts, source_lines

TEXTS = [
    "a = 1\nb = 2\n",
    "a = 1\r\nb = 2\r\n",
    "a = 1\rb = 2\r",  # CR alone ends a line
    "a = 1\n\x0cb = 2\n\x0c\n# \x0b \x1c \x1d \x1e \x85 \u2028 \u2029\nc = 3",  # none of these does
    "a = 1\r\n\rb = 2\n\r\nc = 3\r",  # mixed
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_lines_are_those_the_ast_numbers(text: str) -> None:
    lines = source_lines(text)
    assert "".join(lines) == text
    assert line_texts(text) == [line[: len(line) - len(line_ending(line))] for line in lines]
    assert count_line_ends(text) == sum(1 for line in lines if line_ending(line))
    for stmt in ast.parse(text).body:
        assert isinstance(stmt, ast.Assign)
        target = stmt.targets[0]
        assert isinstance(target, ast.Name)
        assert lines[stmt.lineno - 1].lstrip("\x0c").startswith(f"{target.id} = ")


def test_a_lone_cr_and_a_crlf_are_one_ending_each() -> None:
    assert source_lines("a\r\r\nb") == ["a\r", "\r\n", "b"]
    assert [line_ending(line) for line in source_lines("a\r\r\nb")] == ["\r", "\r\n", ""]
    assert count_line_ends("a\r\r\nb", 0, 2) == 1
