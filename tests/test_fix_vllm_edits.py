"""The edits the vLLM fixes need (add a base, import a name, rename a method, number a loop):
libcst output in the file's own layout, and the proof that replays each on the ``ast``."""

from __future__ import annotations

import ast
import textwrap

import pytest

from eagle3lint.fix.apply import apply_edits
from eagle3lint.fix.edits import (
    BEFORE,
    BODY_END,
    AddBase,
    ApplyError,
    Edit,
    EnumerateLoop,
    ImportName,
    InsertStatements,
    RenameMethod,
)
from eagle3lint.fix.proof import ProofError, prove_file


def _apply(source: str, *edits: Edit) -> str:
    new = apply_edits("m.py", source, ast.parse(source), list(edits))
    prove_file("m.py", source, ast.parse(source), new, list(edits))
    return new


def _base(cls: str, name: str, position: int) -> AddBase:
    return AddBase("m.py", (cls,), name, position)


@pytest.mark.parametrize(
    ("header", "position", "expected"),
    [
        ("class A(nn.Module, SupportsPP):", 2, "class A(nn.Module, SupportsPP, SupportsEagle3):"),
        ("class A(nn.Module, Generic[T]):", 1, "class A(nn.Module, SupportsEagle3, Generic[T]):"),
        ("class A(nn.Module, metaclass=M):", 1, "class A(nn.Module, SupportsEagle3, metaclass=M):"),
        ("class A:", 0, "class A(SupportsEagle3):"),
        ("class A():", 0, "class A(SupportsEagle3):"),
        (
            "class A(\n    nn.Module,\n    SupportsPP,  # pp\n):",
            2,
            "class A(\n    nn.Module,\n    SupportsPP,  # pp\n    SupportsEagle3,\n):",
        ),
        (
            "class A(\n    nn.Module,\n    SupportsPP\n):",
            2,
            "class A(\n    nn.Module,\n    SupportsPP,\n    SupportsEagle3\n):",
        ),
        ("class A(\n    nn.Module,\n):", 1, "class A(\n    nn.Module,\n    SupportsEagle3,\n):"),
        ("class A(\n    nn.Module,  # first\n    B,\n):", 1, "class A(\n    nn.Module,  # first\n    SupportsEagle3,\n    B,\n):"),
    ],
)
def test_a_base_is_added_in_the_bases_layout(header: str, position: int, expected: str) -> None:
    source = f"{header}\n    x = 1\n"
    assert _apply(source, _base("A", "SupportsEagle3", position)) == f"{expected}\n    x = 1\n"


def test_two_bases_at_one_place_go_in_name_order() -> None:
    source = "class A(nn.Module):\n    x = 1\n"
    new = _apply(source, _base("A", "SupportsEagle3", 1), _base("A", "EagleModelMixin", 1))
    assert new == "class A(nn.Module, EagleModelMixin, SupportsEagle3):\n    x = 1\n"


@pytest.mark.parametrize(
    ("statement", "position", "expected"),
    [
        ("from .interfaces import SupportsLoRA, SupportsPP", 0, "from .interfaces import SupportsEagle3, SupportsLoRA, SupportsPP"),
        ("from .interfaces import SupportsPP", 1, "from .interfaces import SupportsPP, SupportsEagle3"),
        (
            "from .interfaces import (\n    SupportsLoRA,\n    SupportsPP,  # pp\n)",
            2,
            "from .interfaces import (\n    SupportsLoRA,\n    SupportsPP,  # pp\n    SupportsEagle3,\n)",
        ),
        (
            "from .interfaces import (\n    SupportsLoRA,\n    SupportsPP,\n)",
            1,
            "from .interfaces import (\n    SupportsLoRA,\n    SupportsEagle3,\n    SupportsPP,\n)",
        ),
        ("from .interfaces import (\n    SupportsPP,\n)", 0, "from .interfaces import (\n    SupportsEagle3,\n    SupportsPP,\n)"),
    ],
)
def test_a_name_joins_an_existing_import(statement: str, position: int, expected: str) -> None:
    source = f"import os\n{statement}\n\nX = 1\n"
    edit = ImportName("m.py", ".interfaces", "SupportsEagle3", 2, True, position)
    assert _apply(source, edit) == f"import os\n{expected}\n\nX = 1\n"


def test_new_imports_after_one_statement_become_one_statement() -> None:
    source = "import os\nfrom torch import nn  # torch\n\n\nclass A(nn.Module):\n    x = 1\n"
    edits = [
        ImportName("m.py", ".interfaces", "SupportsEagle3", 2, False),
        ImportName("m.py", ".interfaces", "EagleModelMixin", 2, False),
        _base("A", "SupportsEagle3", 1),
    ]
    assert _apply(source, *edits) == (
        "import os\nfrom torch import nn  # torch\nfrom .interfaces import EagleModelMixin, SupportsEagle3\n\n\n"
        "class A(nn.Module, SupportsEagle3):\n    x = 1\n"
    )


def test_a_new_import_in_a_crlf_file_ends_with_crlf() -> None:
    source = "import os\r\nfrom torch import nn\r\n\r\nX = 1\r\n"
    new = _apply(source, ImportName("m.py", "vllm.models.interfaces", "SupportsEagle3", 2, False))
    assert new == "import os\r\nfrom torch import nn\r\nfrom vllm.models.interfaces import SupportsEagle3\r\n\r\nX = 1\r\n"


def test_import_edits_refuse_a_wrong_anchor() -> None:
    source = "import os\nX = 1\n"
    with pytest.raises(ApplyError, match=r"no `from \.\.\. import`"):
        apply_edits("m.py", source, ast.parse(source), [ImportName("m.py", ".i", "N", 1, True, 0)])
    with pytest.raises(ApplyError, match="no single module-level statement starts on line 5"):
        apply_edits("m.py", source, ast.parse(source), [ImportName("m.py", ".i", "N", 5, False)])
    star = "from .i import *\n"
    with pytest.raises(ApplyError, match=r"import \*"):
        apply_edits("m.py", star, ast.parse(star), [ImportName("m.py", ".i", "N", 1, True, 0)])


def test_rename_a_method_and_the_forwarded_calls_in_it() -> None:
    source = textwrap.dedent('''\
        class A:
            def get_old(self):  # stale
                """Uses get_old on the inner model."""
                return self.language_model.get_old()

            def other(self):
                return self.language_model.get_old()
    ''')
    forwarded = _apply(source, RenameMethod("m.py", ("A",), "get_old", "get_new", attributes=True))
    assert forwarded == source.replace("def get_old", "def get_new").replace(
        "return self.language_model.get_old()\n\n", "return self.language_model.get_new()\n\n"
    )
    assert forwarded.endswith("        return self.language_model.get_old()\n")  # another method: untouched
    only_def = _apply(source, RenameMethod("m.py", ("A",), "get_old", "get_new"))
    assert only_def == source.replace("def get_old", "def get_new")


def test_number_a_loop_and_collect_in_it() -> None:
    source = textwrap.dedent('''\
        class Decoder:
            def forward(self, x, r):
                for layer in islice(
                    self.layers, self.start_layer, self.end_layer
                ):  # the layers
                    x, r = layer(x, r)
                return x
    ''')
    edits: list[Edit] = [
        EnumerateLoop("m.py", ("Decoder",), "forward", 3, "idx", "self.start_layer"),
        InsertStatements("m.py", ("Decoder",), "forward", 3, "For", BEFORE, "aux = []\n"),
        InsertStatements("m.py", ("Decoder",), "forward", 3, "For", BODY_END, "self.collect(aux, idx + 1, x, r)\n"),
    ]
    assert _apply(source, *edits) == textwrap.dedent('''\
        class Decoder:
            def forward(self, x, r):
                aux = []
                for idx, layer in enumerate(islice(
                    self.layers, self.start_layer, self.end_layer
                ), start=self.start_layer):  # the layers
                    x, r = layer(x, r)
                    self.collect(aux, idx + 1, x, r)
                return x
    ''')
    plain = "class D:\n    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x\n"
    numbered = _apply(plain, EnumerateLoop("m.py", ("D",), "forward", 3, "i"))
    assert "        for i, layer in enumerate(self.layers):\n" in numbered


@pytest.mark.parametrize(
    "edit",
    [
        AddBase("m.py", ("A",), "Q", 1),
        AddBase("m.py", ("A",), "SupportsEagle3", 0),
        ImportName("m.py", ".interfaces", "SupportsEagle3", 1, False),
        ImportName("m.py", ".interfaces", "Other", 2, False),
        RenameMethod("m.py", ("A",), "get_old", "get_new", attributes=False),
        EnumerateLoop("m.py", ("A",), "forward", 9, "idx"),
    ],
)
def test_proof_rejects_a_text_that_is_not_exactly_the_planned_change(edit: Edit) -> None:
    source = textwrap.dedent('''\
        from torch import nn
        from .utils import x


        class A(nn.Module):
            def get_old(self):
                return self.language_model.get_old()

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
    ''')
    planned: list[Edit] = [
        AddBase("m.py", ("A",), "SupportsEagle3", 1),
        ImportName("m.py", ".interfaces", "SupportsEagle3", 2, False),
        RenameMethod("m.py", ("A",), "get_old", "get_new", attributes=True),
        EnumerateLoop("m.py", ("A",), "forward", 10, "idx"),
    ]
    new = apply_edits("m.py", source, ast.parse(source), planned)
    prove_file("m.py", source, ast.parse(source), new, planned)
    different = [e for e in planned if type(e) is not type(edit)] + [edit]
    with pytest.raises(ProofError):
        prove_file("m.py", source, ast.parse(source), new, different)
