"""Moving a reused unit's summary to where its text lies now: every line number it holds, by
the same offset (``source.reuse``). Columns stay: a unit is reused only where its text, its
indentation included, is unchanged.

The summaries are changed in place: they were decoded for this one parse, and each object is
moved once however many units reach it (a class unit and its method units share summaries).
"""

from __future__ import annotations

from eagle3lint.source.capture_facts import CaptureFacts
from eagle3lint.source.summary_types import (
    ClassSummary,
    Construction,
    FunctionSummary,
    ReusableUnit,
)


class LineShift:
    def __init__(self, delta: int) -> None:
        self.delta = delta
        self._moved: set[int] = set()

    def _first_visit(self, obj: object) -> bool:
        if id(obj) in self._moved:
            return False
        self._moved.add(id(obj))
        return True

    def unit(self, unit: ReusableUnit) -> None:
        if not self._first_visit(unit):
            return
        d = self.delta
        unit.first += d
        unit.end += d
        if unit.top is not None:
            kind, first, line, end, col, end_col, names = unit.top
            unit.top = (kind, first + d, line + d, end + d, col, end_col, names)
        for _, cls in unit.classes:
            self.cls(cls)
        if unit.function is not None:
            self.function(unit.function)
        for method in unit.methods:
            self.unit(method)

    def cls(self, cls: ClassSummary) -> None:
        if not self._first_visit(cls):
            return
        d = self.delta
        cls.lineno += d
        cls.end_lineno += d
        for fn in cls.methods.values():
            self.function(fn)
        cls.duplicate_methods = [(name, line + d, earlier + d) for name, line, earlier in cls.duplicate_methods]
        cls.class_attrs = {name: line + d for name, line in cls.class_attrs.items()}
        for attr in cls.instance_attrs.values():
            attr.lineno += d
            for construction in attr.constructions:
                self.construction(construction)

    def construction(self, construction: Construction) -> None:
        if not self._first_visit(construction):
            return
        d = self.delta
        construction.lineno += d
        construction.branch = tuple((line + d, arm) for line, arm in construction.branch)

    def function(self, fn: FunctionSummary) -> None:
        if not self._first_visit(fn):
            return
        d = self.delta
        fn.lineno += d
        fn.end_lineno += d
        fn.sure_reads = [(chain, line + d, col) for chain, line, col in fn.sure_reads]
        if fn.capture is not None:
            self.capture(fn.capture)

    def capture(self, facts: CaptureFacts) -> None:
        d = self.delta
        facts.writes = [(path, line + d) for path, line in facts.writes]
        facts.marker_writes = [(path, marker, line + d) for path, marker, line in facts.marker_writes]
        facts.delegations = [(path, method, line + d) for path, method, line in facts.delegations]
        for loop in facts.loops:
            loop.line += d
            loop.option_skips = [(option, attrs, line + d) for option, attrs, line in loop.option_skips]
        facts.aux_unpacks = [(name, line + d) for name, line in facts.aux_unpacks]
        facts.logits_calls = [(line + d, passed) for line, passed in facts.logits_calls]
