"""The collector's policy for a command's process: one run builds a large, long-lived heap (an
index of about a million objects) and the process ends straight after its report.

A collector turned back on after a run first scans every object the run made with it off (a
tenth of a second on SGLang's tree), and the interpreter's final collection walks the whole
heap again (a quarter of a second on vLLM's): a command that reports and ends needs neither.
"""

from __future__ import annotations

import gc


def no_collection_until_exit() -> None:
    """From here to the end of the command, nothing is collected (``command_done`` freezes what
    is left). For commands that run once and report: a history collects between its releases
    itself."""
    gc.disable()


def command_done(collecting: bool) -> None:
    """The command has ended: what it built is frozen (no final collection walks it), and an
    in-process caller that had the collector on gets it back."""
    gc.freeze()
    if collecting:
        gc.enable()
