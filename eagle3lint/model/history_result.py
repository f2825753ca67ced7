"""What a history holds: each model's EAGLE-3 status across engine releases, one ``Cell`` per
release a ``ModelHistory`` row is in, the releases skipped (split out of ``run.history``, which
fetches and analyses the releases; ``report.history`` shows it)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from eagle3lint.common.findings import FileError


@dataclass(frozen=True)
class Cell:
    status: str
    outcome: str | None
    codes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "outcome": self.outcome, "codes": list(self.codes)}

    @property
    def shown(self) -> tuple[str, str | None]:
        """What a matrix shows of it (the codes are in the details)."""
        return self.status, self.outcome


@dataclass
class ModelHistory:
    name: str  # the class's qualified name in its module
    variant: str | None
    architectures: list[str]
    cells: dict[str, Cell] = field(default_factory=dict)  # release -> cell; none where absent

    def matches(self, name: str, variant: str | None, architectures: list[str]) -> bool:
        if (self.name, self.variant) != (name, variant):
            return False
        return bool(set(self.architectures) & set(architectures)) or not (self.architectures or architectures)

    def first_supported(self, releases: list[str]) -> str | None:
        return next((r for r in releases if r in self.cells and self.cells[r].status == "supported"), None)

    def supported_since(self, releases: list[str]) -> str | None:
        """The first release of the run of supported ones that reaches the last release
        analysed: what a deployer needs at least (None where the last one does not support it)."""
        since = None
        for release in releases:
            cell = self.cells.get(release)
            supported = cell is not None and cell.status == "supported"
            since = (since or release) if supported else None
        return since

    def last_broken(self, releases: list[str]) -> tuple[str, tuple[str, ...]] | None:
        broken = [(r, self.cells[r].codes) for r in releases if r in self.cells and self.cells[r].status == "broken"]
        return broken[-1] if broken else None

    def changes(self, releases: list[str]) -> list[tuple[str, Cell | None, Cell | None]]:
        """Each release where what the matrix shows changed (appearing and disappearing too),
        with the cells before and after."""
        out: list[tuple[str, Cell | None, Cell | None]] = []
        previous: Cell | None = None
        for n, release in enumerate(releases):
            cell = self.cells.get(release)
            if n and (cell.shown if cell else None) != (previous.shown if previous else None):
                out.append((release, previous, cell))
            previous = cell
        return out

    def label(self) -> str:
        return f"{self.name} [{self.variant}]" if self.variant else self.name


@dataclass(frozen=True)
class Skipped:
    release: str
    problem: str


@dataclass
class History:
    engine: str
    queries: list[str]  # as given
    planned: list[str]  # every release the queries selected, oldest first
    releases: list[str] = field(default_factory=list)  # those analysed
    models: list[ModelHistory] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # published without a wheel
    failure: str | None = None  # what ended the history early
    errors: list[tuple[str, FileError]] = field(default_factory=list)  # (release, file error)
    options: dict[str, Any] | None = None  # the launch options assumed (as the JSON has them)
    # release -> the launch options (as a user gives them) under which it refuses every model
    refusals: dict[str, list[str]] = field(default_factory=dict)

    @property
    def not_reached(self) -> list[str]:
        done = {*self.releases, *(s.release for s in self.skipped)}
        return [r for r in self.planned if r not in done]

    def add(self, release: str, name: str, variant: str | None, architectures: list[str], cell: Cell) -> None:
        for row in self.models:
            if release not in row.cells and row.matches(name, variant, architectures):
                row.cells[release] = cell
                row.architectures.extend(a for a in architectures if a not in row.architectures)
                return
        self.models.append(ModelHistory(name, variant, list(architectures), {release: cell}))

    def narrowed(self, names: tuple[str, ...]) -> list[str]:
        """Keep the rows whose class or architecture ``names`` name (case aside; ``*`` and
        ``?`` as in a shell); returns the names that matched nothing."""
        if not names:
            return []
        kept: list[ModelHistory] = []
        unmatched: list[str] = []
        for pattern in names:
            hits = [m for m in self.models if _named(m, pattern)]
            if not hits:
                unmatched.append(pattern)
            kept.extend(m for m in hits if m not in kept)
        self.models = [m for m in self.models if m in kept]
        return unmatched


def _named(model: ModelHistory, pattern: str) -> bool:
    wanted = pattern.lower()
    names = [model.name, model.name.rsplit(".", 1)[-1], *model.architectures]
    return any(fnmatch.fnmatchcase(n.lower(), wanted) for n in names)
