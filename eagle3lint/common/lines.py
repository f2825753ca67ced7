"""Source text split into lines where Python's tokenizer ends them, so that line *n* of the list
is line *n* of the ``ast``.

``\\r\\n``, a lone ``\\r`` and ``\\n`` end a line, nothing else: ``str.splitlines`` also splits
on form feeds, ``\\v``, ``\\x1c``-``\\x1e``, ``\\x85`` and ``\\u2028``/``\\u2029``, which
Python reads as ordinary characters (a form feed at the start of a line is whitespace), and
splitting on ``\\n`` only would make a file with CR line endings one long line.
(Unified diffs are the other way: ``patch`` ends lines at ``\\n`` only, see ``fix/diff.py``.)
"""

from __future__ import annotations

import re

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_ENDING = re.compile(r"\r\n|\r|\n")


# What ``str.splitlines`` ends a line at besides \r and \n.
_OTHER_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def source_lines(text: str) -> list[str]:
    """Lines with their endings, as the ``ast`` numbers them (the last may have no ending)."""
    if not any(c in text for c in _OTHER_BREAKS):
        return text.splitlines(keepends=True)  # the same lines, several times faster
    return _LINE.findall(text)


def line_texts(text: str) -> list[str]:
    """Lines without their endings, as the ``ast`` numbers them."""
    return [line.rstrip("\r\n") for line in _LINE.findall(text)]


def line_ending(line: str) -> str:
    """The ending of one line of :func:`source_lines` (``""`` for a last line without one)."""
    return line[len(line.rstrip("\r\n")) :]


def first_line_ending(text: str) -> str | None:
    """The ending of the text's first line; None when it has none."""
    found = _ENDING.search(text)
    return found.group(0) if found else None


def count_line_ends(text: str, start: int = 0, end: int | None = None) -> int:
    """Line endings in ``text[start:end]`` (neither bound inside a ``\r\n``)."""
    end = len(text) if end is None else end
    if "\r" not in text:
        return text.count("\n", start, end)  # the usual file: no list of matches to build
    return len(_ENDING.findall(text, start, end))
