"""The EAGLE-3 contract as the engine's own source states it.

Every access of an interface member on a model object outside the models folder becomes a
:class:`ContractSite` with its role (target or draft) and its guard:

* ``none``     — a bare access: a missing member is an ``AttributeError`` at start-up;
* ``error``    — probed first, with a clear error (``if not hasattr: raise``, or a try/except
  that re-raises): still fatal, but readable;
* ``fallback`` — probed with an alternative path (``if hasattr``, ``getattr(x, m, default)``,
  a swallowed ``AttributeError``): the member is optional.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from eagle3lint.common.findings import FileError
from eagle3lint.common.lines import count_line_ends, source_lines
from eagle3lint.model.contract_sites import _Context, _SiteCollector
from eagle3lint.model.contract_types import (
    CheckCall,
    CheckFunctions,
    Contract,
    ContractExtension,
    ContractSite,
    MemberContract,
)
from eagle3lint.model.launch_checks import read_launch_refusals
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import decode_source, parse_text, read_source

_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)")


_CLASS_RE = re.compile(r"^([ \t]*)class[ \t]+(\w+)")


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _function_chunks(lines: list[str], hit_lines: list[int]) -> list[tuple[int, int, int, str]] | None:
    """For each hit line, the innermost enclosing ``def`` as (start, end, indent, qualname).

    Parsing only the functions that mention a member costs a fraction of parsing the whole
    (often very large) runner and worker files. None asks the caller to parse the whole file
    (a hit outside any function, or a layout this line-based cut cannot trust).
    """
    chunks: dict[int, tuple[int, int, int, str]] = {}
    for hit in hit_lines:
        hit_indent = _indent_of(lines[hit])
        start = None
        for j in range(hit, -1, -1):
            match = _DEF_RE.match(lines[j])
            # The enclosing def, or the def on the hit line itself (a member in its name).
            if match and (len(match.group(1)) < hit_indent or j == hit):
                start, indent, name = j, len(match.group(1)), match.group(2)
                break
        if start is None:
            if _in_module_import(lines, hit):
                continue  # ``from ...interfaces import (supports_eagle3, ...)``: no call site
            return None
        if start in chunks:
            continue
        def_line = start
        # Decorators belong to the function; include them so the chunk parses on its own.
        while start > 0 and lines[start - 1].strip().startswith("@") and _indent_of(lines[start - 1]) == indent:
            start -= 1
        end = len(lines)
        for k in range(def_line + 1, len(lines)):
            text = lines[k]
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if _indent_of(text) <= indent and (stripped[0].isalpha() or stripped[0] in "_@"):
                end = k
                break
        owner = ""
        for j in range(start, -1, -1):
            match = _CLASS_RE.match(lines[j])
            if match and len(match.group(1)) < indent:
                owner = match.group(2) + "."
                break
        chunks[start] = (start, end, indent, owner + name)
    ordered = sorted(chunks.values())
    # A closure inside another hit function is already part of the outer chunk.
    kept: list[tuple[int, int, int, str]] = []
    for chunk in ordered:
        if kept and chunk[0] < kept[-1][1]:
            continue
        kept.append(chunk)
    return kept


_IMPORT_NAME_RE = re.compile(r"^[ \t]*\(?[ \t]*\w+(?:[ \t]+as[ \t]+\w+)?[ \t]*,?[ \t]*\)?[ \t]*(?:#.*)?$")


def _in_module_import(lines: list[str], hit: int) -> bool:
    """Whether line ``hit`` belongs to a top-level import statement (its first line, or a name
    in its parenthesised list)."""
    first = lines[hit]
    if first.startswith(("from ", "import ")):
        return True
    if not _IMPORT_NAME_RE.match(first):
        return False
    for j in range(hit - 1, -1, -1):
        line = lines[j]
        if line.startswith(("from ", "import ")):
            return line.rstrip().endswith("(")
        if not _IMPORT_NAME_RE.match(line):
            return False
    return False


def _parse_chunk(lines: list[str], start: int, end: int, indent: int) -> ast.Module | None:
    # Leading newlines put the chunk at its real lines without re-walking the tree.
    body = ["\n"] * start
    for line in lines[start:end]:
        if line.strip() and not line[:indent].isspace() and indent:
            return None
        body.append(line[indent:] if line.strip() else "\n")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse("".join(body))
    except (SyntaxError, ValueError, RecursionError):
        return None
    return tree


def scan_file(
    engine: Engine,
    path: Path | str,
    needles: tuple[bytes, ...],
    checks: CheckFunctions | None = None,
    check_calls: list[CheckCall] | None = None,
) -> list[ContractSite] | FileError | None:
    """Call sites in one engine file; None when the byte pre-filter rules it out.

    Calls of the ``checks`` functions are appended to ``check_calls`` when it is given."""
    data = read_source(str(path))
    if isinstance(data, FileError):
        return data
    if not any(n in data for n in needles):
        return None
    text = decode_source(str(path), data)
    if isinstance(text, FileError):
        return text
    model_file = engine.pack.plugin_model_pattern
    if engine.plugins and model_file is not None and not str(path).startswith(str(engine.root) + os.sep) and model_file.search(text):
        return None  # a plugin's model file: the index reads it, its calls are not the engine's
    rel = _relative(engine, Path(path))
    collector = _SiteCollector(engine, rel, engine.pack.members, checks)
    lines = source_lines(text)
    hits = _hit_lines(text, needles)
    chunks = _function_chunks(lines, hits)
    if chunks is not None:
        trees = [(_parse_chunk(lines, a, b, indent), indent, name) for a, b, indent, name in chunks]
        if all(tree is not None for tree, _, _ in trees):
            for tree, indent, _name in trees:
                assert tree is not None
                collector.indent = indent
                collector.block(tree.body, _Context())
            _qualify(collector.sites, chunks)
            _qualify(collector.check_calls, chunks)
            if check_calls is not None:
                check_calls.extend(collector.check_calls)
            return collector.sites
    whole = parse_text(str(path), text)
    if isinstance(whole, FileError):
        return whole
    collector.indent = 0
    collector.block(whole.body, _Context())
    if check_calls is not None:
        check_calls.extend(collector.check_calls)
    return collector.sites


def _relative(engine: Engine, path: Path) -> str:
    """``vllm/...`` for an engine file, ``vllm_ascend/...`` for a plugin's."""
    for root in (engine.source_root, *(p.source_root for p in engine.plugins)):
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def _hit_lines(text: str, needles: tuple[bytes, ...]) -> list[int]:
    pattern = re.compile("|".join(re.escape(n.decode()) for n in needles))
    hits: list[int] = []
    line, last = 0, 0
    for match in pattern.finditer(text):
        line += count_line_ends(text, last, match.start())
        last = match.start()
        if not hits or hits[-1] != line:
            hits.append(line)
    return hits


_Located = TypeVar("_Located", ContractSite, CheckCall)


def _qualify(sites: list[_Located], chunks: list[tuple[int, int, int, str]]) -> None:
    """Chunks parse without their class: put ``Class.`` back in front of function names."""
    for i, site in enumerate(sites):
        for start, end, _, qualname in chunks:
            if start < site.line <= end:
                head = qualname.rsplit(".", 1)[0] if "." in qualname else ""
                if head and not site.function.startswith(head + "."):
                    sites[i] = dataclasses.replace(site, function=f"{head}.{site.function}")
                break


def contract_needles(engine: Engine, extra: tuple[str, ...] = ()) -> tuple[bytes, ...]:
    """The byte strings a file must contain to hold a call site: the fewest that say as much.

    A needle containing another needle adds nothing (any file or line holding it also holds the
    shorter one), and every needle costs a pass over the engine's 50-70 MB of source."""
    names = set(engine.pack.members) | set(engine.pack.scan_needles) | set(extra)
    minimal = {n for n in names if not any(other != n and other in n for other in names)}
    return tuple(sorted(n.encode() for n in minimal))


def extract_contract(engine: Engine, extension_for: Callable[[Engine], ContractExtension] | None = None) -> Contract:
    """The contract of ``engine``: its call sites, and the facts its adapter's extension
    (``extension_for``: ``EngineAdapter.contract_extension``) adds."""
    pack = engine.pack
    members = {
        name: MemberContract(name=name, kind=spec.kind, known=True, summary=spec.summary)
        for name, spec in pack.members.items()
    }
    contract = Contract(engine=engine, members=members)
    # The engine's own facts: check functions that vouch for members (vLLM's supports_eagle3).
    extension = extension_for(engine) if extension_for is not None else ContractExtension()
    contract.errors.extend(extension.errors())
    checks: CheckFunctions = extension.check_functions()
    check_calls: list[CheckCall] = []
    needles = contract_needles(engine, tuple(checks))
    for path in engine.call_site_files():
        result = scan_file(engine, path, needles, checks, check_calls)
        if result is None:
            continue
        contract.scanned_files += 1
        if isinstance(result, FileError):
            contract.errors.append(result)
            continue
        for site in result:
            entry = members.get(site.member)
            if entry is None:
                entry = members[site.member] = MemberContract(site.member, "method" if site.access == "call" else "attribute", known=False)
            entry.sites.append(site)
    for name, spec in pack.members.items():
        if spec.required and not members[name].fatal_sites(spec.role):
            # Required by the project's configuration: the "call site" is the setting itself.
            members[name].sites.append(
                ContractSite(
                    member=name,
                    path=spec.origin or "pyproject.toml",
                    line=0,
                    column=0,
                    function="[tool.eagle3lint] extra-members",
                    receiver="model",
                    access="call" if spec.kind == "method" else "load",
                    role=spec.role,
                    guard="none",
                )
            )
    contract.extra.update(extension.extra(check_calls))
    contract.launch_refusals = read_launch_refusals(engine)
    return contract
