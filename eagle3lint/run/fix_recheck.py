"""Re-checking the tree as it would be after the fixes, in memory: edited files are summarised
from their new text, every other module is taken from the first run's index."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.common.findings import FileError
from eagle3lint.source.index import ProjectIndex, SummaryProvider
from eagle3lint.source.sources import ParseRequest, parse_module, summary_of
from eagle3lint.source.summary_types import ModuleSummary

if TYPE_CHECKING:
    from eagle3lint.model.result import CheckResult


def summarize_text(request: ParseRequest, text: str, tree: ast.Module | None = None) -> ModuleSummary | FileError:
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text, filename=request.path)
        except SyntaxError as exc:
            return FileError(request.path, f"syntax error after fixing, at line {exc.lineno}: {exc.msg}")
    return summary_of(request, text, tree)


class OverlayProvider:
    """Summaries of ``changed`` texts; the previous index's summaries for everything else (they
    already reflect ``earlier`` edits); ``earlier`` texts or the disk for modules it never read.
    ``texts`` holds every edited text, for analyses that re-read function bodies."""

    def __init__(
        self,
        previous: ProjectIndex,
        changed: dict[str, str],
        earlier: dict[str, str],
        summaries: dict[str, ModuleSummary] | None = None,
    ) -> None:
        self.previous, self.changed, self.earlier, self.summaries = previous, changed, earlier, summaries or {}
        self.texts = {**earlier, **changed}

    def __call__(self, requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
        out: list[ModuleSummary | FileError] = []
        for request in requests:
            if request.path in self.changed:
                ready = self.summaries.get(request.path)
                if ready is not None and ready.module == request.module:
                    out.append(ready)
                else:
                    out.append(summarize_text(request, self.changed[request.path]))
                continue
            known = self.previous.modules.get(request.module)
            if known is not None:
                out.append(known)
            elif request.path in self.earlier:
                out.append(summarize_text(request, self.earlier[request.path]))
            else:
                out.append(parse_module(request))
        return out


def overlay_provider(
    previous: ProjectIndex,
    changed: dict[str, str],
    earlier: dict[str, str],
    summaries: dict[str, ModuleSummary] | None = None,
) -> SummaryProvider:
    return OverlayProvider(previous, changed, earlier, summaries)


def recheck(
    previous: CheckResult,
    changed: dict[str, str],
    earlier: dict[str, str],
    scope: list[Path],
    select: list[str] | None,
    ignore: list[str] | None,
    summaries: dict[str, ModuleSummary] | None = None,
) -> CheckResult:
    """The check of the tree with ``changed`` on top of ``earlier`` edits (both path -> text)."""
    from eagle3lint.run.runner import run_check

    if previous.index is None:
        raise ValueError("the check result carries no project index")
    provider = overlay_provider(previous.index, changed, earlier, summaries)
    return run_check(previous.engine, scope, select=select, ignore=ignore, contract=previous.contract, provider=provider)
