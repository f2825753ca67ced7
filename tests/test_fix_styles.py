"""A fixed file keeps its own style: CRLF or CR line endings, tab indentation and form feeds
survive, and the inserted code is written in them (the result equals the LF/space golden file
restyled)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fix_helpers import (
    MODELS,
    copy_before,
    golden_after,
    to_cr,
    to_crlf,
    to_form_feeds,
    to_tabs,
)
from tests.helpers import REPO, run_cli

STYLES: dict[str, Callable[[str], str]] = {
    "crlf": to_crlf,
    "tabs": to_tabs,
    "tabs+crlf": lambda t: to_crlf(to_tabs(t)),
    "cr": to_cr,
    "form-feeds": to_form_feeds,
    "form-feeds+tabs+cr": lambda t: to_cr(to_form_feeds(to_tabs(t))),
}


def _restyle_models(root: Path, style: Callable[[str], str]) -> None:
    for path in (root / MODELS).glob("*.py"):
        path.write_bytes(style(path.read_bytes().decode()).encode())


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("name", ["fix_wrapper", "fix_leaf_capture"])
def test_style_is_kept(name: str, style: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    _restyle_models(root, STYLES[style])
    done = run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    assert done.returncode == 0, done.stderr
    for expected in (golden_after(name) / MODELS).glob("*.py"):
        got = (root / MODELS / expected.name).read_bytes()
        assert got == STYLES[style](expected.read_text()).encode(), expected.name
    again = run_cli("fix", "--unsafe-fixes", root / MODELS)
    assert (again.returncode, again.stdout) == (0, "")


def test_crlf_diff_applies_with_patch(tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    _restyle_models(root, to_crlf)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "eagle3lint", "fix", str(MODELS)], cwd=root, env=env, capture_output=True)
    assert b"\r\n" in done.stdout
    patched = subprocess.run(["patch", "-p1", "--quiet"], input=done.stdout, cwd=root, capture_output=True)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    expected = to_crlf((golden_after("fix_wrapper") / MODELS / "vl_wrapper.py").read_text()).encode()
    assert (root / MODELS / "vl_wrapper.py").read_bytes() == expected


@pytest.mark.parametrize(
    ("header", "encoding"),
    [(b"# -*- coding: latin-1 -*-\n# caf\xe9\n", "latin-1"), (b"\xef\xbb\xbf# caf\xc3\xa9\n", "utf-8-sig")],
)
def test_encoding_and_bom_are_kept(header: bytes, encoding: str, tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    target = root / MODELS / "vl_wrapper.py"
    target.write_bytes(header + target.read_bytes())
    done = run_cli("fix", "--apply", target)
    assert done.returncode == 0, done.stderr
    expected = header + (golden_after("fix_wrapper") / MODELS / "vl_wrapper.py").read_bytes()
    assert target.read_bytes() == expected
    assert target.read_bytes().decode(encoding)
