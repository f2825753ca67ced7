"""Which of a list of files (as pre-commit passes them) belong to an engine tree.

A commit that touches no model or engine file must cost next to nothing: this looks at the file
names and the folders above them. Only when none is in an engine tree are the Python files'
first bytes read (:func:`model_like_files`): a model file outside every tree is said, never
passed silently.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from eagle3lint.common.errors import UsageError
from eagle3lint.fetch.engine_finder import discover_engine, located
from eagle3lint.source.engine import Engine

PYTHON_SUFFIXES = (".py", ".pyi")


def is_file_list(paths: tuple[Path, ...]) -> bool:
    """Only existing files, no folders: the shape of a hook's argument list."""
    return bool(paths) and all(p.is_file() for p in paths)


def engine_files(
    paths: tuple[Path, ...],
    engine: str | None = None,
    engine_root: Path | None = None,
    extra_models: list[Path] | None = None,
) -> list[Path]:
    """The Python files among ``paths`` that lie inside an engine package (the one at
    ``engine_root`` when given, else any found by walking up from each file), or inside one of
    the configured out-of-tree model folders."""
    # Resolved like the engine root, so module names can be derived from them.
    python = [located(p) for p in paths if p.suffix in PYTHON_SUFFIXES]
    extra = [located(e) for e in extra_models or []]
    python_extra = [p for p in python if any(p == e or e in p.parents for e in extra)]
    if engine_root is not None:
        root = located(discover_engine([], engine=engine, engine_root=engine_root).root)
        return [p for p in python if root in p.parents or p in python_extra]
    inside: list[Path] = list(python_extra)
    for path in python:
        if path in python_extra:
            continue
        try:
            discover_engine([path], engine=engine)
        except UsageError:
            continue
        inside.append(path)
    return inside


# Enough of a file to see its classes: model files start with their imports and classes.
_MODEL_SNIFF_BYTES = 2 << 20
_CLASS_RE = re.compile(r"^class\s+(\w+)", re.M)
_ENTRY_CLASS_RE = re.compile(r"^EntryClass\s*=", re.M)


def model_like_files(paths: tuple[Path, ...]) -> list[Path]:
    """The Python files among ``paths`` that look like model files to some engine: a class its
    rule pack would call a target or an EAGLE-3 draft (``FooForCausalLM``), an ``EntryClass``, or
    a definition of an EAGLE-3 member. A script, a test helper or a config module is none."""
    from eagle3lint.common.safe_io import open_regular_file, read_upto
    from eagle3lint.engines import adapters

    packs = [a.pack() for a in adapters()]
    names = "|".join(re.escape(m) for pack in packs for m in pack.eagle3_members)
    members = re.compile(rf"^\s*def\s+(?:{names})\b" if names else "(?!)", re.M)
    found: list[Path] = []
    for path in paths:
        if path.suffix not in PYTHON_SUFFIXES:
            continue
        try:
            fd = open_regular_file(path)
        except OSError:
            continue  # nothing to sniff; an unreadable file named alone is said by the check itself
        try:
            text = read_upto(fd, _MODEL_SNIFF_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        finally:
            os.close(fd)
        classes = _CLASS_RE.findall(text)
        if (
            any(p.target_name_pattern.search(c) or p.eagle3_draft_pattern.search(c) for p in packs for c in classes)
            or _ENTRY_CLASS_RE.search(text)
            or members.search(text)
        ):
            found.append(path)
    return found


def widen_for_call_site_changes(engine: Engine, scope: list[Path]) -> tuple[list[Path], list[Path]]:
    """A changed engine file that touches the interface (a runner, a speculative worker) can
    break every model: then every models folder joins the reporting scope. Returns the scope and
    the files that widened it."""
    from eagle3lint.model.contract import contract_needles

    needles = contract_needles(engine)
    root = located(engine.root)
    widening: list[Path] = []
    for path in scope:
        if not path.is_file():
            continue
        resolved = located(path)
        if root not in resolved.parents or not engine.scans_for_call_sites(resolved.relative_to(root).parts):
            continue
        try:
            data = resolved.read_bytes()
        except OSError:
            continue
        if any(n in data for n in needles):
            widening.append(path)
    if not widening:
        return scope, []
    folders = [engine.root / m for m in engine.pack.models if (engine.root / m).is_dir()]
    return [*scope, *folders], widening
