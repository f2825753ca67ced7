"""Proving one file's edit before it is shown or written (black-style): the new text parses and
compiles; its ``ast`` equals the original ``ast`` with exactly the planned change (nodes
inserted, bases or imported names added, a method renamed, a loop numbered: the edits replayed
independently on the ``ast``); every byte of the original is still there, in order, outside the
insertions (whitespace the ``ast`` cannot see, a form feed, included): the text of an edited
statement is its original with text inserted (and the renamed names renamed), and every other
line is its original line; the file's newline and indent style is kept.
The re-check and the second run, which need the whole tree, live in ``session``."""

from __future__ import annotations

import ast
import difflib
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

from eagle3lint.common.lines import line_ending, source_lines
from eagle3lint.fix.edits import (
    AFTER,
    BEFORE,
    BODY_END,
    BODY_START,
    AddBase,
    AddKeyword,
    Edit,
    EnumerateLoop,
    ImportName,
    InsertMembers,
    InsertStatements,
    RenameMethod,
    edit_sort_key,
)
from eagle3lint.fix.locate import (
    find_class,
    find_statement,
    nodes_outside_nested_scopes,
    own_method,
)
from eagle3lint.source.ast_names import dotted_name


class ProofError(Exception):
    """The new text is not the original plus exactly the planned insertions."""


def prove_file(path: str, original: str, original_tree: ast.Module, new: str, edits: Sequence[Edit]) -> ast.Module:
    """Return the new text's ``ast``, or raise :class:`ProofError` naming the failed step.

    The module-level statements holding an edited class are re-parsed from the original text,
    the edits replayed on them, and their ``ast`` compared with the new text's. Every other
    module-level statement must have exactly its original text: a module-level statement starts
    with the tokenizer in its initial state, so the same text parses to the same ``ast``
    (cheaper than dumping both trees). New import statements must be exactly the planned ones,
    right after their anchor. The edited statements of ``original_tree`` are consumed (the
    edits are replayed on them): pass a parse of your own.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            new_tree = ast.parse(new, filename=path)
    except SyntaxError as exc:
        raise ProofError(f"the new text does not parse: line {exc.lineno}: {exc.msg}") from exc
    lines = source_lines(original)
    new_lines = source_lines(new)
    edited: dict[int, list[Edit]] = {}
    added: dict[int, dict[str, list[str]]] = {}  # new imports after a module-level statement
    for edit in edits:
        if isinstance(edit, ImportName):
            index = _line_index(original_tree, edit.line)
            if not edit.extend:
                added.setdefault(index, {}).setdefault(edit.module, []).append(edit.name)
                continue
        else:
            index = _top_index(original_tree, edit.class_path)
        edited.setdefault(index, []).append(edit)
    if len(new_tree.body) != len(original_tree.body) + sum(len(modules) for modules in added.values()):
        raise ProofError("the new text has a different number of module-level statements")
    # Before the edits are replayed on the statements: where each may change a line in place.
    in_place = {index: _in_place(original_tree.body[index], edited[index], lines) for index in edited}
    replaced: list[tuple[int, int, int, int]] = []  # edited statements: old lines, new lines
    inserted: list[tuple[int, int]] = []  # the new import statements' lines
    now_statements = iter(new_tree.body)
    for index, old in enumerate(original_tree.body):
        now = next(now_statements)
        if index not in edited:
            if type(old) is not type(now) or _text(old, lines) != _text(now, new_lines):
                raise ProofError(f"the statement on line {old.lineno} changed although no edit was planned there")
        else:
            expected = replay_on_ast(ast.Module(body=[old], type_ignores=[]), edited[index])
            if not same_tree(expected.body[0], now):
                raise ProofError(f"the statement on line {old.lineno} is not the original plus exactly the inserted code")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compile(ast.Module(body=[now], type_ignores=[]), path, "exec", dont_inherit=True)
            except SyntaxError as exc:
                raise ProofError(f"the edited code does not compile: line {exc.lineno}: {exc.msg}") from exc
            _prove_kept(old, lines, in_place[index], now, new_lines)
            replaced.append((_first_line(old), old.end_lineno or old.lineno, _first_line(now), now.end_lineno or now.lineno))
        for module, names in sorted(added.get(index, {}).items()):
            statement = next(now_statements)
            if not same_tree(_import_node(module, names), statement):
                raise ProofError(f"the import after line {old.end_lineno} is not exactly `from {module} import {', '.join(sorted(set(names)))}`")
            inserted.append((statement.lineno, statement.end_lineno or statement.lineno))
    _prove_untouched(lines, new_lines, replaced, inserted)
    style = style_problem(original, new)
    if style:
        raise ProofError(style)
    return new_tree


# ---- the text outside the edits, byte for byte ---------------------------------------------------
def _prove_untouched(lines: list[str], new_lines: list[str], replaced: list[tuple[int, int, int, int]], inserted: list[tuple[int, int]]) -> None:
    """Every line outside the edited statements and the new imports is its original line, in
    its place (the blank lines, comments and form feeds between statements included)."""
    old_rest = _outside(lines, [(a, b, index) for index, (a, b, _, _) in enumerate(replaced)])
    new_rest = _outside(new_lines, [(c, d, index) for index, (_, _, c, d) in enumerate(replaced)] + [(a, b, None) for a, b in inserted])
    for (number, old), (_, new) in zip(old_rest, new_rest, strict=False):
        if old != new:
            raise ProofError(f"line {number} of the original would change although no edit was planned there")
    if len(old_rest) != len(new_rest):
        at = old_rest[len(new_rest)][0] if len(old_rest) > len(new_rest) else len(lines)
        raise ProofError(f"the lines after line {at} of the original would change although no edit was planned there")


def _outside(lines: list[str], spans: list[tuple[int, int, int | None]]) -> list[tuple[int, str | int]]:
    """(line number, text) of each line outside ``spans`` (first line, last line, key), in
    order, with a (first line, key) stand-in for a span with a key: the edited statements of the
    original and of the new text pair up by key; a span without one is left out."""
    out: list[tuple[int, str | int]] = []
    number = 1
    for first, last, key in sorted(spans):
        out.extend((n, lines[n - 1]) for n in range(number, first))
        if key is not None:
            out.append((first, key))
        number = max(number, last + 1)
    out.extend((n, lines[n - 1]) for n in range(number, len(lines) + 1))
    return out


@dataclass
class _InPlace:
    """How an edited statement may change its own lines: the lines a rename rewrites (as
    renamed), and the lines text may be inserted into (a keyword into a call, a base into a class
    header, a name into an import, ``enumerate`` into a loop header). Every other line stays
    whole; inserted code comes as lines of its own."""

    renamed: dict[int, str] = field(default_factory=dict)
    into: set[int] = field(default_factory=set)


def _prove_kept(old: ast.stmt, lines: list[str], in_place: _InPlace, now: ast.stmt, new_lines: list[str]) -> None:
    """The edited statement's new text is its original with lines inserted, text inserted only
    into the lines an edit changes in place, and the renamed names renamed: no byte of it
    dropped or changed, whitespace the ``ast`` cannot see included."""
    first = _first_line(old)
    numbers = range(first, (old.end_lineno or old.lineno) + 1)
    before = [in_place.renamed.get(n, lines[n - 1]) for n in numbers]
    after = new_lines[_first_line(now) - 1 : now.end_lineno or now.lineno]
    lost = _first_lost_line(before, after, {n - first for n in in_place.into})
    if lost is not None:
        line = before[lost]
        what = " (a form feed in it)" if "\f" in line[: len(line) - len(line.lstrip())] else ""
        raise ProofError(f"the edit would drop or change text of line {first + lost} of the original{what}, not only insert code")


def _first_lost_line(old: list[str], new: list[str], into: set[int]) -> int | None:
    """None when ``new`` is ``old`` with lines inserted, and text inserted into the lines
    ``into`` (indexes of ``old``); else the index of an ``old`` line that is lost or changed.
    Lines pair up through a line diff; an unequal block is accepted when all its old lines are
    ``into`` lines and its old text is in its new text, in order."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag not in ("delete", "replace"):
            continue
        changed = [i for i in range(i1, i2) if i not in into]
        if changed:
            return changed[0]
        if not _is_subsequence("".join(old[i1:i2]), "".join(new[j1:j2])):
            return i1
    return None


def _is_subsequence(part: str, whole: str) -> bool:
    """Whether ``whole`` is ``part`` with characters inserted (the leftmost match of each
    character is taken, which finds a match whenever there is one)."""
    at = 0
    for character in part:
        at = whole.find(character, at) + 1
        if at == 0:
            return False
    return True


def _in_place(stmt: ast.stmt, edits: list[Edit], lines: list[str]) -> _InPlace:
    """Where the edits of one module-level statement change its lines in place (read from the
    original, before the edits are replayed on it)."""
    found = _InPlace(renamed=_renamed_lines(stmt, edits, lines))
    last = stmt.end_lineno or stmt.lineno
    if not line_ending(lines[last - 1]):
        found.into.add(last)  # the file's last line, without an ending: code after it brings one
    module = ast.Module(body=[stmt], type_ignores=[])
    for edit in edits:
        if isinstance(edit, ImportName):
            found.into.update(range(stmt.lineno, last + 1))
            continue
        cls = find_class(module, edit.class_path)
        if cls is None:
            continue  # the replay reports it
        if isinstance(edit, AddBase):
            found.into.update(_header_lines(cls))
        elif isinstance(edit, AddKeyword) and (fn := own_method(cls, edit.function)) is not None:
            for node in nodes_outside_nested_scopes(fn):
                if isinstance(node, ast.Call) and node.lineno == edit.line and dotted_name(node.func) == edit.func:
                    found.into.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif isinstance(edit, EnumerateLoop) and (fn := own_method(cls, edit.function)) is not None:
            loop = find_statement(fn, edit.line, "For")
            if loop is not None:
                found.into.update(_header_lines(loop[0]))
    return found


def _header_lines(stmt: ast.stmt) -> range:
    """The lines of a compound statement's header: from its keyword to its body."""
    body = getattr(stmt, "body", None) or [stmt]
    return range(stmt.lineno, max(_first_line(body[0]), stmt.lineno + 1))


def _renamed_lines(stmt: ast.stmt, edits: list[Edit], lines: list[str]) -> dict[int, str]:
    """The original lines of ``stmt`` where a method rename writes the new name, so written:
    the method's name after ``def`` and, with ``attributes``, each ``x.<old>`` in its body."""
    out: dict[int, str] = {}
    for edit in edits:
        if not isinstance(edit, RenameMethod):
            continue
        cls = find_class(ast.Module(body=[stmt], type_ignores=[]), edit.class_path)
        fn = own_method(cls, edit.old) if cls is not None else None
        if fn is None:
            continue  # the replay reports it
        spots: list[tuple[int, int]] = []  # (line, UTF-8 offset of the name's end)
        header = lines[fn.lineno - 1].encode("utf-8")
        found = re.compile(rb"(?:async\s+)?def\s+(" + re.escape(edit.old.encode("utf-8")) + rb")\b").match(header, fn.col_offset)
        if found is None:
            raise ProofError(f"the name of `{edit.old}` is not on line {fn.lineno} after `def`")
        spots.append((fn.lineno, found.end(1)))
        if edit.attributes:
            for node in (n for body_stmt in fn.body for n in ast.walk(body_stmt)):
                if isinstance(node, ast.Attribute) and node.attr == edit.old and node.end_lineno is not None and node.end_col_offset is not None:
                    spots.append((node.end_lineno, node.end_col_offset))
        name, new_name = edit.old.encode("utf-8"), edit.new.encode("utf-8")
        for number, end in sorted(set(spots), reverse=True):  # from the right: offsets stay valid
            data = out.get(number, lines[number - 1]).encode("utf-8")
            if data[end - len(name) : end] != name:
                raise ProofError(f"`{edit.old}` is not where the ast puts it on line {number}")
            out[number] = (data[: end - len(name)] + new_name + data[end:]).decode("utf-8")
    return out


def _top_index(tree: ast.Module, class_path: tuple[str, ...]) -> int:
    cls = find_class(tree, class_path)
    if cls is None:
        raise ProofError(f"class `{'.'.join(class_path)}` not found once in the original")
    for index, stmt in enumerate(tree.body):
        if stmt.lineno <= cls.lineno <= (stmt.end_lineno or stmt.lineno):
            return index
    raise ProofError(f"class `{'.'.join(class_path)}` is not inside a module-level statement")


def _line_index(tree: ast.Module, line: int) -> int:
    found = [index for index, stmt in enumerate(tree.body) if stmt.lineno == line]
    if len(found) != 1:
        raise ProofError(f"no single module-level statement starts on line {line} of the original")
    return found[0]


def _import_node(module: str, names: list[str]) -> ast.ImportFrom:
    """``from <module> import <names, sorted>`` built directly as an ``ast`` node."""
    relative = module[: len(module) - len(module.lstrip("."))]
    return ast.ImportFrom(
        module=module[len(relative) :] or None,
        names=[ast.alias(name=name, asname=None) for name in sorted(set(names))],
        level=len(relative),
    )


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])


def _text(stmt: ast.stmt, lines: list[str]) -> str:
    return "".join(lines[_first_line(stmt) - 1 : stmt.end_lineno])


def same_tree(a: ast.AST, b: ast.AST) -> bool:
    """``ast.dump(a) == ast.dump(b)`` (fields compared, positions not), without building the
    two strings: edited classes are large, and this runs for every one."""
    pending: list[tuple[object, object]] = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, ast.AST):
            pending.extend((getattr(x, name, None), getattr(y, name, None)) for name in x._fields)
        elif type(x) is list:
            if len(x) != len(y):  # type: ignore[arg-type]
                return False
            pending.extend(zip(x, y, strict=True))  # type: ignore[call-overload]
        elif x != y:
            return False
    return True


def replay_on_ast(tree: ast.Module, edits: Sequence[Edit]) -> ast.Module:
    """The edits performed on ``tree`` (changed in place and returned): what the libcst output
    must parse to."""
    # Every anchor is found first; insertions at one place keep the edits' order (as in apply).
    groups: dict[tuple[int, str, int], tuple[list[ast.stmt], ast.stmt | None, str, list[ast.stmt]]] = {}

    def place(body: list[ast.stmt], anchor: ast.stmt | None, where: str, source: str) -> None:
        key = (id(body), where, id(anchor))
        groups.setdefault(key, (body, anchor, where, []))[3].extend(ast.parse(source).body)

    bases: dict[int, tuple[ast.ClassDef, list[tuple[int, str]]]] = {}
    names: list[tuple[int, str]] = []
    for edit in sorted(edits, key=edit_sort_key):
        if isinstance(edit, ImportName):
            names.append((edit.position, edit.name))
            continue
        cls = find_class(tree, edit.class_path)
        if cls is None:
            raise ProofError(f"class `{'.'.join(edit.class_path)}` not found once in the original")
        if isinstance(edit, InsertMembers):
            if edit.after is None:
                place(cls.body, None, BODY_END, edit.source)
            else:
                place(cls.body, _method(cls, edit.after), AFTER, edit.source)
        elif isinstance(edit, InsertStatements):
            fn = _method(cls, edit.function)
            if edit.anchor_line == 0:
                place(fn.body, None, edit.where, edit.source)
                continue
            found = find_statement(fn, edit.anchor_line, edit.anchor_kind)
            if found is None:
                raise ProofError(f"no single `{edit.anchor_kind}` on line {edit.anchor_line} of `{edit.function}`")
            stmt, siblings = found
            if edit.where in (BEFORE, AFTER):
                place(siblings, stmt, edit.where, edit.source)
            else:
                place(getattr(stmt, "body"), None, edit.where, edit.source)  # noqa: B009
        elif isinstance(edit, AddKeyword):
            fn = _method(cls, edit.function)
            calls = [
                n for n in nodes_outside_nested_scopes(fn)
                if isinstance(n, ast.Call) and n.lineno == edit.line and dotted_name(n.func) == edit.func
            ]
            if len(calls) != 1:
                raise ProofError(f"no single call of `{edit.func}` on line {edit.line}")
            value = ast.parse(edit.value, mode="eval").body
            calls[0].keywords.append(ast.keyword(arg=edit.keyword, value=value))
        elif isinstance(edit, AddBase):
            bases.setdefault(id(cls), (cls, []))[1].append((edit.position, edit.name))
        elif isinstance(edit, RenameMethod):
            fn = _method(cls, edit.old)
            fn.name = edit.new
            if edit.attributes:
                for node in (n for stmt in fn.body for n in ast.walk(stmt)):
                    if isinstance(node, ast.Attribute) and node.attr == edit.old:
                        node.attr = edit.new
        elif isinstance(edit, EnumerateLoop):
            found = find_statement(_method(cls, edit.function), edit.line, "For")
            if found is None or not isinstance(found[0], ast.For):
                raise ProofError(f"no single `for` on line {edit.line} of `{edit.function}`")
            loop = found[0]
            keywords = [ast.keyword(arg="start", value=ast.parse(edit.start, mode="eval").body)] if edit.start else []
            loop.target = ast.Tuple(elts=[ast.Name(id=edit.index, ctx=ast.Store()), loop.target], ctx=ast.Store())
            loop.iter = ast.Call(func=ast.Name(id="enumerate", ctx=ast.Load()), args=[loop.iter], keywords=keywords)
    # Several insertions at one place go in name order: insert from the last back.
    for cls, additions in bases.values():
        for position, name in sorted(additions, reverse=True):
            cls.bases.insert(position, ast.parse(name, mode="eval").body)
    if names:
        statement = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(statement, ast.ImportFrom):
            raise ProofError("the import to extend is not a `from ... import ...` statement")
        for position, name in sorted(names, reverse=True):
            statement.names.insert(position, ast.alias(name=name, asname=None))
    for body, anchor, where, nodes in groups.values():
        if where == BODY_START:
            body[0:0] = nodes
        elif where == BODY_END:
            body.extend(nodes)
        else:
            position = next(i for i, stmt in enumerate(body) if stmt is anchor)
            at = position if where == BEFORE else position + 1
            body[at:at] = nodes
    return tree


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    fn = own_method(cls, name)
    if fn is None:
        raise ProofError(f"`{cls.name}.{name}` not found in the original")
    return fn


_INDENT = re.compile(r"^([ \t]+)\S", re.M)


_ENDINGS = {"\r\n": "CRLF", "\r": "CR", "\n": "LF"}
_ENDING = re.compile(r"\r\n|\r|\n")


def style_problem(original: str, new: str) -> str | None:
    """The new text must keep the file's line endings and its indent character."""
    old_endings = set(_ENDING.findall(original)) or {"\n"}
    foreign = sorted(set(_ENDING.findall(new)) - old_endings, key=list(_ENDINGS).index)
    if foreign:
        kinds = "/".join(_ENDINGS[e] for e in sorted(old_endings, key=list(_ENDINGS).index))
        return f"the new text brings {_ENDINGS[foreign[0]]} line endings into a file with {kinds} line endings"
    old_chars = {m.group(1)[0] for m in _INDENT.finditer(original)}
    new_chars = {m.group(1)[0] for m in _INDENT.finditer(new)}
    if old_chars and not new_chars <= old_chars:
        return "the new text indents with a character the file does not use"
    return None
