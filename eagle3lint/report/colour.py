"""Colour for a person at a terminal, never for a pipe, a file or a CI log that did not ask.

``NO_COLOR`` (any non-empty value, https://no-color.org) turns colour off and wins;
``FORCE_COLOR`` (non-empty, other than ``0`` or ``false``) turns it on where the output is not
a terminal; otherwise colour goes to a terminal only (and not to ``TERM=dumb``). Only text of our
own is coloured (a code, a severity, a path's boldness): analysed text is escaped before, so no
sequence in it can reach the terminal.
"""

from __future__ import annotations

import os
from typing import TextIO

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
SEVERITY_COLOURS = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;36m"}


def use_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "").lower() not in ("", "0", "false"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or odd stream is no terminal
        return False


class Painter:
    """Wraps our own words in colour, or leaves them plain."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def bold(self, text: str) -> str:
        return f"{BOLD}{text}{RESET}" if self.enabled and text else text

    def severity(self, text: str, severity: str) -> str:
        colour = SEVERITY_COLOURS.get(severity)
        return f"{colour}{text}{RESET}" if self.enabled and colour and text else text


def painter_for(stream: TextIO) -> Painter:
    return Painter(use_colour(stream))
