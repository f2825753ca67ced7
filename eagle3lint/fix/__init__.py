"""``eagle3lint fix``: findings -> planned edits (from templates) -> libcst edits -> proof -> write.

The flow, one module per step: ``templates`` (rule-pack data), ``planner`` + ``patterns/``
(which template fits a finding, with what names), ``apply`` (libcst), ``proof`` (parse, AST
equality, re-check, second run), ``write`` (atomic), ``diff`` (unified diffs), ``session``
(ties them together for the CLI and for ``check --format json``).

Importing this package does not import libcst; only files that receive edits are parsed with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from eagle3lint.runner import CheckResult


def attach_fixes(result: CheckResult, scope: list[Path] | None = None) -> None:
    """Fill ``Finding.fix`` (applicability, description, diff) for every finding a template fits.

    ``scope`` is the check's reporting scope (a fix that would edit a file outside it is
    display-only, as ``fix`` would treat it); the whole engine when omitted. libcst is imported
    only when some finding has an edit to render.
    """
    from eagle3lint.fix.session import attach_fixes as _attach

    _attach(result, scope)


__all__ = ["attach_fixes"]
