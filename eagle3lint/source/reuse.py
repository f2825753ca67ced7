"""Summarising a changed file from its earlier version's summary: only what changed is parsed.

Between two releases most changed files differ by a few lines (an import, so every line below
moves), and a file-level cache cannot reuse them. Each summary therefore keeps its *units*
(``ReusableUnit``: module-level classes and functions, and the methods of a module-level class
that add nothing to it but their own summary), with each one's text digest. For a later
version of the file:

1. each earlier unit is searched for by its first line and taken where the same text lies on
   whole lines (a class whole, else its methods one by one);
2. the file is parsed with each taken unit replaced by a one-line stand-in ``def`` and blank
   lines, so that every other line keeps its number and column;
3. the parser then proves each stand-in is a statement where the unit was (in the module's
   body, or a module-level class's): text found inside a string or a bracket, or under another
   block, makes no stand-in there, and the file is parsed whole instead;
4. the summary is made from that tree, each stand-in given its unit's summary moved by its
   line offset (``line_shift``).

The result equals a whole parse's summary, units included (a release test compares them over
every changed file of two release pairs); anything unexpected falls back to the whole parse.
"""

from __future__ import annotations

import ast
import bisect
import itertools
from collections.abc import Callable
from typing import NamedTuple

from eagle3lint.common.findings import FileError
from eagle3lint.common.lines import source_lines
from eagle3lint.source.layout import unit_digest
from eagle3lint.source.line_shift import LineShift
from eagle3lint.source.summary_types import ModuleSummary, ReusableUnit

# The stand-ins' name; a file that holds it anywhere is parsed whole.
STAND_IN = "_eagle3lint_reused_unit_"


class _Placement:
    __slots__ = ("count", "line", "method", "unit")

    def __init__(self, unit: ReusableUnit, line: int, count: int, method: bool) -> None:
        self.unit, self.line, self.count, self.method = unit, line, count, method


class _Finder:
    """Where earlier units' texts lie in the new text, on whole lines and not overlapping."""

    def __init__(self, text: str, lines: list[str]) -> None:
        self.text = text
        self.lines = lines
        self.offsets = [0, *itertools.accumulate(map(len, lines))]
        self.used = bytearray(len(lines))  # 1 for each line a found unit holds
        # Places a head is looked at past its first, over all units: each may hash its text.
        self.budget = 4 * len(lines) + 1000

    def find(self, unit: ReusableUnit) -> tuple[int, int] | None:
        """The unit's text as lines (first 0-based line, line count), or None."""
        count = unit.end - unit.first + 1
        text, offsets = self.text, self.offsets
        pos = text.find(unit.head)
        while pos != -1:
            i = bisect.bisect_left(offsets, pos)
            if (
                i < len(offsets)
                and offsets[i] == pos
                and i + count < len(offsets)
                and offsets[i + count] - pos == unit.length
                and not self._overlaps(i, i + count - 1)
                and self._ends_there(i + count, _indent(unit.head))
                and unit_digest(text[pos : pos + unit.length]) == unit.digest
            ):
                self.used[i : i + count] = b"\x01" * count
                return i, count
            pos = text.find(unit.head, pos + 1)
            self.budget -= 1
            if self.budget < 0:  # a head found at very many places (a hostile text)
                return None
        return None

    def _ends_there(self, after: int, indent: str) -> bool:
        """Whether the block the unit's text makes ends with it: the next line with code is no
        deeper (a class that gained a field has the earlier class as its first lines). The
        stand-in's parse would refuse such a text too, at the cost of a second parse."""
        for line in itertools.islice(self.lines, after, None):
            code = line.lstrip(" \t\f")
            if code and code[0] not in "#\r\n":
                return len(line) - len(code) <= len(indent)
        return True

    def _overlaps(self, first: int, last: int) -> bool:
        return self.used.find(1, first, last + 1) != -1


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


# A search for every unit goes over the text once per unit: beyond this many characters searched
# (a hostile pair of versions, thousands of units in megabytes), the file is parsed whole.
MAX_SEARCH_CHARS = 400_000_000


def plan_reuse(text: str, previous: ModuleSummary) -> tuple[list[str], list[_Placement]] | None:
    """The new text's lines and where earlier units lie in them; None when nothing is found."""
    if not previous.units or STAND_IN in text:
        return None
    searches = len(previous.units) + sum(len(u.methods) for u in previous.units)
    if searches * max(len(text), 1) > MAX_SEARCH_CHARS:
        return None
    lines = source_lines(text)
    finder = _Finder(text, lines)
    placements: list[_Placement] = []
    split: list[ReusableUnit] = []
    for unit in previous.units:
        where = finder.find(unit)
        if where is not None:
            placements.append(_Placement(unit, where[0], where[1], method=False))
        elif unit.methods:
            split.append(unit)
    for unit in split:
        for method in unit.methods:
            where = finder.find(method)
            if where is not None:
                placements.append(_Placement(method, where[0], where[1], method=True))
    return (lines, placements) if placements else None


def masked_text(lines: list[str], placements: list[_Placement]) -> str:
    out = list(lines)
    for k, placed in enumerate(placements):
        out[placed.line] = f"{_indent(placed.unit.head)}def {STAND_IN}{k}(): pass\n"
        for j in range(placed.line + 1, placed.line + placed.count):
            out[j] = "\n"
    return "".join(out)


def standing_in(tree: ast.Module, placements: list[_Placement]) -> dict[str, ReusableUnit] | None:
    """Each stand-in's unit, moved to its new lines, once the tree shows every stand-in where
    its unit was; None otherwise. A class ending in a stand-in is given the unit's end."""
    found: dict[str, tuple[ast.stmt, ast.ClassDef | None]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith(STAND_IN):
            found[stmt.name] = (stmt, None)
        elif isinstance(stmt, ast.ClassDef):
            for inner in stmt.body:
                if isinstance(inner, ast.FunctionDef) and inner.name.startswith(STAND_IN):
                    found[inner.name] = (inner, stmt)
    if len(found) != len(placements):
        return None
    for k, placed in enumerate(placements):
        entry = found.get(f"{STAND_IN}{k}")
        if entry is None or entry[0].lineno != placed.line + 1 or (entry[1] is not None) != placed.method:
            return None
    units: dict[str, ReusableUnit] = {}
    for k, placed in enumerate(placements):
        stmt, owner = found[f"{STAND_IN}{k}"]
        if owner is not None and owner.body[-1] is stmt:
            owner.end_lineno = placed.line + placed.count
            owner.end_col_offset = placed.unit.end_col
        LineShift(placed.line + 1 - placed.unit.first).unit(placed.unit)
        units[f"{STAND_IN}{k}"] = placed.unit
    return units


class Reused(NamedTuple):
    tree: ast.Module  # the new text's, the units taken stood in for
    units: dict[str, ReusableUnit]  # moved to their new lines, by their stand-ins' names
    lines: list[str]  # the new text's


def reused_tree(text: str, previous: ModuleSummary, parse: Callable[[str], ast.Module | FileError]) -> Reused | None:
    """The new text parsed with what ``previous`` offers; None where nothing can be reused or
    the stand-ins do not prove out (the caller parses the whole text)."""
    planned = plan_reuse(text, previous)
    if planned is None:
        return None
    lines, placements = planned
    tree = parse(masked_text(lines, placements))
    if isinstance(tree, FileError):
        return None
    units = standing_in(tree, placements)
    if units is None:
        return None
    return Reused(tree, units, lines)
