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
    variant: str | None  # the platform of a row split by platform (they disagree), else None
    architectures: list[str]
    cells: dict[str, Cell] = field(default_factory=dict)  # release -> cell; none where absent
    # release -> the platform packages the class is registered in there (none: not in one)
    variants: dict[str, list[str]] = field(default_factory=dict)

    def matches(self, name: str, architectures: list[str]) -> bool:
        if self.name != name:
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

    def platforms(self, releases: list[str]) -> str:
        """The variants column: ``amd, nvidia``, with the releases where that holds when it is
        not every release the class is in (``amd, nvidia (0.34.0)``); empty where none."""
        where: dict[tuple[str, ...], list[str]] = {}
        for release in releases:
            if release in self.cells:
                where.setdefault(tuple(self.variants.get(release, ())), []).append(release)
        named = {k: v for k, v in where.items() if k}
        if not named:
            return ""
        present = [r for r in releases if r in self.cells]
        parts = []
        for names, some in named.items():
            text = ", ".join(names)
            parts.append(text if some == present else f"{text} ({_span(some, releases)})")
        return "; ".join(parts)


def _span(some: list[str], every: list[str]) -> str:
    """``0.5.9 to 0.5.23`` for a run of consecutive releases, else the list."""
    if len(some) > 1 and every[every.index(some[0]) : every.index(some[-1]) + 1] == some:
        return f"{some[0]} to {some[-1]}"
    return ", ".join(some)


@dataclass
class _Entry:
    """A class as the releases register it, platforms apart: release -> platform -> cell."""

    name: str
    architectures: list[str]
    cells: dict[str, dict[str | None, Cell]] = field(default_factory=dict)

    def rows(self) -> list[ModelHistory]:
        """One row, or one per platform where the platforms disagree in some release."""
        agree = all(len({c.shown for c in by.values()}) == 1 for by in self.cells.values())
        if agree:
            row = ModelHistory(self.name, None, list(self.architectures))
            for release, by in self.cells.items():
                first = next(iter(by.values()))
                codes = tuple(sorted({code for c in by.values() for code in c.codes}))
                row.cells[release] = Cell(first.status, first.outcome, codes)
                named = sorted(v for v in by if v is not None)
                if named:
                    row.variants[release] = named
            return [row]
        platforms = sorted({v for by in self.cells.values() for v in by if v is not None})
        out = []
        for platform in platforms:
            row = ModelHistory(self.name, platform, list(self.architectures))
            for release, by in self.cells.items():
                # Where the class was one (no platform package), that one cell is each platform's.
                cell = by.get(platform) or (by.get(None) if set(by) == {None} else None)
                if cell is not None:
                    row.cells[release] = cell
                    if platform in by:
                        row.variants[release] = [platform]
            out.append(row)
        return out


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
    # Every release the package index lists, where this run asked it (None: not asked).
    published: list[str] | None = None
    _entries: list[_Entry] = field(default_factory=list)

    @property
    def not_reached(self) -> list[str]:
        done = {*self.releases, *(s.release for s in self.skipped)}
        return [r for r in self.planned if r not in done]

    def add(self, release: str, name: str, variant: str | None, architectures: list[str], cell: Cell) -> None:
        """One class of one release (releases oldest first); ``finish`` lays out the rows."""
        for entry in self._entries:
            same = entry.name == name and (bool(set(entry.architectures) & set(architectures)) or not (entry.architectures or architectures))
            if same and variant not in entry.cells.get(release, {}):
                entry.cells.setdefault(release, {})[variant] = cell
                entry.architectures.extend(a for a in architectures if a not in entry.architectures)
                return
        self._entries.append(_Entry(name, list(architectures), {release: {variant: cell}}))

    def finish(self) -> None:
        """The rows, from what ``add`` was given."""
        self.models = [row for entry in self._entries for row in entry.rows()]

    def first_ok(self, model: ModelHistory) -> tuple[str, bool] | None:
        """The first release analysed where ``model`` is supported, and whether it may have been
        supported earlier: a release before it that the index lists was not analysed (or,
        without the index's list, it is the first release analysed)."""
        first = model.first_supported(self.releases)
        if first is None:
            return None
        if self.published is None:
            return first, first == self.releases[0]
        from packaging.version import InvalidVersion, Version

        def parsed(text: str) -> Version | None:
            try:
                return Version(text)
            except InvalidVersion:
                return None

        at = parsed(first)
        analysed_versions = {parsed(r) for r in self.releases}
        # (A pre-release counts only where one was analysed: a range leaves them out unless asked.)
        pre = any(v is not None and v.is_prerelease for v in analysed_versions)
        earlier = [
            (v, r) for r in self.published
            if (v := parsed(r)) is not None and at is not None and v < at and (pre or not v.is_prerelease or v in analysed_versions)
        ]
        if not earlier:
            return first, False
        return first, max(earlier)[0] not in analysed_versions

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
