"""Writing: atomic, mode bits, owner and group kept, and never over a file that changed since it
was read or that its user made read-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.fix.write import WriteRefused, write_atomically
from eagle3lint.run.fix_session import prepare_fixes, write_changes
from eagle3lint.run.runner import run_check
from tests.fix_helpers import MODELS, copy_before
from tests.helpers import run_cli


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


# ---- owner, group and read-only files (robustness round 3) --------------------------------------

# Ids no account has: only root can give a file to them.
NOBODY_UID, NOBODY_GID = 4242, 4243


def _foreign_owner() -> tuple[int, int]:
    """An owner and group this process may give a file: anyone's as root; else itself and one of
    its other groups (its own group when it has no other)."""
    if os.geteuid() == 0:
        return NOBODY_UID, NOBODY_GID
    return os.geteuid(), next((g for g in os.getgroups() if g != os.getegid()), os.getegid())


def test_write_keeps_owner_and_group(tmp_path: Path) -> None:
    """Run as root in a container over a bind-mounted checkout, the new file was root's."""
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n")
    uid, gid = _foreign_owner()
    os.chown(target, uid, gid)
    os.chmod(target, 0o664)
    write_atomically(str(target), b"x = 2\n", b"x = 1\n")
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (uid, gid, 0o664)
    assert target.read_bytes() == b"x = 2\n"


def test_an_owner_that_cannot_be_kept_does_not_stop_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n")
    uid, gid = _foreign_owner()
    os.chown(target, uid, gid)
    calls: list[tuple[int, int]] = []

    def refused(path: str, owner: int, group: int) -> None:
        calls.append((owner, group))
        raise PermissionError(1, "Operation not permitted", path)

    monkeypatch.setattr("eagle3lint.fix.write.os.chown", refused)
    write_atomically(str(target), b"x = 2\n", b"x = 1\n")
    assert target.read_bytes() == b"x = 2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]
    if (uid, gid) != (os.geteuid(), os.getegid()):
        assert calls == [(uid, gid), (-1, gid)]  # the owner, then the group alone


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o000], ids=oct)
def test_a_read_only_file_is_refused_even_for_root(tmp_path: Path, mode: int) -> None:
    """Renaming over a file needs only its folder to be writable, and root may write anything:
    a file without write permission is its user's statement, never replaced."""
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n")
    os.chmod(target, mode)
    with pytest.raises(WriteRefused, match="the file is read-only; make it writable to let fix change it"):
        write_atomically(str(target), b"x = 2\n", b"x = 1\n")
    assert target.read_bytes() == b"x = 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def _two_wrapper_files(tmp_path: Path) -> tuple[Path, Path]:
    root = copy_before("fix_wrapper", tmp_path)
    first = root / MODELS / "vl_wrapper.py"
    second = first.with_name("vl_wrapper2.py")
    second.write_text(first.read_text().replace("VLForConditionalGeneration", "VL2ForConditionalGeneration"))
    return first, second


def test_fix_apply_keeps_owners_and_leaves_a_read_only_file_alone(tmp_path: Path) -> None:
    first, second = _two_wrapper_files(tmp_path)
    uid, gid = _foreign_owner()
    os.chown(first, uid, gid)
    os.chmod(second, 0o444)
    second_before = second.read_bytes()
    done = run_cli("fix", "--apply", first.parent)
    assert done.returncode == 2, done.stderr  # a file that could not be written
    assert "Traceback" not in done.stderr
    assert "vl_wrapper2.py: not written: the file is read-only; make it writable to let fix change it" in done.stderr
    assert "1 file was not written (reasons above): its fixes are not applied." in done.stderr
    assert second.read_bytes() == second_before and stat.S_IMODE(second.stat().st_mode) == 0o444
    assert b"def set_eagle3_layers_to_capture" in first.read_bytes()  # the rest is still fixed
    assert (first.stat().st_uid, first.stat().st_gid) == (uid, gid)
    assert not list(first.parent.glob("*.eagle3lint-tmp"))
