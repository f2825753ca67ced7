"""Symbolic links in an engine tree and among the PATHs.

Python imports a module through a link under the link's own name, so the engine has a linked
model file where the link is: it is checked, reported and fixed there, and only its text comes
from where the link leads. A link to a pipe or a device is a per-file error; a link loop given
as a PATH is a usage error naming it, in every command.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers import BASIC_FINDINGS, FIXTURES, run_cli, run_json

MODELS = "sglang/srt/models"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "t")
    return tmp_path / "t"


def _link_out(tree: Path, rel: str, outside: Path) -> Path:
    """Move ``rel`` out of the tree and link it back; returns the file the link leads to."""
    outside.mkdir(exist_ok=True)
    target = outside / Path(rel).name
    shutil.move(tree / rel, target)
    (tree / rel).symlink_to(target)
    return target


def _keys(data: dict) -> list[tuple[str, str, str, str]]:
    return sorted((f["code"], f["class"], f["method"], Path(f["path"]).name) for f in data["findings"])


def test_a_linked_model_file_is_checked_where_the_link_is(tree: Path, tmp_path: Path) -> None:
    _, plain = run_json("check", tree / MODELS, "--no-cache")
    _link_out(tree, f"{MODELS}/wrapper_attr.py", tmp_path / "outside")
    code, linked = run_json("check", tree / MODELS, "--no-cache")
    assert code == 1 and linked["errors"] == []
    assert _keys(linked) == _keys(plain) and len(linked["findings"]) == BASIC_FINDINGS
    wrapper = [f for f in linked["findings"] if f["class"] == "WrapperAttrForConditionalGeneration"]
    assert wrapper and all(f["path"] == str(tree / MODELS / "wrapper_attr.py") for f in wrapper)
    # The link itself as the PATH (as a pre-commit hook passes it).
    done = run_cli("check", tree / MODELS / "wrapper_attr.py", "--no-cache")
    assert done.returncode == 1, done.stderr
    assert "`WrapperAttrForConditionalGeneration` does not delegate" in done.stdout
    assert "(3 model classes checked)" in done.stdout


def test_links_elsewhere_in_the_tree_are_read_through(tree: Path, tmp_path: Path) -> None:
    """A linked base class (parsed on demand) and a linked engine file that holds call sites."""
    _, plain = run_json("check", tree / MODELS, "--no-cache")
    _link_out(tree, f"{MODELS}/llama_like.py", tmp_path / "outside")
    _link_out(tree, "sglang/srt/speculative/eagle_worker.py", tmp_path / "outside")
    code, linked = run_json("check", tree / MODELS, "--no-cache")
    assert code == 1 and linked["errors"] == []
    assert _keys(linked) == _keys(plain)
    contract = run_cli("contract", tree / MODELS, "--format", "json")
    assert contract.returncode == 0, contract.stderr
    assert "sglang/srt/speculative/eagle_worker.py" in contract.stdout


def test_fix_apply_writes_the_linked_file_and_keeps_the_link(tree: Path, tmp_path: Path) -> None:
    """With --write-through-links (the file the link leads to lies outside the given PATH:
    without it the fix is shown, not written; see test_robustness_round4.py, R4-20)."""
    target = _link_out(tree, f"{MODELS}/wrapper_attr.py", tmp_path / "outside")
    link = tree / MODELS / "wrapper_attr.py"
    before = target.read_text()
    done = run_cli("fix", "--apply", "--no-cache", "--write-through-links", link)
    assert done.returncode == 1, done.stderr  # the suggestion-only finding remains
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "def get_embed_and_head(self):" in target.read_text() and target.read_text() != before
    assert sorted(p.name for p in target.parent.iterdir()) == ["wrapper_attr.py"]  # no temporary file
    after = run_cli("check", link, "--no-cache")
    assert "`WrapperAttrForConditionalGeneration` does not delegate" not in after.stdout
    again = run_cli("fix", "--apply", "--no-cache", "--write-through-links", link)
    assert again.returncode == 1 and link.is_symlink()
    assert "Fixed" not in again.stderr


def test_a_link_to_a_pipe_or_a_device_is_named_and_skipped(tree: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tree / MODELS / "zz_pipe.py").symlink_to(tmp_path / "pipe")  # reading it would block forever
    (tree / MODELS / "zz_null.py").symlink_to("/dev/null")
    code, data = run_json("check", tree / MODELS, "--no-cache")
    assert code == 2
    messages = {Path(e["path"]).name: e["message"] for e in data["errors"]}
    assert set(messages) == {"zz_pipe.py", "zz_null.py"}
    assert all("symbolic link to a pipe, socket or device" in m for m in messages.values())
    assert len(data["findings"]) == BASIC_FINDINGS


@pytest.mark.parametrize(
    "command",
    [("check", "--no-cache"), ("models", "--no-cache"), ("fix", "--no-cache"), ("fix", "--apply", "--no-cache"), ("contract",)],
)
def test_a_symlink_loop_path_is_a_usage_error_naming_it(tree: Path, command: tuple[str, ...]) -> None:
    loop = tree / MODELS / "loop.py"
    loop.symlink_to(loop)
    done = run_cli(*command, loop)
    assert done.returncode == 2, done.stderr
    assert f"{loop}: a symbolic link loop" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_a_path_through_a_looping_folder_and_a_looping_engine_root(tree: Path, tmp_path: Path) -> None:
    folder = tmp_path / "self"
    folder.symlink_to(folder)
    for args in (("check", folder / "x.py"), ("check", "--engine-root", folder, tree / MODELS)):
        done = run_cli(*args)
        assert done.returncode == 2 and f"{folder}" in done.stderr and "a symbolic link loop" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.release
def test_kimi_k25_linked_back_into_sglang_0_5_9_is_checked_and_fixed(tmp_path: Path) -> None:
    """The reported case: ``kimi_k25.py`` moved out of a copy of SGLang 0.5.9 and linked back."""
    from tests.helpers import release_root, summary_of

    tree = tmp_path / "sglang-0.5.9"
    shutil.copytree(release_root("sglang==0.5.9").parent, tree)
    whole = summary_of(run_cli("check", tree / MODELS, "--no-cache").stdout)
    checked = re.search(r"\((\d+) model classes checked\)", whole)
    assert checked is not None, whole
    target = _link_out(tree, f"{MODELS}/kimi_k25.py", tmp_path / "outside")
    link = tree / MODELS / "kimi_k25.py"
    done = run_cli("check", tree / MODELS, "--no-cache")
    # The linked file's class is counted as before it was moved (the run once lost it).
    assert f"({checked[1]} model classes checked)" in done.stdout, done.stdout[-500:]
    assert "`KimiK25ForConditionalGeneration` does not delegate" in done.stdout
    single = run_cli("check", link, "--no-cache")
    assert single.returncode == 1 and "`KimiK25ForConditionalGeneration` does not delegate" in single.stdout
    fixed = run_cli("fix", "--apply", "--no-cache", link)
    assert fixed.returncode == 0, fixed.stderr
    assert link.is_symlink() and "def get_embed_and_head(self):" in target.read_text()
    assert run_cli("check", link, "--no-cache").returncode == 0
