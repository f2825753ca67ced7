"""Path helpers on the hot path of every run: they must agree with the slow, obvious versions."""

from __future__ import annotations

import os
from pathlib import Path

from eagle3lint.sources import real_path


def test_real_path_agrees_with_realpath_through_links(tmp_path: Path) -> None:
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
        real / "missing.py",
        real,
    ]
    for case in cases:
        assert real_path(str(case)) == os.path.realpath(case), case
    cwd = os.getcwd()
    try:
        os.chdir(real)
        assert real_path("llama.py") == os.path.realpath("llama.py")
    finally:
        os.chdir(cwd)
