"""Reporters: one diagnostic model, many output formats.

``FORMATS`` maps a ``--format`` name to ``module:function``; the writer takes
``(result, out, verbose, *, quiet=False)`` (``quiet``: the findings alone, where the format has
more than a document to write). Modules are imported only when their format is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

FORMATS: dict[str, str] = {
    "concise": "eagle3lint.report.concise:write_concise",
    "full": "eagle3lint.report.full:write_full",
    "json": "eagle3lint.report.jsonfmt:write_json",
    "sarif": "eagle3lint.report.sarif:write_sarif",
    "github": "eagle3lint.report.github:write_github",
}

Writer = Callable[..., Any]


def writer_for(name: str) -> Writer:
    module_name, _, function = FORMATS[name].partition(":")
    writer: Writer = getattr(importlib.import_module(module_name), function)
    return writer
