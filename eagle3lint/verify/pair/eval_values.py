"""The evaluator's values and bounds: its budget (steps, items built, time), the exceptions that
stop an evaluation (:class:`Unresolved`, :class:`Exhausted`) or carry control flow, the opaque
value a lenient run carries on with, a config's attributes as values, and the checks the
operations on plain values make (split out of :mod:`.evaluate`, which runs the statements)."""

from __future__ import annotations

import ast
import time
from collections.abc import Mapping
from typing import Any

_MAX_STEPS = 200_000
_MAX_ITEMS = 100_000
_MAX_INT = 2**64
# What one evaluation may build in all (every item of every list, tuple, set, dict and string it
# makes, ``sorted`` and comprehensions included) and how long it may take: a list's length and
# the step count alone let ``[sorted(x) for _ in range(99999)]`` on a 100,000-item ``x`` take
# the machine's memory.
_MAX_BUILT = 5_000_000
_MAX_SECONDS = 60.0


class Budget:
    """What an evaluation has cost so far, shared by the evaluators of one run (the constructors
    a draft class's ``__init__`` builds, the methods a setter calls)."""

    def __init__(self) -> None:
        self.steps = 0
        self.built = 0
        self.started = time.monotonic()

    def tick(self, line: int) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise Exhausted("the evaluation takes too many steps", line)
        if self.steps % 1024 == 0 and time.monotonic() - self.started > _MAX_SECONDS:
            raise Exhausted(f"the evaluation takes too long (over {_MAX_SECONDS:.0f} s)", line)

    def charge(self, value: Any, line: int) -> Any:
        """``value``, counted against what the evaluation may build."""
        if isinstance(value, (list, tuple, set, frozenset, dict, str)):
            self.built += len(value)
            if self.built > _MAX_BUILT:
                raise Exhausted(f"the evaluation builds too much (over {_MAX_BUILT:,} items in all)", line)
        return value


class Unresolved(Exception):
    """What the evaluation needed and could not know, with the line that needed it and the file
    that line is in (``path``: filled in by the evaluator of that file's body, :meth:`at`)."""

    def __init__(self, reason: str, line: int = 0, path: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.path = path

    def at(self, path: str) -> Unresolved:
        """This, its line placed in ``path`` where no file holds it yet."""
        if self.line and not self.path:
            self.path = path
        return self


class Exhausted(Unresolved):
    """The evaluation's budget is spent (steps, items built, time): the whole run stops here, a
    lenient evaluator included, since what follows would be judged without what was cut."""


class _Opaque:
    """A value the evaluation carries without knowing it."""

    def __repr__(self) -> str:
        return "<unknown>"


OPAQUE = _Opaque()


class ConfigView:
    """A JSON object seen the way code reads a ``PretrainedConfig``: ``config.hidden_size``,
    ``getattr(config, "x", d)``, ``hasattr``; sub-configs stay dicts (``eagle_config`` is a dict
    in every engine). Every key read is recorded."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.read: set[str] = set()
        # Keys read as attributes (no default) that the config lacks: key -> (the file, the line,
        # whether on a path the evaluation was sure of).
        self.missing: dict[str, tuple[str, int, bool]] = {}

    def has(self, name: str) -> bool:
        self.read.add(name)
        return name in self.data

    def get(self, name: str) -> Any:
        self.read.add(name)
        if name not in self.data:
            raise AttributeError(name)
        return self.data[name]


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def end_body() -> None:
    """Leave the body being run (a hook's way to stop at a ``raise`` the body reaches)."""
    raise _Return(None)


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _bounded(value: Any, line: int) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_INT:
        raise Unresolved("an integer too large to be a layer id or a size", line)
    if isinstance(value, (list, tuple, set)) and len(value) > _MAX_ITEMS:
        raise Unresolved("a list too long to be layer ids", line)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


# What a JSON config holds and Python's own operators judge: anything else (an engine object,
# an unknown value) may define its own operators.
_PLAIN = (type(None), bool, int, float, str, list, tuple, dict)


def _plain(value: Any) -> bool:
    return isinstance(value, _PLAIN)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _refused_operands(op: ast.operator, left: Any, right: Any) -> str:
    """Why Python refuses ``left op right`` (a TypeError) for plain values the evaluation did not
    compute; "" where it would not refuse them, or the evaluation cannot say."""
    if not (_plain(left) and _plain(right)) or (_is_number(left) and _is_number(right)):
        return ""
    if isinstance(op, ast.Mod) and isinstance(left, str):
        return ""  # string formatting
    sequences = (str, list, tuple)
    if isinstance(op, ast.Add) and isinstance(left, sequences) and type(left) is type(right):
        return ""
    if isinstance(op, ast.Mult) and ((isinstance(left, sequences) and isinstance(right, int)) or (isinstance(right, sequences) and isinstance(left, int))):
        return ""
    if not isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Div)):
        return ""
    return f"unsupported operand types {_kind(left)} and {_kind(right)}"


# What ``isinstance`` may test a value against.
_TYPES: dict[str, type] = {"list": list, "tuple": tuple, "dict": dict, "int": int, "str": str, "bool": bool, "float": float}


class _TooLong(ValueError):
    """A value past the evaluator's own bounds (not an error Python would raise)."""


def _range(*args: int) -> range:
    result = range(*args)
    # A range of 10**30 items has no ``len`` (an OverflowError): measured without it.
    if result.stop - result.start > _MAX_ITEMS * abs(result.step):
        raise _TooLong("a range too long")
    return result


_BUILTINS: dict[str, Any] = {
    "len": len, "list": list, "tuple": tuple, "set": set, "sorted": sorted, "max": max, "min": min,
    "int": int, "bool": bool, "abs": abs, "any": any, "all": all, "range": _range,
    "enumerate": lambda items, start=0: list(enumerate(items, start)),
}
