"""Golden before/after trees, one per template: `fix --apply` must turn `before` into `after`
byte for byte, the result must check clean, and a second run must change nothing."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from tests.fix_helpers import MODELS, copy_before, differing, golden_after, run_in, tree_bytes
from tests.helpers import FIXTURES, run_cli

GOLDEN = ["fix_wrapper", "fix_leaf_embed", "fix_leaf_capture"]


@pytest.mark.parametrize("name", GOLDEN)
def test_apply_turns_before_into_after(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    done = run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    assert done.returncode == 0, done.stderr
    assert differing(tree_bytes(root), tree_bytes(golden_after(name))) == []
    assert done.stdout == ""


@pytest.mark.parametrize("name", GOLDEN)
def test_after_checks_clean_and_second_run_is_empty(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    check = run_cli("check", root / MODELS)
    assert check.returncode == 0, check.stdout
    again = run_cli("fix", "--unsafe-fixes", root / MODELS)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    for path in (root / MODELS).glob("*.py"):
        compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("name", GOLDEN)
def test_dry_run_diff_is_the_golden_change_and_writes_nothing(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    before = tree_bytes(root)
    done = run_in(root, "fix", "--unsafe-fixes", MODELS)
    # The leaf-capture models have no EAGLE-3 code yet: their finding is information (exit 0).
    assert done.returncode == (0 if name == "fix_leaf_capture" else 1)
    assert tree_bytes(root) == before
    assert done.stdout.startswith("--- a/sglang/srt/models/")
    patched = subprocess.run(["patch", "-p1", "--quiet"], input=done.stdout, text=True, cwd=root, capture_output=True)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    assert differing(tree_bytes(root), tree_bytes(golden_after(name))) == []


def test_safe_only_leaves_the_guessed_head_alone(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_embed", tmp_path)
    done = run_cli("fix", "--apply", root / MODELS)
    assert done.returncode == 1  # the unsafe finding remains
    assert "1 finding remains: 1 needs --unsafe-fixes." in done.stderr
    after = tree_bytes(golden_after("fix_leaf_embed"))
    now = tree_bytes(root)
    assert now["sglang/srt/models/embed_leaf.py"] == after["sglang/srt/models/embed_leaf.py"]
    untouched = FIXTURES / "fix_leaf_embed" / "before" / MODELS / "guessed_head.py"
    assert now["sglang/srt/models/guessed_head.py"] == untouched.read_bytes()


def test_leaf_capture_needs_unsafe_fixes(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_capture", tmp_path)
    before = tree_bytes(root)
    done = run_cli("fix", "--apply", root / MODELS)
    assert done.returncode == 0  # what remains is information
    assert "2 findings remain: 2 need --unsafe-fixes." in done.stderr
    assert tree_bytes(root) == before


def test_golden_after_files_are_valid_python() -> None:
    for name in GOLDEN:
        for path in (golden_after(name) / MODELS).glob("*.py"):
            ast.parse(path.read_text(), str(path))
