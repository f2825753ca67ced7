"""The suite says what it downloads: one line per release fetched, on the terminal whatever
pytest captures, and only when a release is really downloaded (a cached one says nothing).

In one process the line is written at once. An xdist worker's own output reaches no terminal:
there the line rides on the report of the test that downloaded, and the controlling process
writes it (``tests/conftest.py`` wires the hooks).
"""

from __future__ import annotations

import contextlib
import sys

import pytest

PROPERTY = "eagle3lint-download"

_config: pytest.Config | None = None
_pending: list[str] = []


def configure(config: pytest.Config) -> None:
    global _config
    _config = config


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def announce(line: str) -> None:
    """Called where the download happens: a test, a fixture, a helper."""
    if _config is not None and not is_worker(_config):
        write(_config, line)
    else:
        _pending.append(line)


def take() -> list[str]:
    """The lines a worker has not sent yet."""
    lines = list(_pending)
    _pending.clear()
    return lines


def write(config: pytest.Config, line: str) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is None:  # -p no:terminal: the real stderr, past any capture
        if sys.__stderr__ is not None:
            sys.__stderr__.write(line + "\n")
        return
    held = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
    with held:
        if terminal._tw.width_of_current_line:  # after a row of progress dots: a line of its own
            terminal.write("\n")
        terminal.write_line(line)
