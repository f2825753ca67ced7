"""A monotonic clock for waits a test must see run out, on a loaded machine.

A deadline of a fraction of a second makes such a test race the machine (the fake server may not
even have started when it passes); a generous one makes it slow. ``LeapingClock`` runs at real
speed until something the test names has happened (the fake recorded that it hangs, that it
ignored SIGTERM), then leaps once, by more than any deadline the code under test set: what ends
the wait is the event, never the machine's speed. The leap comes at the reading after the first
that saw the event, so the code had one more look at the world (a log line written just before
the event) before its deadline passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

LEAP_S = 24 * 3600.0  # beyond every timeout the tests give


class LeapingClock:
    """Stands in for the ``time`` module of the modules it is installed in: ``monotonic`` is
    its own, everything else (``sleep``, ``time``) is the real module's."""

    def __init__(self, happened: Callable[[], bool], leap_s: float = LEAP_S) -> None:
        self.happened = happened
        self.leap_s = leap_s
        self.offset = 0.0
        self._seen = False
        self.leapt = False

    def monotonic(self) -> float:
        if self._seen and not self.leapt:
            self.offset, self.leapt = self.leap_s, True
        elif not self._seen and self.happened():
            self._seen = True
        return time.monotonic() + self.offset

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def install(self, monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> LeapingClock:
        for module in modules:
            monkeypatch.setattr(module, "time", self)
        return self
