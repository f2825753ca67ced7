"""`eagle3lint verify`: launch the engine with EAGLE-3 and report whether speculation pays off.

Flow: preflight -> launch -> wait -> (classify a crash | measure) -> teardown -> report.
Kept light to import: `eagle3lint check` loads the CLI, and with it this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagle3lint.verify.options import VerifyOptions

if TYPE_CHECKING:
    from eagle3lint.verify.report import VerifyReport
    from eagle3lint.verify.wait import Progress


def run_verify(options: VerifyOptions, progress: Progress | None = None, **kwargs: Any) -> VerifyReport:
    """See :func:`eagle3lint.verify.run.run_verify` (``fix --apply --verify`` calls this)."""
    from eagle3lint.verify.run import run_verify as _run

    return _run(options, progress, **kwargs)


__all__ = ["VerifyOptions", "run_verify"]
