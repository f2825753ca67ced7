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


@dataclass(frozen=True)
class AddBase:
    """Insert the base ``name`` into the bases of a class, at ``position`` among its positional
    bases (their count: after the last one, before any keyword such as ``metaclass=``)."""

    path: str
    class_path: tuple[str, ...]
    name: str
    position: int
    # The module defining the base (its members count as the class's once it is added).
    defined_in: str = ""

    def describe(self) -> str:
        return f"add the base `{self.name}` to `{'.'.join(self.class_path)}`"


@dataclass(frozen=True)
class RenameMethod:
    """Rename the method ``old`` of a class to ``new``; with ``attributes``, every ``x.<old>``
    inside the method is renamed too (a forwarding body calls the same member on its delegate)."""

    path: str
    class_path: tuple[str, ...]
    old: str
    new: str
    attributes: bool = False

    def describe(self) -> str:
        return f"rename `{'.'.join(self.class_path)}.{self.old}` to `{self.new}`"


@dataclass(frozen=True)
class EnumerateLoop:
    """Give an index to the ``for <target> in <iterable>:`` starting on ``line`` inside a method:
    ``for <index>, <target> in enumerate(<iterable>[, start=<start>]):``."""

    path: str
    class_path: tuple[str, ...]
    function: str
    line: int
    index: str
    start: str | None = None

    def describe(self) -> str:
        return f"number the loop on line {self.line} of `{'.'.join(self.class_path)}.{self.function}` with `{self.index}`"


@dataclass(frozen=True)
class ImportName:
    """Bind ``name`` with ``from <module> import <name>`` at module level: added to the
    ``from <module> import ...`` statement starting on ``line`` (``extend``; at ``position``
    among its names), or as a new statement after the module-level statement starting on
    ``line``. New imports of one module after one statement become one statement, names sorted."""

    path: str
    module: str  # as written: ".interfaces" or "vllm.model_executor.models.interfaces"
    name: str
    line: int
    extend: bool
    position: int = 0

    def describe(self) -> str:
        return f"import `{self.name}` from `{self.module}`"


Edit = InsertMembers | InsertStatements | AddKeyword | AddBase | RenameMethod | EnumerateLoop | ImportName
# Edits made inside a class (the others act on module-level statements).
ClassEdit = InsertMembers | InsertStatements | AddKeyword | AddBase | RenameMethod | EnumerateLoop


def edit_sort_key(edit: Edit) -> tuple[int, int, str]:
    if isinstance(edit, InsertMembers):
        return (0, edit.order, edit.name)
    if isinstance(edit, InsertStatements):
        return (1, edit.anchor_line, edit.where)
    if isinstance(edit, AddKeyword):
        return (2, edit.line, edit.keyword)
    if isinstance(edit, AddBase):
        return (3, edit.position, edit.name)
    if isinstance(edit, RenameMethod):
        return (4, 0, edit.old)
    if isinstance(edit, EnumerateLoop):
        return (5, edit.line, edit.index)
    return (6, edit.line, f"{edit.module} {edit.position:09d} {edit.name}")


def new_import_text(module: str, names: list[str]) -> str:
    """The statement that new imports of ``module`` after one anchor become (apply and proof
    both build it from this rule)."""
    return f"from {module} import {', '.join(sorted(set(names)))}"


def edits_by_path(edits: tuple[Edit, ...] | list[Edit]) -> dict[str, list[Edit]]:
    """The edits grouped by the file they change (files sorted by path), each edit once."""
    grouped: dict[str, list[Edit]] = {}
    for edit in edits:
        bucket = grouped.setdefault(edit.path, [])
        if edit not in bucket:  # two fixes may need the same decoder edit
            bucket.append(edit)
    return dict(sorted(grouped.items()))
