"""Hygiene rules: suppressions that suppress nothing."""

from __future__ import annotations

from collections.abc import Iterable

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding


class UnusedSuppression(Rule):
    """
    ## What it does
    Reports an eagle3lint suppression comment (`# noqa: E3L001`, `# eagle3lint: ignore[...]`)
    in a checked file that silenced no finding in this run. Off unless selected
    (`--select E3L900` or `extend-select = ["E3L900"]`).

    ## Why is this bad?
    A stale suppression hides the next real problem on that line: once the method is added the
    comment is dead weight, and when someone later removes the delegation again the crash goes
    unreported.

    ## Example
    ```python
    class FooForCausalLM(nn.Module):  # noqa: E3L001  (the class now has every member)
    ```

    ## Fix safety
    Display-only: remove the comment by hand.
    """

    code = "E3L900"
    name = "unused-suppression"
    severity = "warning"
    family = "hygiene"
    default_enabled = False
    after_suppressions = True

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for path, comments in sorted(ctx.unused_suppressions.items()):
            for comment in comments:
                codes = ", ".join(comment.codes) if comment.codes else "every code"
                yield Finding(
                    code=self.code,
                    rule=self.name,
                    severity=self.severity,
                    path=path,
                    line=comment.line,
                    column=comment.column,
                    class_name="",
                    qualname="",
                    method="",
                    message=f"suppression `{comment.text}` ({codes}) matches no finding",
                )


HYGIENE_RULES: tuple[type[Rule], ...] = (UnusedSuppression,)
