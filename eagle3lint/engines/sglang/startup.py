"""In which order an SGLang release reaches the target's interface members at start-up, read
from the release's own code.

The order decides a target's outcome where it lacks several members: the first the engine
reaches stops start-up. It is not the same in every release. 0.5.9 asks the target to capture
(``set_eagle3_layers_to_capture``, bare) while its ModelRunner initialises, before the draft
worker exists; the draft worker then calls ``get_embed_and_head``. 0.5.23's scheduler builds the
draft worker (which calls ``get_embed_and_head``, bare) before the attention backends, and only
the latter check for ``set_eagle3_layers_to_capture`` (a ``hasattr`` check that refuses): a class
with neither member crashes with a bare ``AttributeError`` before the release's own refusal.

How it is read (the text, nothing imported): the scheduler's start-up function
(``Scheduler.init_model_worker``) runs its statements in order (the target worker, the draft
worker, the memory pools, the attention backends...). From each call site of a member, the
functions that lead to it are followed back by name through the runtime's folders (a method by its
name, a constructor by its class's name, which a factory may only hand on; a line belongs to the
outermost ``def`` that holds it) until a statement of the start-up function names one. The
shortest chains decide (and those one name longer: a factory adds one), so that a common name
far from the site cannot place it earlier; a member is reached at the earliest such statement
for any of its sites. Members that no statement leads to, and members reached by the same
statement, keep the rule pack's order.
"""

from __future__ import annotations

import re
from pathlib import Path

from eagle3lint.common.findings import FileError
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.source.sources import read_source

# The scheduler's start-up: (file under the package root, class, function), the first found used.
ENTRIES = (("srt/managers/scheduler.py", "Scheduler", "init_model_worker"),)
# Where the functions between the scheduler and the call sites live.
FOLDERS = ("srt/managers", "srt/model_executor", "srt/speculative")
# How many functions back from a call site the search goes.
MAX_DEPTH = 12


_HEADER = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


class _File:
    """One file's text lines and its ``def``/``class`` headers (line index, indent, kind, name)."""

    def __init__(self, text: str) -> None:
        self.lines = [line.split("#", 1)[0] if "#" in line else line for line in text.splitlines()]
        self.headers: list[tuple[int, int, str, str]] = []
        for number, line in enumerate(self.lines):
            found = _HEADER.match(line)
            if found:
                self.headers.append((number, len(found.group(1).expandtabs()), found.group(2), found.group(3)))

    def caller(self, number: int) -> str | None:
        """The name that calls the outermost function holding line ``number``: a module
        function's or a method's name, its class's name for ``__init__``; None outside one."""
        indent = _indent(self.lines[number])
        chain: list[tuple[int, str, str]] = []
        for line, depth, kind, name in reversed(self.headers):
            if line >= number:
                continue
            if depth < indent:
                chain.append((depth, kind, name))
                indent = depth
                if depth == 0:
                    break
        chain.reverse()  # outermost first
        if not chain:
            return None
        if chain[0][1] == "def":
            return chain[0][2]
        if len(chain) >= 2 and chain[1][1] == "def":
            return chain[0][2] if chain[1][2] == "__init__" else chain[1][2]
        return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip()) if line.strip() else 1 << 30


class _Source:
    """The runtime's files, read once; a file's headers are indexed only where it mentions a
    name searched for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.texts: dict[Path, str] = {}
        for folder in FOLDERS:
            base = root / folder
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*.py")):
                data = read_source(str(path))
                if not isinstance(data, FileError):
                    self.texts[path] = data.decode("utf-8", errors="replace")
        self.files: dict[Path, _File] = {}
        self.cache: dict[str, set[str]] = {}

    def file(self, path: Path) -> _File:
        if path not in self.files:
            self.files[path] = _File(self.texts[path])
        return self.files[path]

    def referrers(self, name: str) -> set[str]:
        """The names of the functions (a method's, or its class's for ``__init__``) whose body
        names ``name``: calls it, or hands it on (a factory returning a worker class)."""
        if name in self.cache:
            return self.cache[name]
        word = re.compile(rf"\b{re.escape(name)}\b")
        found: set[str] = set()
        for path, text in self.texts.items():
            if name not in text:
                continue
            source = self.file(path)
            for number, line in enumerate(source.lines):
                if name in line and word.search(line) and not _HEADER.match(line):
                    caller = source.caller(number)
                    if caller is not None and caller != name:
                        found.add(caller)
        self.cache[name] = found
        return found


def _site_name(site: ContractSite) -> str:
    """The name its callers use for the function holding ``site`` (``ModelRunner.initialize``:
    ``initialize``; ``EAGLEWorker.__init__``: ``EAGLEWorker``; a nested function: its outer one)."""
    parts = site.function.split(".")
    if len(parts) >= 2 and parts[1] == "__init__":
        return parts[0]
    if len(parts) >= 2 and parts[0][:1].isupper():
        return parts[1]
    return parts[0]


def _entry(source: _Source) -> list[str] | None:
    """The statements of the scheduler's start-up function, in order (each its text)."""
    for rel, cls_name, fn_name in ENTRIES:
        path = source.root / rel
        if path not in source.texts:
            continue
        lines = source.file(path).lines
        in_class = False
        for number, line in enumerate(lines):
            found = _HEADER.match(line)
            if not found:
                continue
            depth = len(found.group(1))
            if found.group(2) == "class" and depth == 0:
                in_class = found.group(3) == cls_name
            elif in_class and found.group(2) == "def" and found.group(3) == fn_name:
                return _statements(lines, number + 1, depth)
    return None


def _statements(lines: list[str], start: int, header_depth: int) -> list[str]:
    """The body after a ``def`` header at ``header_depth``: one text per statement at its
    body's indentation (a compound statement with what it holds)."""
    body: list[list[str]] = []
    depth: int | None = None
    for line in lines[start:]:
        indent = _indent(line)
        if indent == 1 << 30:
            continue
        if indent <= header_depth:
            break
        if depth is None:
            depth = indent
        if indent == depth and not line.lstrip().startswith((")", "]", "}")):
            body.append([line])
        elif body:
            body[-1].append(line)
    return ["\n".join(statement) for statement in body]


def _reached_at(source: _Source, body: list[str], name: str) -> int | None:
    """The first statement of ``body`` that leads to ``name`` by one of the shortest chains of
    names (those one name longer too: a factory adds a step; longer ones are not looked at)."""
    seen = {name}
    frontier = {name}
    best: int | None = None
    slack = 1
    for _ in range(MAX_DEPTH):
        names = sorted(frontier)
        words = [re.compile(rf"\b{re.escape(n)}\b") for n in names]
        hits = [index for index, stmt in enumerate(body) if any(n in stmt and w.search(stmt) for n, w in zip(names, words, strict=True))]
        if hits:
            best = min(hits) if best is None else min(best, *hits)
        if best is not None:
            if slack == 0 or best == 0:
                break
            slack -= 1
        nxt: set[str] = set()
        for current in frontier:
            nxt.update(source.referrers(current) - seen)
        if not nxt:
            break
        seen.update(nxt)
        frontier = nxt
    return best


def reach_steps(root: Path, sites_by_member: dict[str, list[ContractSite]]) -> dict[str, int]:
    """For each member, the index of the first statement of the scheduler's start-up that leads
    to one of its sites; members it cannot place are left out."""
    source = _Source(root)
    body = _entry(source)
    if body is None:
        return {}
    steps: dict[str, int] = {}
    at: dict[str, int | None] = {}
    for member, sites in sites_by_member.items():
        found = []
        for site in sites:
            name = _site_name(site)
            if name not in at:
                at[name] = _reached_at(source, body, name)
            if at[name] is not None:
                found.append(at[name])
        if found:
            steps[member] = min(i for i in found if i is not None)
    return steps


def start_up_order(pack_order: list[str], root: Path, sites_by_member: dict[str, list[ContractSite]]) -> list[str]:
    """The rule pack's member order with the members this release's start-up places put in the
    order it reaches them (in the slots they held; ties and the rest keep the pack's order)."""
    steps = reach_steps(root, {m: s for m, s in sites_by_member.items() if m in pack_order and s})
    placed = [m for m in pack_order if m in steps]
    if len(placed) < 2:
        return list(pack_order)
    ordered = iter(sorted(placed, key=lambda m: (steps[m], pack_order.index(m))))
    return [next(ordered) if m in steps else m for m in pack_order]
