"""Where the engine writes an attribute by name on an object that is not the writing method's own
``self``: ``self.model.embed_tokens = value``, ``layer.weight = Parameter(...)``,
``setattr(module, "weight", ...)``, ``layer.register_parameter("weight", ...)``.

The index knows what a class assigns to its own ``self``; these writes give an object an
attribute its class never names, so a class that lacks one in the index may still have it at run
time. Read from the text (the engine's files are thousands; only lines naming the attribute
matter), nothing imported. A class's own writes with a computed name (``setattr(self, name, v)``,
``self.register_buffer(name, ...)``, a ``__setattr__``) are found by :func:`opens_attributes`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import module_name, read_source

_REGISTER = r"(?:register_parameter|register_buffer|register_module|add_module)"
_RECEIVER = r"[A-Za-z_][\w.]*(?:\[[^\]\n]*\][\w.]*)*"
_CLASS = re.compile(rb"^([ \t]*)class[ \t]+(\w+)")


@dataclass(frozen=True)
class AttributeWrite:
    path: str
    line: int
    receiver: str  # the object written on, as written: "self.model", "layer", "module.mlp"
    module: str  # the module's dotted name
    # The qualname of the class whose body holds the line (a nested class's: ``A.B``), if any.
    owner: str | None


def _patterns(name: str) -> list[re.Pattern[str]]:
    """The three ways of writing ``name``: assigned on an object, ``setattr``, ``register_*``."""
    quoted = rf"['\"]{re.escape(name)}['\"]"
    return [
        re.compile(rf"(?<![\w.])(?P<recv>{_RECEIVER})\.{re.escape(name)}\s*=(?!=)"),
        re.compile(rf"\bsetattr\(\s*(?P<recv>[^,()]+?)\s*,\s*{quoted}"),
        re.compile(rf"(?<![\w.])(?P<recv>{_RECEIVER})\.{_REGISTER}\(\s*{quoted}"),
    ]


def engine_files(engine: Engine) -> Iterator[tuple[Path, str]]:
    """Every Python file of the engine's runtime and its plugins, with the package root it is
    in: the models folders too, not the subtrees the rule pack's ``scan_skip`` leaves out
    (tests, kernels, another runtime)."""
    root = str(engine.root)
    skip = {os.path.normpath(os.path.join(root, m)) for m in engine.pack.scan_skip}
    roots = [(engine.root, skip), *((p.root, set()) for p in engine.plugins)]
    for top, skipped in roots:
        for dirpath, dirnames, filenames in os.walk(str(top)):
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d != "__pycache__" and os.path.join(dirpath, d) not in skipped
            )
            for filename in sorted(filenames):
                if filename.endswith(".py"):
                    yield top, os.path.join(dirpath, filename)


class EngineTexts:
    """The engine's files (``engine_files``), listed once and each read once, for one run: the
    writes of several names are looked for in the same few thousand files (listing and reading
    them again for each name cost more than the search). Held by the run that made it, never
    longer: a file written meanwhile (``fix --apply``) is read afresh by the next run."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._listed: list[tuple[Path, str]] | None = None
        self._texts: dict[str, bytes] = {}

    def __iter__(self) -> Iterator[tuple[Path, str, bytes]]:
        if self._listed is None:
            self._listed = list(engine_files(self.engine))
        for root, path in self._listed:
            data = self._texts.get(path)
            if data is None:
                read = read_source(path)
                data = self._texts[path] = read if isinstance(read, bytes) else b""
            yield root, path, data


def attribute_writes(texts: EngineTexts, name: str) -> Iterator[AttributeWrite]:
    """Each write of ``name`` on an object other than a bare ``self`` (a class's own
    attributes are the index's), in file order. Only the lines naming it are decoded."""
    patterns = _patterns(name)
    needle = name.encode()
    for root, path, data in texts:
        if needle not in data:
            continue
        lines = data.split(b"\n")
        for number in _lines_naming(data, needle):
            code = lines[number].decode("utf-8", "replace").split("#", 1)[0]
            for pattern in patterns:
                for found in pattern.finditer(code):
                    receiver = found.group("recv").strip()
                    if receiver != "self":
                        yield AttributeWrite(path, number + 1, receiver, _module(root, path), _owner(lines, number))


def _lines_naming(data: bytes, needle: bytes) -> Iterator[int]:
    """The (0-based) numbers of the lines holding ``needle``, each once, in order."""
    at = data.find(needle)
    number, counted, last = 0, 0, -1
    while at != -1:
        number += data.count(b"\n", counted, at)
        counted = at
        if number != last:
            yield number
            last = number
        at = data.find(needle, at + len(needle))


def _module(root: Path, path: str) -> str:
    try:
        return module_name(root, Path(path))[0]
    except ValueError:
        return ""


def _owner(lines: list[bytes], number: int) -> str | None:
    """The qualname of the classes whose bodies hold line ``number`` (outermost first)."""
    indent = _indent(lines[number])
    names: list[str] = []
    for index in range(number - 1, -1, -1):
        text = lines[index]
        stripped = text.strip()
        if not stripped or stripped.startswith(b"#"):
            continue
        depth = _indent(text)
        if depth >= indent:
            continue
        indent = depth
        found = _CLASS.match(text)
        if found:
            names.append(found.group(2).decode("ascii", "replace"))
        if depth == 0:
            break
    return ".".join(reversed(names)) or None


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip())


_COMPUTED = (
    (re.compile(r"\bsetattr\(\s*self\s*,\s*(?!['\"])"), "sets attributes with `setattr(self, ...)`"),
    (re.compile(rf"\bself\.{_REGISTER}\(\s*(?!['\"])"), "registers submodules or parameters under computed names"),
    (re.compile(r"\bself\.__dict__\b"), "writes its `__dict__`"),
    (re.compile(r"^\s*def\s+(?:__setattr__|__getattribute__)\b"), "defines `__setattr__`/`__getattribute__`"),
)


def opens_attributes(lines: list[str], name: str) -> str:
    """Why a class whose body is ``lines`` may have attributes its summary does not name (a
    write with a computed name, ``name`` set by ``setattr``/``register_*`` on itself); "" when
    nothing in it does."""
    quoted = re.compile(rf"\b(?:setattr\(\s*self\s*,|self\.{_REGISTER}\()\s*['\"]{re.escape(name)}['\"]")
    for line in lines:
        code = line.split("#", 1)[0]
        if quoted.search(code):
            return f"sets `{name}` by name"
        for pattern, why in _COMPUTED:
            if pattern.search(code):
                return why
    return ""
