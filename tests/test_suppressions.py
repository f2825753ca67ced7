"""# noqa: E3L..., # eagle3lint: ignore[...], ignore-file, and E3L900 unused-suppression."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagle3lint.source.suppressions import scan_suppressions
from tests.helpers import FIXTURES, run_cli, run_json, summary_of


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "t")
    return tmp_path / "t"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_scan_recognises_each_form() -> None:
    found = scan_suppressions(
        "class A:  # noqa: E3L001, E501\n"
        "class B:  # eagle3lint: ignore[E3L004,E3L001]\n"
        "class C:  # eagle3lint: ignore\n"
        "class D:  # noqa\n"
        "class E:  # noqa: F401\n"
    )
    assert [(c.line, c.codes) for c in found.comments] == [(1, ("E3L001",)), (2, ("E3L004", "E3L001")), (3, None)]
    assert scan_suppressions("# eagle3lint: ignore-file\nx = 1\n").ignore_file_line == 1


def test_comment_lines_are_numbered_as_the_ast_numbers_them() -> None:
    """A form feed (or another separator ``str.splitlines`` knows) ends no line; a lone CR does."""
    for text in ("x = 1\n\x0c\n\x1c\n# \x85 \u2028\nclass A:  # noqa: E3L001\n", "x = 1\r\r# c\r\rclass A:  # noqa: E3L001\r"):
        (comment,) = scan_suppressions(text).comments
        assert comment.line == 5
    assert scan_suppressions("x = 1\r# eagle3lint: ignore-file\r").ignore_file_line == 2


def test_noqa_on_the_class_line(tree: Path) -> None:
    models = tree / "sglang/srt/models"
    _edit(models / "missing.py", "class MissingForCausalLM(nn.Module):", "class MissingForCausalLM(nn.Module):  # noqa: E3L001")
    _edit(models / "wrapper_attr.py", "class WrapperAttrForConditionalGeneration(nn.Module):", "class WrapperAttrForConditionalGeneration(nn.Module):  # eagle3lint: ignore[E3L001]")
    _, data = run_json("check", models)
    classes = {f["class"] for f in data["findings"]}
    assert "MissingForCausalLM" not in classes
    # A suppression for another code does not hide E3L004.
    assert "WrapperAttrForConditionalGeneration" in classes


def test_blanket_ignore_and_bare_noqa(tree: Path) -> None:
    models = tree / "sglang/srt/models"
    _edit(models / "missing.py", "class MissingForCausalLM(nn.Module):", "class MissingForCausalLM(nn.Module):  # eagle3lint: ignore")
    _edit(models / "signature.py", "class SignatureForCausalLM(nn.Module):", "class SignatureForCausalLM(nn.Module):  # noqa")
    _, data = run_json("check", models)
    classes = {f["class"] for f in data["findings"]}
    assert "MissingForCausalLM" not in classes
    assert "SignatureForCausalLM" in classes  # bare noqa is flake8's, not ours


def test_suppression_on_the_line_the_finding_points_at(tree: Path) -> None:
    _edit(tree / "sglang/srt/layers/stub_base.py", "    def get_embed_and_head(self):", "    def get_embed_and_head(self):  # noqa: E3L003")
    _, data = run_json("check", tree)
    stubs = {f["method"] for f in data["findings"] if f["code"] == "E3L003"}
    assert stubs == {"set_eagle3_layers_to_capture"}


def test_ignore_file(tree: Path) -> None:
    path = tree / "sglang/srt/models/wrapper_getattr.py"
    path.write_text("# eagle3lint: ignore-file\n" + path.read_text())
    _, data = run_json("check", tree)
    assert "BadGetattrWrapperForConditionalGeneration" not in {f["class"] for f in data["findings"]}


def test_unused_suppression_is_reported_only_when_selected(tree: Path) -> None:
    models = tree / "sglang/srt/models"
    _edit(models / "llama_like.py", "class FixLlamaForCausalLM(nn.Module):", "class FixLlamaForCausalLM(nn.Module):  # noqa: E3L001")
    _edit(models / "missing.py", "class MissingForCausalLM(nn.Module):", "class MissingForCausalLM(nn.Module):  # noqa: E3L001")
    _, data = run_json("check", models)
    assert not [f for f in data["findings"] if f["code"] == "E3L900"]
    _, data = run_json("check", models, "--extend-select", "E3L900")
    unused = [f for f in data["findings"] if f["code"] == "E3L900"]
    assert len(unused) == 1
    assert unused[0]["path"].endswith("llama_like.py")
    assert unused[0]["severity"] == "warning"


def test_summary_counts_suppressed_findings(tree: Path) -> None:
    models = tree / "sglang/srt/models"
    _, before = run_json("check", models)
    assert before["summary"]["suppressed"] == 0
    hidden = sum(1 for f in before["findings"] if (f["class"], f["code"]) == ("MissingForCausalLM", "E3L001"))
    assert hidden >= 1
    _edit(models / "missing.py", "class MissingForCausalLM(nn.Module):", "class MissingForCausalLM(nn.Module):  # noqa: E3L001")
    _, data = run_json("check", models)
    assert data["summary"]["suppressed"] == hidden
    assert data["summary"]["findings"] == before["summary"]["findings"] - hidden
    assert data["summary"]["baselined"] == 0
    last = summary_of(run_cli("check", models).stdout)
    assert f"({hidden} suppressed; " in last, last
    assert "baseline" not in last
