"""Path helpers on the hot path of every run: they must agree with the slow, obvious versions."""

from __future__ import annotations

import os
from pathlib import Path

from eagle3lint.source.sources import tree_path


def _slow_tree_path(path: str) -> str:
    """The obvious version: a link to a file keeps its own name, in its real folder."""
    if os.path.islink(path) and not os.path.isdir(path):
        head, name = os.path.split(path)
        return os.path.join(os.path.realpath(head or "."), name)
    return os.path.realpath(path)


def test_tree_path_agrees_with_the_obvious_version_through_links(tmp_path: Path) -> None:
    real = tmp_path / "real" / "models"
    real.mkdir(parents=True)
    (real / "llama.py").write_text("x = 1\n")
    (tmp_path / "elsewhere.py").write_text("y = 2\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real")  # a linked folder
    (real / "alias.py").symlink_to(tmp_path / "elsewhere.py")  # a linked file
    (real / "loop.py").symlink_to(real / "loop.py")  # a link to itself
    cases = [
        real / "llama.py",
        tmp_path / "linked" / "models" / "llama.py",
        tmp_path / "linked" / "models" / "alias.py",
        real / "loop.py",
        tmp_path / "linked" / "models" / ".." / "models" / "llama.py",
        tmp_path / "linked" / "models" / ".." / "models" / "alias.py",
        real / "missing.py",
        real,
        tmp_path / "linked",
    ]
    for case in cases:
        assert tree_path(str(case)) == _slow_tree_path(str(case)), case
    # A linked file stays where it is linked from, in the real folder of the link.
    assert tree_path(str(tmp_path / "linked" / "models" / "alias.py")) == str(real / "alias.py")
    assert tree_path(str(tmp_path / "linked")) == str(tmp_path / "real")
    cwd = os.getcwd()
    try:
        os.chdir(real)
        assert tree_path("llama.py") == os.path.realpath("llama.py")
        assert tree_path("alias.py") == str(real / "alias.py")
    finally:
        os.chdir(cwd)
