"""Inserting into comma-separated lists with libcst (class bases, imported names) in the
list's own layout: one line or one element per line, trailing comma or not, comments kept
with the element they follow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import libcst as cst

Element = TypeVar("Element", cst.Arg, cst.ImportAlias)


def _without_comment(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """The same line break and indentation, without the comment or blank lines it carries."""
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return whitespace.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return whitespace


def _separator(elements: Sequence[cst.Arg | cst.ImportAlias], near: int, opening: cst.BaseParenthesizableWhitespace | None) -> cst.Comma:
    """The comma between two elements as the list writes it: a neighbour's (the one before
    ``near`` first), else one line per element when the list opens on its own line, else ``, ``."""
    between = [e.comma for e in elements[:-1] if isinstance(e.comma, cst.Comma)]
    if near > 0 and isinstance(elements[near - 1].comma, cst.Comma) and near - 1 < len(elements) - 1:
        chosen = elements[near - 1].comma
        assert isinstance(chosen, cst.Comma)
        return cst.Comma(whitespace_before=chosen.whitespace_before, whitespace_after=_without_comment(chosen.whitespace_after))
    if between:
        return cst.Comma(whitespace_before=between[0].whitespace_before, whitespace_after=_without_comment(between[0].whitespace_after))
    if isinstance(opening, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=_without_comment(opening))
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _append(elements: list[Element], new: Element, opening: cst.BaseParenthesizableWhitespace | None) -> None:
    last = elements[-1]
    separator = _separator(elements, len(elements), opening)
    if isinstance(last.comma, cst.Comma):
        # A trailing comma: the new element gets one laid out like it (the line break before
        # the closing parenthesis); the old last keeps its comment and breaks like a separator.
        trailing = last.comma
        new = new.with_changes(comma=cst.Comma(whitespace_after=_without_comment(trailing.whitespace_after)))
        kept = trailing.whitespace_after
        if isinstance(kept, cst.ParenthesizedWhitespace) and isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace):
            kept = kept.with_changes(indent=separator.whitespace_after.indent, last_line=separator.whitespace_after.last_line)
        elif not isinstance(kept, cst.ParenthesizedWhitespace):
            kept = separator.whitespace_after
        elements[-1] = last.with_changes(comma=trailing.with_changes(whitespace_after=kept))
    else:
        if isinstance(last, cst.Arg) and isinstance(new, cst.Arg):
            new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
            last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
        elements[-1] = last.with_changes(comma=separator)
    elements.append(new)


def insert_elements(
    elements: Sequence[Element], additions: Sequence[tuple[int, str, Element]], opening: cst.BaseParenthesizableWhitespace | None
) -> list[Element]:
    """``elements`` with each ``(position, name, element)`` inserted before the element at
    ``position`` of the original list (its length: at the end); several at one position go in
    name order. ``opening`` is the whitespace after the list's opening parenthesis."""
    out = list(elements)
    # From the last position back, so the original positions stay valid.
    for position, _, new in sorted(additions, key=lambda a: (a[0], a[1]), reverse=True):
        if not out:
            out.append(new)
        elif position >= len(out):
            _append(out, new, opening)
        else:
            out.insert(position, new.with_changes(comma=_separator(out, position, opening)))
    return out
