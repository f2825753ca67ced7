"""Text from analysed files, made safe for one line of a terminal, a log or a CI annotation.

A model file, a version string, a plugin's architecture name or a checkpoint's config may hold
terminal escapes, carriage returns, newlines (a forged finding, a GitHub ``::error``
command) or bidirectional overrides. Every format writes such text through :func:`line_text`.
"""

from __future__ import annotations

import os
from pathlib import Path

# C0 and C1 controls and DEL (escape sequences, carriage returns, bells), the characters that
# reorder a line on screen (bidirectional overrides, isolates and marks), and the Unicode line
# and paragraph separators: none of them may come from analysed text onto a terminal as is.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROL = (
    {c: f"\\x{c:02x}" for c in (*range(32), *range(0x7F, 0xA0))}
    | {c: f"\\u{c:04x}" for c in (*_BIDI, 0x2028, 0x2029)}
    | {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
)


def line_text(text: str, tabsize: int | None = None) -> str:
    """``text`` for one line of a terminal report: control characters shown escaped, so that
    text from analysed files (a name, a version, a checkpoint's config value) can neither
    drive the terminal nor break its line in two. ``tabsize``: a line of source code shown as
    code, its tabs expanded to spaces (not written ``\\t``)."""
    if tabsize is not None:
        text = text.expandtabs(tabsize)
    return text.translate(_CONTROL)


def display_path(path: str, base: Path | None = None, fallback_root: Path | None = None) -> str:
    for root in (base or Path.cwd(), fallback_root):
        if root is None:
            continue
        try:
            rel = os.path.relpath(path, root)
        except ValueError:
            continue
        if not rel.startswith(".."):
            return rel
    return path


def line_path(path: str, base: Path | None = None, fallback_root: Path | None = None) -> str:
    """``display_path`` for a line of text: a name holding a newline or another control
    character (a hostile file name) shows it escaped, so that one finding stays one line."""
    return line_text(display_path(path, base, fallback_root))
