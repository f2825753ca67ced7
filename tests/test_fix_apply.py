"""libcst edits and the proof that checks them, on small sources."""

from __future__ import annotations

import ast
import textwrap

import pytest

from eagle3lint.fix.apply import apply_edits
from eagle3lint.fix.edits import (
    AFTER,
    BEFORE,
    BODY_END,
    BODY_START,
    AddKeyword,
    ApplyError,
    InsertMembers,
    InsertStatements,
)
from eagle3lint.fix.proof import ProofError, prove_file, style_problem

METHOD = "def get_embed_and_head(self):\n    return self.inner.get_embed_and_head()\n"


def _apply(source: str, *edits: InsertMembers | InsertStatements | AddKeyword) -> str:
    new = apply_edits("m.py", source, ast.parse(source), list(edits))
    prove_file("m.py", source, ast.parse(source), new, list(edits))
    return new


def _members(after: str | None, source: str = METHOD, name: str = "get_embed_and_head") -> InsertMembers:
    return InsertMembers("m.py", ("Wrapper",), after, source, name)


def test_inserts_after_the_named_member_with_the_class_spacing() -> None:
    source = textwrap.dedent('''\
        class Wrapper:
            def a(self):
                return 'a'  # single quotes stay


            def set_eagle3_layers_to_capture(self, layer_ids=None):
                pass


            def b(self):
                pass
    ''')
    new = _apply(source, _members("set_eagle3_layers_to_capture"))
    assert new == textwrap.dedent('''\
        class Wrapper:
            def a(self):
                return 'a'  # single quotes stay


            def set_eagle3_layers_to_capture(self, layer_ids=None):
                pass


            def get_embed_and_head(self):
                return self.inner.get_embed_and_head()


            def b(self):
                pass
    ''')


def test_end_of_class_goes_before_trailing_comments_and_keeps_what_follows() -> None:
    source = "import os\n\n\nclass Wrapper(Base):\n    x = 1\n    # trailing\n\n\nZ = 2  # after\n"
    new = _apply(source, _members(None))
    assert new == (
        "import os\n\n\nclass Wrapper(Base):\n    x = 1\n\n"
        "    def get_embed_and_head(self):\n        return self.inner.get_embed_and_head()\n"
        "    # trailing\n\n\nZ = 2  # after\n"
    )


def test_nested_and_conditional_classes_are_found() -> None:
    source = "if X:\n    class Wrapper:\n        pass\nelse:\n    class Wrapper:\n        pass\n"
    with pytest.raises(ApplyError, match="exactly once"):
        _apply(source, _members(None))
    source = "class Outer:\n    class Wrapper:\n        pass\n"
    nested = InsertMembers("m.py", ("Outer", "Wrapper"), None, METHOD, "get_embed_and_head")
    assert "        def get_embed_and_head(self):\n            return self.inner" in _apply(source, nested)
    source = "try:\n    import x\nexcept ImportError:\n    class Wrapper:\n        pass\n"
    new = _apply(source, _members(None))
    assert "        def get_embed_and_head(self):\n            return self.inner" in new


def test_a_one_line_class_body_is_refused() -> None:
    with pytest.raises(ApplyError, match="one line"):
        _apply("class Wrapper: pass\n", _members(None))


def test_file_without_final_newline() -> None:
    source = "class Wrapper:\n    x = 1"
    new = _apply(source, _members(None))
    assert new.startswith("class Wrapper:\n    x = 1\n\n    def get_embed_and_head(self):\n")
    ast.parse(new)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("f(a, b)", "f(a, b, aux=aux)"),
        ("f(\n        a,\n        b,\n    )", "f(\n        a,\n        b,\n        aux=aux,\n    )"),
        ("f(\n        a, b\n    )", "f(\n        a, b, aux=aux\n    )"),
        ("f(\n        a,\n        b\n    )", "f(\n        a,\n        b,\n        aux=aux\n    )"),
        ("f()", "f(aux=aux)"),
    ],
)
def test_keyword_argument_follows_the_call_layout(call: str, expected: str) -> None:
    source = f"class Wrapper:\n    def forward(self):\n        return {call}\n"
    edit = AddKeyword("m.py", ("Wrapper",), "forward", 3, "f", "aux", "aux")
    assert _apply(source, edit) == f"class Wrapper:\n    def forward(self):\n        return {expected}\n"


def test_statements_before_after_and_in_bodies() -> None:
    source = textwrap.dedent('''\
        class Wrapper:
            def __init__(self):
                self.a = 1

            def forward(self, x):
                y = x

                # comment stays with the loop
                for i in range(3):
                    y = y + i
                return y
    ''')
    edits = [
        InsertStatements("m.py", ("Wrapper",), "__init__", 0, "FunctionDef", BODY_END, "self.b = 2\n"),
        InsertStatements("m.py", ("Wrapper",), "forward", 6, "Assign", AFTER, "z = 0\n"),
        InsertStatements("m.py", ("Wrapper",), "forward", 9, "For", BEFORE, "acc = []\n"),
        InsertStatements("m.py", ("Wrapper",), "forward", 9, "For", BODY_START, "acc.append(i)\n"),
        InsertStatements("m.py", ("Wrapper",), "forward", 11, "Return", BEFORE, "if acc:\n    return y, acc\n"),
        InsertStatements("m.py", ("Wrapper",), "forward", 0, "FunctionDef", BODY_START, "w = None\n"),
    ]
    assert _apply(source, *edits) == textwrap.dedent('''\
        class Wrapper:
            def __init__(self):
                self.a = 1
                self.b = 2

            def forward(self, x):
                w = None
                y = x
                z = 0

                acc = []
                # comment stays with the loop
                for i in range(3):
                    acc.append(i)
                    y = y + i
                if acc:
                    return y, acc
                return y
    ''')


def test_anchor_on_a_shared_line_is_refused() -> None:
    source = "class Wrapper:\n    def forward(self):\n        y = 1; return y\n"
    edit = InsertStatements("m.py", ("Wrapper",), "forward", 3, "Return", BEFORE, "pass\n")
    with pytest.raises(ApplyError, match="no single `Return`"):
        _apply(source, edit)


def test_proof_rejects_anything_but_the_planned_insertion() -> None:
    source = "class Wrapper:\n    x = 1\n\n\nY = 2\n"
    edit = _members(None)
    good = apply_edits("m.py", source, ast.parse(source), [edit])
    prove_file("m.py", source, ast.parse(source), good, [edit])
    with pytest.raises(ProofError, match="changed although no edit"):
        prove_file("m.py", source, ast.parse(source), good.replace("Y = 2", "Y = 3"), [edit])
    with pytest.raises(ProofError, match="not the original plus exactly"):
        prove_file("m.py", source, ast.parse(source), good.replace("x = 1", "x = 2"), [edit])
    with pytest.raises(ProofError, match="not the original plus exactly"):
        prove_file("m.py", source, ast.parse(source), source, [edit])
    with pytest.raises(ProofError, match="does not parse"):
        prove_file("m.py", source, ast.parse(source), good + "def (", [edit])
    with pytest.raises(ProofError, match="number of module-level statements"):
        prove_file("m.py", source, ast.parse(source), good + "Z = 3\n", [edit])


def test_proof_refuses_any_byte_the_ast_cannot_see_changed() -> None:
    """Whitespace and comments are invisible to the ``ast``: the proof compares the text outside
    the insertions byte for byte, inside the edited class and between statements."""
    source = "import os\n\n\nclass Wrapper:\n    x = 1\n\n\f    def forward(self):\n        return 1  # one\n\n\f\n# between\nY = 2\n"
    edit = _members("forward")
    good = apply_edits("m.py", source, ast.parse(source), [edit])
    assert "\f    def forward" in good  # the insertion keeps the form feed (libcst alone drops it)
    prove_file("m.py", source, ast.parse(source), good, [edit])
    changes = {
        "\f    def forward": "    def forward",  # in the edited class: the ast is the same
        "return 1  # one": "return 1  # two",
        "\f\n# between": "\n# between",  # between statements
        "# between": "# elsewhere",
        "import os\n\n\n": "import os\n\n",
    }
    for old, new in changes.items():
        with pytest.raises(ProofError, match=r"would (drop or )?change"):
            prove_file("m.py", source, ast.parse(source), good.replace(old, new), [edit])
    with pytest.raises(ProofError, match=r"line 7 of the original \(a form feed in it\)"):
        prove_file("m.py", source, ast.parse(source), good.replace("\f    def forward", "    def forward"), [edit])


def test_form_feeds_are_kept_where_libcst_reprints_the_class() -> None:
    source = "class Wrapper:\n\f    def forward(self, x):\n        y = x\n\f        return y\n"
    edit = InsertStatements("m.py", ("Wrapper",), "forward", 4, "Return", BEFORE, "y = y + 1\n")
    assert _apply(source, edit) == "class Wrapper:\n\f    def forward(self, x):\n        y = x\n        y = y + 1\n\f        return y\n"


def test_a_file_with_cr_line_endings_is_edited_in_cr() -> None:
    source = "class Wrapper:\r    def forward(self):\r        return 1\r\rY = 2\r"
    new = _apply(source, _members("forward"))
    assert new == "class Wrapper:\r    def forward(self):\r        return 1\r\r" + METHOD.replace("\n", "\r").replace("def", "    def").replace("\r    return", "\r        return") + "\rY = 2\r"


def test_proof_compiles_the_edited_code() -> None:
    source = "class Wrapper:\n    x = 1\n"
    bad = InsertMembers("m.py", ("Wrapper",), None, "def f(self):\n    nonlocal q\n", "f")
    new = apply_edits("m.py", source, ast.parse(source), [bad])
    with pytest.raises(ProofError, match="does not compile"):
        prove_file("m.py", source, ast.parse(source), new, [bad])


def test_style_problems() -> None:
    assert style_problem("a\r\nb\r\n", "a\r\nb\nc\r\n") == "the new text brings LF line endings into a file with CRLF line endings"
    assert style_problem("a\nb\n", "a\r\nb\n") == "the new text brings CRLF line endings into a file with LF line endings"
    assert style_problem("a\rb\r", "a\rb\nc\r") == "the new text brings LF line endings into a file with CR line endings"
    assert style_problem("a\rb\r", "a\rb\rc\r") is None
    assert style_problem("a\r\nb\n", "a\r\nb\nc\n") is None  # a file that mixes them already
    assert style_problem("if x:\n\ty\n", "if x:\n\ty\n    z\n") == "the new text indents with a character the file does not use"
    assert style_problem("if x:\n    y\n", "if x:\n    y\n    z\n") is None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("class A(B):\n    def f(self, x=1):\n        return self.x[1:2]\n", "class A(B):\n    def f(self, x=1):\n        return self.x[1:2]\n"),
        ("x = 1\n", "x = True\n"),  # int vs bool
        ("x = 1\n", "\n\nx   =   1  # moved\n"),  # positions and comments do not count
        ("x = 'a'\n", "x = u'a'\n"),  # Constant.kind
        ("f(a, b)\n", "f(a)\n"),  # list lengths
        ("a.b = 1\n", "a.b\n"),  # statement kinds
        ("del a\n", "a\n"),  # Del vs Load context
        ("def f(*, a): pass\n", "def f(a): pass\n"),  # same names, other fields
        ("x = (1, 2)\n", "x = [1, 2]\n"),
    ],
)
def test_same_tree_agrees_with_ast_dump(left: str, right: str) -> None:
    from eagle3lint.fix.proof import same_tree

    a, b = ast.parse(left), ast.parse(right)
    assert same_tree(a, b) == (ast.dump(a) == ast.dump(b))
    assert same_tree(a, ast.parse(left))


def test_method_def_parses_one_method_at_its_real_position() -> None:
    from eagle3lint.fix.texts import SourceFile

    text = (
        "import torch\n"
        "\n"
        "class Model:\n"
        "\tdef __init__(self):\n"
        "\t\tself.layers = []\n"
        "\n"
        "\t@torch.no_grad()\n"
        "\tdef forward(self, x):\n"
        "\t\tfor i in range(3):\n"
        "\t\t\tx = self.layers[i](x)\n"
        "\t\treturn x\n"
    )
    source = SourceFile("m.py", text.encode(), "utf-8", text)
    whole = ast.parse(text).body[1]
    assert isinstance(whole, ast.ClassDef)
    expected = whole.body[1]
    assert isinstance(expected, ast.FunctionDef)
    piece = source.method_def("forward", 8, 11)
    assert piece is not None
    assert ast.dump(ast.Module(body=piece.body, type_ignores=[]), include_attributes=True) == ast.dump(
        ast.Module(body=expected.body, type_ignores=[]), include_attributes=True
    )
    assert source.method_def("forward", 8, 11) is piece  # parsed once
    assert source.method_def("backward", 8, 11) is None  # not the method named
    assert source.method_def("forward", 7, 11) is None  # the lines hold a decorator first
    assert source.method_def("Model", 3, 11) is None  # a class statement is not a method
