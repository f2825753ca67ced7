"""Unified diffs that ``git apply`` and ``patch -p1`` accept, run from the folder the paths are
relative to (the working directory when the file is under it, else the engine's source root,
e.g. the folder holding ``sglang/``): the names carry git's ``a/`` and ``b/`` prefixes.

A file name that holds a control character, a quote, a backslash or a byte outside ASCII is
written as git writes it: C-style quoted (``"a\\tb.py"``, other bytes in octal), which both
``git apply`` and GNU ``patch`` read back; a name with a space ends with a tab, as git's does. A
name's newline can thus never end the ``---`` line early (the diff would no longer apply).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from eagle3lint.common.escape import line_text
from eagle3lint.source.sources import tree_path

_LINE = re.compile(r"[^\n]*\n|[^\n]+$")
NO_NEWLINE = "\\ No newline at end of file\n"


def split_lines(text: str) -> list[str]:
    """Lines with their endings; only ``\\n`` ends a line (``str.splitlines`` would also split
    on form feeds and other separators that ``patch`` does not treat as line ends)."""
    return _LINE.findall(text)


def diff_base(path: str, source_root: Path) -> Path:
    cwd = Path.cwd().resolve()
    resolved = Path(tree_path(path))
    if cwd == resolved.parent or cwd in resolved.parents:
        return cwd
    return source_root.resolve()


def diff_label(path: str, source_root: Path) -> str:
    resolved = Path(tree_path(path))
    base = diff_base(path, source_root)
    try:
        return Path(os.path.relpath(resolved, base)).as_posix()
    except ValueError:
        return resolved.as_posix()


# git's quote_c_style: the bytes with a letter escape; any other control byte, DEL and every byte
# of a name outside ASCII is written as three octal digits (git's default, core.quotePath).
_C_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def quoted_name(name: str) -> str:
    """``name`` for a diff header: as it is when it is plain ASCII without quotes, backslashes or
    control characters, else C-style quoted as git quotes it (a name that is not UTF-8, held as
    surrogates, by its bytes)."""
    raw = os.fsencode(name)
    if not any(b < 0x20 or b >= 0x7F or b in _C_ESCAPES for b in raw):
        return name
    parts = [_C_ESCAPES.get(b) or (f"\\{b:03o}" if b < 0x20 or b >= 0x7F else chr(b)) for b in raw]
    return '"' + "".join(parts) + '"'


def header_label(label: str) -> str:
    """The text after ``--- ``/``+++ ``: the quoted name, and a tab after a name holding a space
    (where the name ends for ``patch``, as git writes it)."""
    quoted = quoted_name(label)
    return quoted + "\t" if " " in quoted else quoted


def terminal_diff(diff: str) -> str:
    """``diff`` for a person at a terminal: each line's control characters written out (tabs
    expanded to the terminal's stops), so the analysed file's text cannot drive the terminal.
    Not for applying: a diff to apply goes out as :func:`unified_diff` made it."""
    return "".join(line_text(line.removesuffix("\n"), 8) + "\n" for line in split_lines(diff))


def unified_diff(old: str, new: str, label: str, context: int = 3) -> str:
    if old == new:
        return ""
    out: list[str] = []
    # git's prefixes (quoted with the name, as git quotes them), so that `git apply` takes the
    # diff as it is, without -p0.
    before, after = header_label(f"a/{label}"), header_label(f"b/{label}")
    for line in difflib.unified_diff(split_lines(old), split_lines(new), before, after, n=context, lineterm="\n"):
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(out)
