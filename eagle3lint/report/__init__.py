"""Reporters: one diagnostic model, many output formats.

``FORMATS`` maps a ``--format`` name to ``module:function``; the writer takes
``(result, out, verbose, *, quiet=False)`` (``quiet``: the findings alone, where the format has
more than a document to write). Modules are imported only when their format is asked for.
``write_reports`` writes the reports of several engine trees checked in one run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from eagle3lint.model.result import CheckResult

FORMATS: dict[str, str] = {
    "concise": "eagle3lint.report.concise:write_concise",
    "full": "eagle3lint.report.full:write_full",
    "json": "eagle3lint.report.jsonfmt:write_json",
    "sarif": "eagle3lint.report.sarif:write_sarif",
    "github": "eagle3lint.report.github:write_github",
}

Writer = Callable[..., Any]
# Formats that are one document: several engines' reports are merged into it, not written one
# after the other.
DOCUMENTS: dict[str, str] = {
    "json": "eagle3lint.report.jsonfmt:write_json_engines",
    "sarif": "eagle3lint.report.sarif:write_sarif_engines",
}


def writer_for(name: str) -> Writer:
    module_name, _, function = FORMATS[name].partition(":")
    writer: Writer = getattr(importlib.import_module(module_name), function)
    return writer


def write_reports(name: str, results: list[CheckResult], out: TextIO, verbose: bool, quiet: bool = False) -> None:
    """One engine's report as it always was; several engines' (two trees side by side) one
    after the other, each with its summary line, or, for a one-document format, in one document."""
    if len(results) == 1 or name not in DOCUMENTS:
        writer = writer_for(name)
        for result in results:
            writer(result, out, verbose, quiet=quiet)
        return
    module_name, _, function = DOCUMENTS[name].partition(":")
    getattr(importlib.import_module(module_name), function)(results, out)
