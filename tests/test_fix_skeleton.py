"""The original's tree for editing and proving, built from the index's layout: only the edited
statements are parsed again, and the edit and its proof come out as with a whole parse."""

from __future__ import annotations

import ast
import hashlib
import textwrap
from pathlib import Path

import pytest

from eagle3lint.common.lines import source_lines
from eagle3lint.fix.apply import apply_edits
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
)
from eagle3lint.fix.proof import ProofError, prove_file
from eagle3lint.fix.skeleton import Layout, original_tree
from eagle3lint.fix.texts import SourceFile, decode
from eagle3lint.source.layout import module_layout
from eagle3lint.source.sources import ParseRequest, parse_module
from eagle3lint.source.summary_types import ModuleSummary

SOURCE = textwrap.dedent('''\
    """A model file."""
    import torch
    from foo import (
        Bar,
    )

    X = {"a": 1,
         "b": 2}


    @register("w")
    @other
    class Wrapper(Bar):
        def forward(self, x):
            y = x
            return y


    if torch.cuda.is_available():
        class Fast:
            pass
    else:
        Fast = None


    def helper():
        return 1; X = 2
''')


def _source(text: str, path: str = "m.py") -> SourceFile:
    found = decode(path, text.encode())
    assert isinstance(found, SourceFile)
    return found


def _layout(text: str) -> Layout:
    return hashlib.sha256(text.encode()).hexdigest(), module_layout(ast.parse(text))


def _edit_both_ways(text: str, edits: list[Edit]) -> str:
    """Edit and prove with the layout's tree and with a whole parse: the same new text."""
    source = _source(text)
    tree = original_tree(source, _layout(text), edits)
    new = apply_edits("m.py", text, tree, edits)
    prove_file("m.py", text, tree, new, edits)
    assert new == apply_edits("m.py", text, ast.parse(text), edits)
    return new


def test_only_the_edited_statement_is_parsed_again() -> None:
    edit = InsertMembers("m.py", ("Wrapper",), None, "def get_embed_and_head(self):\n    return 1\n", "get_embed_and_head")
    tree = original_tree(_source(SOURCE), _layout(SOURCE), [edit])
    whole = ast.parse(SOURCE)
    assert [type(s) for s in tree.body] == [type(s) for s in whole.body]
    edited = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "Wrapper"]
    assert len(edited) == 1 and ast.dump(edited[0], include_attributes=True) == ast.dump(whole.body[4], include_attributes=True)
    # Every other statement stands in: its kind and its lines, nothing inside.
    others = [s for s in tree.body if s is not edited[0]]
    assert all(not hasattr(s, "body") and not hasattr(s, "value") for s in others)
    assert [(s.lineno, s.end_lineno) for s in tree.body] == [(s.lineno, s.end_lineno) for s in whole.body]
    _edit_both_ways(SOURCE, [edit])


def test_edits_of_every_kind_come_out_as_with_a_whole_parse() -> None:
    edits: list[Edit] = [
        InsertStatements("m.py", ("Wrapper",), "forward", 16, "Return", BEFORE, "y = y + 1\n"),
        AddBase("m.py", ("Wrapper",), "Baz", 1),
        ImportName("m.py", "foo", "Baz", 3, extend=True),
        ImportName("m.py", "bar", "Qux", 2, extend=False),
        InsertMembers("m.py", ("Fast",), None, "def f(self):\n    return 2\n", "f"),
    ]
    new = _edit_both_ways(SOURCE, edits)
    assert "from bar import Qux" in new and "y = y + 1" in new and "def f(self)" in new


def test_the_proof_still_sees_every_byte_outside_the_edit() -> None:
    edit = InsertMembers("m.py", ("Wrapper",), None, "def g(self):\n    return 1\n", "g")
    source = _source(SOURCE)
    new = apply_edits("m.py", SOURCE, original_tree(source, _layout(SOURCE), [edit]), [edit])
    for old, changed in {'"b": 2': '"b": 3', "return 1; X = 2": "return 1; X = 3", "\n\n\n@register": "\n\n@register"}.items():
        with pytest.raises(ProofError):
            prove_file("m.py", SOURCE, original_tree(source, _layout(SOURCE), [edit]), new.replace(old, changed), [edit])


def test_a_layout_of_another_text_is_not_used() -> None:
    """The layout comes with the digest of the bytes it was made from: after an edit on disk
    since the index read the file, the whole file is parsed."""
    edit = InsertMembers("m.py", ("Wrapper",), None, "def g(self):\n    return 1\n", "g")
    now = SOURCE.replace("X = {", "\n\nX = {")  # every line below moved
    tree = original_tree(_source(now), _layout(SOURCE), [edit])
    assert ast.dump(tree, include_attributes=True) == ast.dump(ast.parse(now), include_attributes=True)


def test_what_the_layout_cannot_settle_is_left_to_a_whole_parse() -> None:
    twice = "class A:\n    pass\n\n\ntry:\n    class A:\n        x = 1\nexcept ImportError:\n    pass\n"
    edit = InsertMembers("m.py", ("A",), None, "def g(self):\n    return 1\n", "g")
    tree = original_tree(_source(twice), _layout(twice), [edit])
    assert ast.dump(tree) == ast.dump(ast.parse(twice))
    with pytest.raises(ApplyError, match="not defined exactly once"):
        apply_edits("m.py", twice, tree, [edit])
    # An import to extend that shares its line with another statement does not parse alone to itself.
    shared = "from foo import Bar; import os\n\n\nclass A(Bar):\n    pass\n"
    extend = ImportName("m.py", "foo", "Baz", 1, extend=True)
    tree = original_tree(_source(shared), _layout(shared), [extend])
    assert ast.dump(tree) == ast.dump(ast.parse(shared))


def test_the_index_summary_carries_the_layout_of_the_bytes_it_read(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    summary = parse_module(ParseRequest(str(path), "m", False, frozenset()))
    assert isinstance(summary, ModuleSummary)
    assert summary.source_digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert summary.layout == module_layout(ast.parse(SOURCE))
    assert summary.layout[4][:4] == ("ClassDef", 11, 13, 16) and summary.layout[5][6] == ("Fast",)


# ---- edits inside methods: libcst parses the class header and the method, not the class -------
CLASS = textwrap.dedent('''\
    @register
    class Decoder(
        Base,  # a base on its own line
    ):
        """Doc."""

        def __init__(self):
            self.layers = []

        # about forward
        def forward(self, x):
            aux = []
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)
            # trailing comment of forward


        \f
        def other(self, y):
            y = f(y, 1)
            return y
    X = 1
''')

IN_METHODS: list[list[Edit]] = [
    [InsertStatements("m.py", ("Decoder",), "forward", 15, "Return", BEFORE, "aux.append(x)\n")],
    [InsertStatements("m.py", ("Decoder",), "forward", 0, "", BODY_END, "x = x\n")],
    [EnumerateLoop("m.py", ("Decoder",), "forward", 13, "idx", "1")],
    [AddKeyword("m.py", ("Decoder",), "other", 21, "f", "aux", "True")],
    [
        InsertStatements("m.py", ("Decoder",), "forward", 12, "Assign", AFTER, "y = 2\n"),
        AddKeyword("m.py", ("Decoder",), "other", 21, "f", "aux", "True"),
        InsertStatements("m.py", ("Decoder",), "__init__", 0, "", BODY_START, "super().__init__()\n"),
    ],
]


@pytest.mark.parametrize("edits", IN_METHODS)
def test_edits_inside_methods_come_out_as_when_the_whole_class_is_parsed(edits: list[Edit], monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3lint.fix import apply

    cls = ast.parse(CLASS).body[0]
    assert isinstance(cls, ast.ClassDef) and cls.end_lineno is not None
    whole = apply._apply_to_piece(apply.ParsedFile.parse("".join(source_lines(CLASS)[: cls.end_lineno])), edits)
    parsed: list[str] = []
    real_parse = apply.ParsedFile.parse.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(apply.ParsedFile, "parse", classmethod(lambda c, text, line_offset=0: parsed.append(text) or real_parse(c, text, line_offset)))
    new = apply_edits("m.py", CLASS, ast.parse(CLASS), edits)
    assert new == whole + "X = 1\n"
    prove_file("m.py", CLASS, ast.parse(CLASS), new, edits)
    methods = {e.function for e in edits}  # type: ignore[attr-defined]
    assert len(parsed) == len(methods) and all(text.startswith("@register\nclass Decoder(\n") for text in parsed)
    for name in ("__init__", "forward", "other"):
        assert sum(f"def {name}(" in text for text in parsed) == (name in methods)
