"""Planned edits as plain data: where to insert what. Engine-neutral; ``apply`` performs them
with libcst and ``proof`` replays them on the ``ast`` to prove nothing else moved."""

from __future__ import annotations

from dataclasses import dataclass


class ApplyError(Exception):
    """An edit cannot be placed in a file (its anchor is missing or ambiguous)."""


# Where statements go relative to their anchor.
BEFORE, AFTER, BODY_START, BODY_END = "before", "after", "body-start", "body-end"


@dataclass(frozen=True)
class InsertMembers:
    """Insert a class member (one ``def``) into a class body, after the member ``after`` (the
    last definition of that name in the class body) or, with ``after=None``, at the end."""

    path: str
    class_path: tuple[str, ...]
    after: str | None
    source: str  # rendered template: 4-space indentation, "\n" line ends
    name: str
    order: int = 0  # among insertions at the same place

    def describe(self) -> str:
        return f"add `{'.'.join(self.class_path)}.{self.name}`"


@dataclass(frozen=True)
class InsertStatements:
    """Insert statements into a method of a class.

    ``anchor_line == 0`` anchors on the method itself (``where`` is body-start or body-end);
    otherwise on the statement of kind ``anchor_kind`` ("For", "Assign", "Return") starting at
    ``anchor_line`` inside that method.
    """

    path: str
    class_path: tuple[str, ...]
    function: str
    anchor_line: int
    anchor_kind: str
    where: str
    source: str

    def describe(self) -> str:
        target = f"line {self.anchor_line}" if self.anchor_line else self.function
        return f"insert into `{'.'.join(self.class_path)}.{self.function}` ({self.where} {target})"


@dataclass(frozen=True)
class AddKeyword:
    """Append ``keyword=value`` to the call of ``func`` (e.g. ``self.logits_processor``) that
    starts on ``line`` inside a method of a class."""

    path: str
    class_path: tuple[str, ...]
    function: str
    line: int
    func: str
    keyword: str
    value: str

    def describe(self) -> str:
        return f"pass `{self.keyword}=` to `{self.func}` on line {self.line}"


Edit = InsertMembers | InsertStatements | AddKeyword


def edit_sort_key(edit: Edit) -> tuple[int, int, str]:
    if isinstance(edit, InsertMembers):
        return (0, edit.order, edit.name)
    if isinstance(edit, InsertStatements):
        return (1, edit.anchor_line, edit.where)
    return (2, edit.line, edit.keyword)
