"""What the engine-run machinery needs of an engine: its probe script, the interpreter it runs in,
the environment of a launch, and the messages that are the engine's own clear refusal of EAGLE-3.
An engine's folder builds one (``engine_run.py``); the registry hands it out."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class EngineRunSpec:
    engine: str
    # The script the engine's interpreter runs, one launch per process.
    probe: Path
    # The engine's clear refusals of EAGLE-3 (a refusal is an outcome, not a crash).
    refusals: tuple[re.Pattern[str], ...]
    # Interpreters to try, in order, where none is named (the engine's own environment).
    default_pythons: Callable[[], list[Path]]
    # What the user runs to install the engine, for the message when none is found.
    install_hint: str
    # Which runner the engine's CPU build uses, for the report (a verdict is for that runner).
    runner: str
    env: dict[str, str] = field(default_factory=dict)
    # The launch options (`--engine-option`) the static predictions assume for this build.
    launch_options: tuple[str, ...] = ()
    # Per-job environment, by job slot (thread binding).
    slot_env: Callable[[int, int], dict[str, str]] = lambda _slot, _jobs: {}
    # The architectures the installed engine registers as text-only generators, read from its
    # source under the package root (the sweep's set-up goal counts those).
    text_only: Callable[[Path], frozenset[str]] = lambda _root: frozenset()
    # The distributions whose version names the installed engine, first found wins (default: the
    # engine's own name).
    distributions: tuple[str, ...] = ()
    # Folders put first on a launch's PYTHONPATH (the engine's own inert stand-ins).
    pythonpath: tuple[Path, ...] = ()
    # What a run on this engine's CPU build cannot show, for the report.
    limits: tuple[str, ...] = ()
