"""Proving one file's edit before it is shown or written (black-style): the new text parses and
compiles; its ``ast`` equals the original ``ast`` with exactly the planned change (nodes
inserted, bases or imported names added, a method renamed, a loop numbered: the edits replayed
independently on the ``ast``); the file's newline and indent style is kept.
The re-check and the second run, which need the whole tree, live in ``session``."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Sequence

from eagle3lint.fix.diff import split_lines
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
    dotted_text,
    find_class,
    find_statement,
    nodes_outside_nested_scopes,
    own_method,
)


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
    lines = split_lines(original)
    new_lines = split_lines(new)
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
        for module, names in sorted(added.get(index, {}).items()):
            if not same_tree(_import_node(module, names), next(now_statements)):
                raise ProofError(f"the import after line {old.end_lineno} is not exactly `from {module} import {', '.join(sorted(set(names)))}`")
    style = style_problem(original, new)
    if style:
        raise ProofError(style)
    return new_tree


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
                if isinstance(n, ast.Call) and n.lineno == edit.line and dotted_text(n.func) == edit.func
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


def style_problem(original: str, new: str) -> str | None:
    """The new text must keep the file's line endings and its indent character."""
    if "\r\n" in original:
        if re.search(r"(?<!\r)\n", new) and not re.search(r"(?<!\r)\n", original):
            return "the new text mixes LF into a CRLF file"
    elif "\r\n" in new:
        return "the new text brings CRLF into an LF file"
    old_chars = {m.group(1)[0] for m in _INDENT.finditer(original)}
    new_chars = {m.group(1)[0] for m in _INDENT.finditer(new)}
    if old_chars and not new_chars <= old_chars:
        return "the new text indents with a character the file does not use"
    return None
