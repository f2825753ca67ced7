"""Performing planned edits with libcst, so comments, blank lines, quotes, line endings and the
file's indentation survive. Inserted code is re-styled to the file's indent unit and newline
before it is parsed, so it reads as if written there."""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from eagle3lint.common.lines import first_line_ending, line_ending, source_lines
from eagle3lint.fix.cst_find import cst_class, cst_method, indented_block, is_kind, walk_statements
from eagle3lint.fix.cst_lists import insert_elements
from eagle3lint.fix.edits import (
    AFTER,
    BEFORE,
    BODY_END,
    BODY_START,
    AddBase,
    AddKeyword,
    ApplyError,
    Edit,
    EnumerateLoop,
    ImportName,
    InsertMembers,
    InsertStatements,
    RenameMethod,
    edit_sort_key,
    new_import_text,
)
from eagle3lint.fix.locate import find_class, own_method

__all__ = ["ApplyError", "ParsedFile", "PieceCache", "apply_edits"]


@dataclass
class ParsedFile:
    """One piece of source parsed with libcst once; several edit sets can be applied to it."""

    text: str
    module: cst.Module
    line_offset: int = 0  # lines of the file before this piece
    # Lines whose indentation holds a form feed, as libcst reads them (without it) and as written.
    form_feeds: tuple[tuple[str, str], ...] = ()
    _positions: Mapping[cst.CSTNode, CodeRange] | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, text: str, line_offset: int = 0) -> ParsedFile:
        readable, form_feeds = _without_form_feeds(text)
        try:
            module = cst.parse_module(readable)
        except (cst.ParserSyntaxError, RecursionError) as exc:
            raise ApplyError(f"libcst cannot parse the file: {exc}".splitlines()[0]) from exc
        if readable.endswith("\r") and not module.has_trailing_newline:
            # libcst looks for a final "\n" only: a piece with CR line endings would lose its last.
            module = module.with_changes(has_trailing_newline=True)
        return cls(text, module, line_offset, form_feeds)

    def print(self, module: cst.Module) -> str:
        """The code of ``module`` (this piece's, edited), with the form feeds libcst cannot hold
        put back on their lines (a line an edit changed keeps none: the proof then refuses it)."""
        code = module.code
        if not self.form_feeds:
            return code
        lines = source_lines(code)
        at = 0
        for read, written in self.form_feeds:  # in order: each after the one before
            for number in range(at, len(lines)):
                if lines[number] == read:
                    lines[number], at = written, number + 1
                    break
        return "".join(lines)

    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self._positions is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        return self._positions


def _without_form_feeds(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The text with each form feed in the indentation of a line of code left out, as libcst
    would print it (it keeps none before a statement; blank and comment lines it keeps as they
    are), and those lines both ways. The tokenizer sets the column back to 0 at a form feed:
    what precedes one in the indentation goes with it."""
    if "\f" not in text:
        return text, ()
    lines = source_lines(text)
    changed: list[tuple[str, str]] = []
    for number, line in enumerate(lines):
        indent = line[: len(line) - len(line.lstrip(" \t\f"))]
        code = line[len(indent) :].rstrip("\r\n")
        if "\f" in indent and code and not code.startswith("#"):
            lines[number] = indent.rsplit("\f", 1)[1] + line[len(indent) :]
            changed.append((lines[number], line))
    return "".join(lines), tuple(changed)


# Parsed pieces by (path, first line, text), so several fixes of one file parse it once.
PieceCache = dict[tuple[str, int, str], ParsedFile]


def apply_edits(path: str, text: str, tree: ast.Module, edits: Sequence[Edit], cache: PieceCache | None = None) -> str:
    """The file's new text with every edit performed; :class:`ApplyError` if one cannot be.

    Only the module-level statements that hold an edited class are parsed with libcst (a class
    is usually a small part of a model file); the rest of the text is kept byte for byte.
    """
    lines = source_lines(text)  # numbered as the ``ast`` numbers them (CR ends a line too)
    pieces: dict[int, tuple[ast.stmt, list[Edit]]] = {}
    for edit in edits:
        top = _import_anchor(tree, edit) if isinstance(edit, ImportName) else _top_level_statement(tree, edit.class_path)
        pieces.setdefault(id(top), (top, []))[1].append(edit)
    # Bottom-up, so the line numbers of pieces still to do stay valid.
    for top, piece_edits in sorted(pieces.values(), key=lambda item: -item[0].lineno):
        first = min([top.lineno, *(d.lineno for d in getattr(top, "decorator_list", []))])
        last = top.end_lineno or top.lineno
        if any(other is not top and other.lineno == last for other in tree.body):
            raise ApplyError(f"line {last} holds more than one statement")
        if isinstance(top, ast.ClassDef) and all(isinstance(e, InsertMembers) and e.class_path == (top.name,) for e in piece_edits):
            new_piece = _insert_members_by_excerpt(path, lines, top, piece_edits, cache)  # type: ignore[arg-type]
            if new_piece is not None:
                lines[first - 1 : last] = [new_piece]
                continue
        if isinstance(top, ast.ClassDef) and all(_inside_a_method(e, top) for e in piece_edits):
            new_piece = _edit_methods_by_excerpt(path, lines, top, piece_edits, cache)
            if new_piece is not None:
                lines[first - 1 : last] = [new_piece]
                continue
        if isinstance(top, ast.ClassDef) and all(isinstance(e, AddBase) and e.class_path == (top.name,) for e in piece_edits):
            new_piece = _add_bases_by_header(lines, top, piece_edits)  # type: ignore[arg-type]
            if new_piece is not None:
                lines[first - 1 : last] = [new_piece]
                continue
        piece_text = "".join(lines[first - 1 : last])
        new_imports = [e for e in piece_edits if isinstance(e, ImportName) and not e.extend]
        in_piece = [e for e in piece_edits if not (isinstance(e, ImportName) and not e.extend)]
        new_piece = piece_text
        if in_piece:
            key = (path, first, piece_text)
            parsed = cache.get(key) if cache is not None else None
            if parsed is None:
                parsed = ParsedFile.parse(piece_text, line_offset=first - 1)
                if cache is not None:
                    cache[key] = parsed
            new_piece = _apply_to_piece(parsed, in_piece)
        if new_imports:
            new_piece += _new_import_lines(new_piece, lines, new_imports)
        lines[first - 1 : last] = [new_piece]
    return "".join(lines)


def _import_anchor(tree: ast.Module, edit: ImportName) -> ast.stmt:
    found = [stmt for stmt in tree.body if stmt.lineno == edit.line]
    if len(found) != 1:
        raise ApplyError(f"no single module-level statement starts on line {edit.line}")
    if edit.extend and not isinstance(found[0], ast.ImportFrom):
        raise ApplyError(f"line {edit.line} holds no `from ... import` to add `{edit.name}` to")
    return found[0]


def _new_import_lines(piece: str, lines: list[str], edits: list[ImportName]) -> str:
    """New import statements after a module-level statement, in the file's line ending."""
    newline = line_ending(piece) or first_line_ending("".join(lines[:2])) or "\n"
    by_module: dict[str, list[str]] = {}
    for edit in edits:
        by_module.setdefault(edit.module, []).append(edit.name)
    text = "" if line_ending(piece) else newline
    for module in sorted(by_module):
        text += new_import_text(module, by_module[module]) + newline
    return text


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])


def _insert_members_by_excerpt(
    path: str, lines: list[str], cls: ast.ClassDef, edits: list[InsertMembers], cache: PieceCache | None
) -> str | None:
    """Members added to a module-level class without parsing the whole class: libcst parses
    an excerpt made of the class header and the member to insert after, and the code it adds
    after that member is spliced into the original text. None when the excerpt does not work
    out (the caller then parses the whole class)."""
    first, last = _first_line(cls), cls.end_lineno or cls.lineno
    if _first_line(cls.body[0]) <= cls.lineno:
        return None  # ``class A(B): x = 1``
    header = lines[first - 1 : _first_line(cls.body[0]) - 1]
    spacing = _text_spacing(cls, lines)
    groups: dict[str | None, list[InsertMembers]] = {}
    for edit in sorted(edits, key=edit_sort_key):
        groups.setdefault(edit.after, []).append(edit)
    insertions: list[tuple[int, str]] = []
    for after, group in groups.items():
        anchor: ast.stmt | None = cls.body[-1] if after is None else own_method(cls, after)
        if anchor is None or anchor.end_lineno is None:
            return None
        excerpt = "".join([*header, _stand_in(lines, anchor)])
        key = (path, -_first_line(anchor), excerpt)
        parsed = cache.get(key) if cache is not None else None
        if parsed is None:
            try:
                parsed = ParsedFile.parse(excerpt)
            except ApplyError:
                return None
            if cache is not None:
                cache[key] = parsed
        # In the excerpt the anchor is the class's last statement: insert at the end.
        at_end = [InsertMembers(e.path, e.class_path, None, e.source, e.name, e.order) for e in group]
        new_excerpt = _apply_to_piece(parsed, at_end, spacing)
        if not new_excerpt.startswith(excerpt):
            return None
        insertions.append((anchor.end_lineno, new_excerpt[len(excerpt) :]))
    piece = lines[first - 1 : last]
    for end_line, added in sorted(insertions, reverse=True):
        position = end_line - first + 1
        piece[position:position] = [added]
    return "".join(piece)


def _inside_a_method(edit: Edit, cls: ast.ClassDef) -> bool:
    """Whether the edit changes only the text of one method of this module-level class."""
    if not isinstance(edit, (InsertStatements, AddKeyword, EnumerateLoop)) or edit.class_path != (cls.name,):
        return False
    # Before or after the method itself, the lines around it (blank, comments) would take part.
    return not (isinstance(edit, InsertStatements) and edit.anchor_line == 0 and edit.where not in (BODY_START, BODY_END))


def _edit_methods_by_excerpt(path: str, lines: list[str], cls: ast.ClassDef, edits: list[Edit], cache: PieceCache | None) -> str | None:
    """Edits inside methods of a module-level class, made without parsing the whole class:
    libcst parses an excerpt made of the class header and the edited method (its lines keep
    their numbers through the piece's line offset), and the method's new text is spliced into
    the original. None when the excerpt does not work out (the caller parses the whole class)."""
    first, last = _first_line(cls), cls.end_lineno or cls.lineno
    body_line = _first_line(cls.body[0])
    if body_line <= cls.lineno:
        return None  # ``class A(B): x = 1``
    header = "".join(lines[first - 1 : body_line - 1])
    header_lines = body_line - first
    by_method: dict[str, list[Edit]] = {}
    for edit in edits:
        if not isinstance(edit, (InsertStatements, AddKeyword, EnumerateLoop)):
            return None
        by_method.setdefault(edit.function, []).append(edit)
    new_methods: list[tuple[int, int, str]] = []
    for name, group in by_method.items():
        fn = own_method(cls, name)
        if fn is None or fn.end_lineno is None:
            return None
        fn_first = _first_line(fn)
        excerpt = header + "".join(lines[fn_first - 1 : fn.end_lineno])
        key = (path, fn_first, excerpt)
        parsed = cache.get(key) if cache is not None else None
        if parsed is None:
            try:
                parsed = ParsedFile.parse(excerpt, line_offset=fn_first - 1 - header_lines)
            except ApplyError:
                return None
            if cache is not None:
                cache[key] = parsed
        new_excerpt = _apply_to_piece(parsed, group)
        if not new_excerpt.startswith(header):
            return None
        new_methods.append((fn_first, fn.end_lineno, new_excerpt[len(header) :]))
    piece = lines[first - 1 : last]
    for fn_first, fn_last, text in sorted(new_methods, reverse=True):
        piece[fn_first - first : fn_last - first + 1] = [text]
    return "".join(piece)


def _stand_in(lines: list[str], anchor: ast.stmt) -> str:
    """A one-line ``pass`` in place of the member inserted after: at its indentation and with
    its line ending, it is all libcst needs to lay the new members out (a long method would
    only cost parsing and printing back)."""
    first = lines[_first_line(anchor) - 1]
    last = lines[(anchor.end_lineno or anchor.lineno) - 1]
    # A form feed in the indentation sets the column back to 0 (as the tokenizer counts).
    indent = first[: len(first) - len(first.lstrip(" \t\f"))].rsplit("\f", 1)[-1]
    return f"{indent}pass{line_ending(last)}"


def _add_bases_by_header(lines: list[str], cls: ast.ClassDef, edits: list[AddBase]) -> str | None:
    """Bases added to a module-level class by parsing only its header (decorators, ``class``
    line, up to its first body statement) with a stand-in body; None when that does not work
    out (the caller then parses the whole class)."""
    first, last = _first_line(cls), cls.end_lineno or cls.lineno
    body_line = _first_line(cls.body[0])
    if body_line <= cls.lineno:
        return None  # ``class A(B): x = 1``
    header = "".join(lines[first - 1 : body_line - 1])
    newline = line_ending(header) or "\n"
    stand_in = f"    pass{newline}"
    try:
        parsed = ParsedFile.parse(header + stand_in)
    except ApplyError:
        return None
    new_header = _apply_to_piece(parsed, edits)
    if not new_header.endswith(stand_in):
        return None
    return new_header[: -len(stand_in)] + "".join(lines[body_line - 1 : last])


def _text_spacing(cls: ast.ClassDef, lines: list[str]) -> int:
    """Blank lines the class puts before its methods, read from the text (1 unless it
    consistently uses more); the same rule as :func:`_member_spacing`."""
    counts: Counter[int] = Counter()
    for previous, stmt in zip(cls.body, cls.body[1:], strict=False):
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or previous.end_lineno is None:
            continue
        blank = 0
        for line in lines[previous.end_lineno : _first_line(stmt) - 1]:
            if line.strip():
                break
            blank += 1
        counts[blank] += 1
    if not counts:
        return 1
    return min(max(counts.most_common(1)[0][0], 1), 2)


def _top_level_statement(tree: ast.Module, class_path: tuple[str, ...]) -> ast.stmt:
    cls = find_class(tree, class_path)
    if cls is None:
        raise ApplyError(f"class `{'.'.join(class_path)}` is not defined exactly once")
    for stmt in tree.body:
        if stmt.lineno <= cls.lineno <= (stmt.end_lineno or stmt.lineno):
            return stmt
    raise ApplyError(f"class `{'.'.join(class_path)}` not found at module level")


def _apply_to_piece(parsed: ParsedFile, edits: Sequence[Edit], spacing: int | None = None) -> str:
    module = parsed.module
    placement = _Placement()
    for edit in sorted(edits, key=edit_sort_key):
        if isinstance(edit, ImportName):
            statement = _find_import_from(module)
            alias = cst.ImportAlias(name=cst.Name(edit.name))
            placement.imports[id(statement)].append((edit.position, edit.name, alias))
            placement.visit |= {id(module), id(module.body[0])}
            continue
        cls = cst_class(module, edit.class_path)
        placement.visit |= _path_ids(module, cls, _statement_container) | {id(cls), id(cls.body)}
        if isinstance(edit, InsertMembers):
            nodes = _snippet(edit.source, module)
            blank = [cst.EmptyLine(indent=False)] * (spacing or _member_spacing(cls))
            nodes[0] = nodes[0].with_changes(leading_lines=[*blank, *nodes[0].leading_lines])
            if edit.after is None:
                placement.body_end[id(indented_block(cls))].extend(nodes)
            else:
                placement.after[id(cst_method(cls, edit.after))].extend(nodes)
        elif isinstance(edit, InsertStatements):
            fn = cst_method(cls, edit.function)
            nodes = _snippet(edit.source, module)
            if edit.anchor_line == 0:
                owner: cst.CSTNode = fn
            else:
                owner = _find_statement(parsed, fn, edit.anchor_line, edit.anchor_kind)
                placement.visit |= _path_ids(cls, owner, _statement_container)
            placement.visit |= {id(fn), id(owner)}
            if edit.where == BEFORE:
                placement.before[id(owner)].extend(nodes)
            elif edit.where == AFTER:
                placement.after[id(owner)].extend(nodes)
            elif edit.where == BODY_START:
                placement.body_start[id(indented_block(owner))].extend(nodes)
            elif edit.where == BODY_END:
                placement.body_end[id(indented_block(owner))].extend(nodes)
            else:
                raise ApplyError(f"unknown insertion place {edit.where!r}")
        elif isinstance(edit, AddKeyword):
            fn = cst_method(cls, edit.function)
            call = _find_call(parsed, fn, edit.line, edit.func)
            placement.keywords[id(call)].append((edit.keyword, edit.value))
            placement.visit |= _path_ids(cls, call, lambda node: True)
        elif isinstance(edit, AddBase):
            base = cst.Arg(value=cst.parse_expression(edit.name))
            placement.bases[id(cls)].append((edit.position, edit.name, base))
        elif isinstance(edit, RenameMethod):
            fn = cst_method(cls, edit.old)
            placement.renames[id(fn)] = edit
        elif isinstance(edit, EnumerateLoop):
            fn = cst_method(cls, edit.function)
            loop = _find_statement(parsed, fn, edit.line, "For")
            placement.loops[id(loop)] = edit
            placement.visit |= _path_ids(cls, loop, _statement_container) | {id(fn)}
    return parsed.print(module.visit(_Inserter(placement)))


def _find_import_from(module: cst.Module) -> cst.ImportFrom:
    """The piece of an import edit is its one ``from ... import ...`` statement."""
    line = module.body[0] if len(module.body) == 1 else None
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.ImportFrom):
        raise ApplyError("the import to extend is not a lone `from ... import ...` statement")
    if isinstance(line.body[0].names, cst.ImportStar):
        raise ApplyError("cannot add a name to `import *`")
    return line.body[0]


# ---- locating nodes --------------------------------------------------------------------------
def _find_statement(parsed: ParsedFile, fn: cst.FunctionDef, line: int, kind: str) -> cst.BaseStatement:
    positions = parsed.positions()
    line -= parsed.line_offset
    hits: list[cst.BaseStatement] = []
    for stmt in walk_statements(indented_block(fn).body):
        if positions[stmt].start.line != line:
            continue
        if is_kind(stmt, kind):
            hits.append(stmt)
    if len(hits) != 1:
        raise ApplyError(f"no single `{kind}` statement on line {line + parsed.line_offset} of `{fn.name.value}`")
    return hits[0]


def _find_call(parsed: ParsedFile, fn: cst.FunctionDef, line: int, func: str) -> cst.Call:
    positions = parsed.positions()
    module = parsed.module
    line -= parsed.line_offset
    hits: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if positions[node].start.line == line and re.sub(r"\s", "", module.code_for_node(node.func)) == func:
                hits.append(node)

    fn.body.visit(_Calls())
    if len(hits) != 1:
        raise ApplyError(f"no single call of `{func}` on line {line + parsed.line_offset} of `{fn.name.value}`")
    return hits[0]


# ---- building inserted nodes -----------------------------------------------------------------
def _restyle(source: str, indent: str, newline: str) -> str:
    """Template text (4-space indents, LF) in the file's own indent unit and line ending."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip(" ")
        depth = (len(line) - len(stripped)) // 4
        rest = line[depth * 4 :]
        lines.append(indent * depth + rest if stripped else "")
    return newline.join(lines) + newline


Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def _snippet(source: str, module: cst.Module) -> list[Statement]:
    text = _restyle(source, module.default_indent, module.default_newline)
    parsed = cst.parse_module(text, config=module.config_for_parsing)
    body: list[Statement] = list(parsed.body)
    if not body:
        raise ApplyError("empty template")
    if parsed.header:
        body[0] = body[0].with_changes(leading_lines=[*parsed.header, *body[0].leading_lines])
    return body


def _member_spacing(cls: cst.ClassDef) -> int:
    """Blank lines the class puts before its methods (1 unless it consistently uses more)."""
    counts: Counter[int] = Counter()
    for stmt in indented_block(cls).body[1:]:
        if isinstance(stmt, cst.FunctionDef):
            blank = 0
            for line in stmt.leading_lines:
                if line.comment is not None:
                    break
                blank += 1
            counts[blank] += 1
    if not counts:
        return 1
    return min(max(counts.most_common(1)[0][0], 1), 2)


# ---- the transformer ---------------------------------------------------------------------------
@dataclass
class _Placement:
    before: defaultdict[int, list[Statement]] = field(default_factory=lambda: defaultdict(list))
    after: defaultdict[int, list[Statement]] = field(default_factory=lambda: defaultdict(list))
    body_start: defaultdict[int, list[Statement]] = field(default_factory=lambda: defaultdict(list))
    body_end: defaultdict[int, list[Statement]] = field(default_factory=lambda: defaultdict(list))
    keywords: defaultdict[int, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    bases: defaultdict[int, list[tuple[int, str, cst.Arg]]] = field(default_factory=lambda: defaultdict(list))
    imports: defaultdict[int, list[tuple[int, str, cst.ImportAlias]]] = field(default_factory=lambda: defaultdict(list))
    renames: dict[int, RenameMethod] = field(default_factory=dict)
    loops: dict[int, EnumerateLoop] = field(default_factory=dict)
    # Nodes whose children the transformer enters: the ancestors of everything edited (the rest
    # of a class is never walked, which keeps the cost near the size of the edit).
    visit: set[int] = field(default_factory=set)


_CONTAINERS = (
    cst.Module, cst.IndentedBlock, cst.ClassDef, cst.FunctionDef, cst.If, cst.Else, cst.For, cst.While,
    cst.Try, cst.ExceptHandler, cst.Finally, cst.With,
)


def _statement_container(node: cst.CSTNode) -> bool:
    return isinstance(node, _CONTAINERS) or type(node).__name__ in ("TryStar", "ExceptStarHandler", "Match", "MatchCase")


def _path_ids(root: cst.CSTNode, target: cst.CSTNode, descend: Callable[[cst.CSTNode], bool]) -> set[int]:
    """Ids of the nodes from ``root`` down to ``target`` (target excluded), entering only the
    nodes ``descend`` accepts."""
    stack: list[tuple[cst.CSTNode, tuple[int, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return set(path)
        if node is not root and not descend(node):
            continue
        for child in node.children:
            stack.append((child, (*path, id(node))))
    raise ApplyError("an edited node is not where it was found")


def _split_leading(lines: Sequence[cst.EmptyLine]) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """Blank lines before the first comment, and the rest (comments stay with their statement)."""
    blank: list[cst.EmptyLine] = []
    for index, line in enumerate(lines):
        if line.comment is not None:
            return blank, list(lines[index:])
        blank.append(line)
    return blank, []


class _Inserter(cst.CSTTransformer):
    def __init__(self, placement: _Placement) -> None:
        super().__init__()
        self.placement = placement

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.placement.visit

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        p = self.placement
        key = id(original_node)
        body: list[cst.BaseStatement] = list(p.body_start.get(key, ()))
        for old, new in zip(original_node.body, updated_node.body, strict=True):
            assert isinstance(new, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
            before = list(p.before.get(id(old), ()))
            if before:
                blank, rest = _split_leading(new.leading_lines)
                before[0] = before[0].with_changes(leading_lines=[*blank, *before[0].leading_lines])
                new = new.with_changes(leading_lines=rest)
            body += before
            body.append(new)
            body += p.after.get(id(old), ())
        body += p.body_end.get(key, ())
        if len(body) == len(updated_node.body):
            return updated_node
        return updated_node.with_changes(body=body)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        additions = self.placement.keywords.get(id(original_node))
        if not additions:
            return updated_node
        args = list(updated_node.args)
        for keyword, value in additions:
            new_arg = cst.Arg(
                value=cst.parse_expression(value),
                keyword=cst.Name(keyword),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
            )
            if not args:
                args.append(new_arg)
                continue
            last = args[-1]
            # The new argument takes over the last one's trailing comma and the whitespace before
            # ")"; the last one gets the separator its neighbours use (", " or a line break).
            separator = args[-2].comma if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma) else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            new_arg = new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
            args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
            args.append(new_arg)
        return updated_node.with_changes(args=args)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        additions = self.placement.bases.get(id(original_node))
        if not additions:
            return updated_node
        lpar = updated_node.lpar if isinstance(updated_node.lpar, cst.LeftParen) else cst.LeftParen()
        rpar = updated_node.rpar if isinstance(updated_node.rpar, cst.RightParen) else cst.RightParen()
        count = len(updated_node.bases)
        combined = insert_elements([*updated_node.bases, *updated_node.keywords], additions, lpar.whitespace_after)
        count += len(additions)
        return updated_node.with_changes(bases=combined[:count], keywords=combined[count:], lpar=lpar, rpar=rpar)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        additions = self.placement.imports.get(id(original_node))
        if not additions or isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        opening = updated_node.lpar.whitespace_after if isinstance(updated_node.lpar, cst.LeftParen) else None
        return updated_node.with_changes(names=insert_elements(list(updated_node.names), additions, opening))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        rename = self.placement.renames.get(id(original_node))
        if rename is None:
            return updated_node
        node = updated_node.with_changes(name=cst.Name(rename.new))
        if rename.attributes:
            node = node.with_changes(body=node.body.visit(_RenameAttributes(rename.old, rename.new)))
        return node

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        loop = self.placement.loops.get(id(original_node))
        if loop is None:
            return updated_node
        target = cst.Tuple(
            elements=[cst.Element(cst.Name(loop.index), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), cst.Element(updated_node.target)],
            lpar=[],
            rpar=[],
        )
        args = [cst.Arg(updated_node.iter)]
        if loop.start is not None:
            args = [
                cst.Arg(updated_node.iter, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Arg(
                    cst.parse_expression(loop.start),
                    keyword=cst.Name("start"),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
                ),
            ]
        return updated_node.with_changes(target=target, iter=cst.Call(func=cst.Name("enumerate"), args=args))


class _RenameAttributes(cst.CSTTransformer):
    """``x.<old>`` -> ``x.<new>`` everywhere in a method body."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        if updated_node.attr.value == self.old:
            return updated_node.with_changes(attr=cst.Name(self.new))
        return updated_node
