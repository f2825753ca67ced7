"""Writing: atomic, mode bits kept, and never over a file that changed since it was read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eagle3lint.engine_finder import discover_engine
from eagle3lint.fix.session import prepare_fixes, write_changes
from eagle3lint.fix.write import WriteRefused, write_atomically
from eagle3lint.runner import run_check
from tests.fix_helpers import MODELS, copy_before


def test_write_keeps_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n")
    os.chmod(target, 0o640)
    write_atomically(str(target), b"x = 2\n", b"x = 1\n")
    assert target.read_bytes() == b"x = 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_write_replaces_a_hard_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    shared = tmp_path / "cache.py"
    shared.write_bytes(b"x = 1\n")
    copy = tmp_path / "copy.py"
    os.link(shared, copy)
    write_atomically(str(copy), b"x = 2\n", b"x = 1\n")
    assert shared.read_bytes() == b"x = 1\n"
    assert copy.read_bytes() == b"x = 2\n"


def test_write_refuses_a_changed_file(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1  # edited meanwhile\n")
    with pytest.raises(WriteRefused, match="changed on disk"):
        write_atomically(str(target), b"x = 2\n", b"x = 1\n")
    assert target.read_bytes() == b"x = 1  # edited meanwhile\n"
    with pytest.raises(WriteRefused, match="re-read"):
        write_atomically(str(tmp_path / "gone.py"), b"x = 2\n", b"x = 1\n")


def test_file_changed_between_analysis_and_write_is_not_overwritten(tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    models = root / MODELS
    engine = discover_engine([models])
    result = run_check(engine, [models])
    outcome = prepare_fixes(result, [models])
    target = models / "vl_wrapper.py"
    assert set(outcome.changes) == {str(target)}
    edited = target.read_text() + "\n# edited by someone else meanwhile\n"
    target.write_text(edited)
    problems = write_changes(outcome)
    assert problems == {str(target): "the file changed on disk since it was read; run fix again"}
    assert target.read_text() == edited


def test_a_file_that_vanished_before_fixing_is_reported_not_raised(tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    models = root / MODELS
    result = run_check(discover_engine([models]), [models])
    (models / "vl_wrapper.py").unlink()
    outcome = prepare_fixes(result, [models])
    assert outcome.changes == {}
    assert {r.reason for r in outcome.rejections} == {"vl_wrapper.py: file vanished before it could be read"}
