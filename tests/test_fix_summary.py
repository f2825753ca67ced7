"""`fix`'s summary adds up: fixed + remaining = findings, the reasons add up to the remaining,
and "remaining" is what `check` reports once the fixes are written."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_scope import resolve_engine
from eagle3lint.run.fix_session import prepare_fixes
from eagle3lint.run.fix_tally import FixTally, summary_lines, tally_fixes
from eagle3lint.run.runner import run_check
from eagle3lint.settings.config import Settings
from tests.fix_helpers import copy_before
from tests.helpers import FIXTURES, release_root, run_cli, run_json

HEAD = re.compile(r"^(?:Would fix|Fixed) (\d+) of (\d+) findings? in \d+ files?(?:: (\d+) by their own fix, (\d+) through those fixes)?")
REMAIN = re.compile(r"^(\d+) findings? (?:would remain|remains?): (.*)\.$")


NEW = re.compile(r"(?:^|, )(\d+) (?:is|are) new in the fixed tree")


def _numbers(stderr: str) -> tuple[int | None, int | None, int, list[int]]:
    """(done, total) from the first line when it is there; remaining and its parts."""
    done = total = None
    remaining, parts = 0, []
    for line in stderr.splitlines():
        if head := HEAD.match(line):
            done, total = int(head[1]), int(head[2])
            if head[3] is not None:
                assert int(head[3]) + int(head[4]) == done, line
        elif remain := REMAIN.match(line):
            remaining = int(remain[1])
            parts = [int(n) for n in re.findall(r"(?:^|, )(\d+) ", remain[2])]
    return done, total, remaining, parts


def _new(stderr: str) -> int:
    """The findings of the fixed tree no original finding accounts for (they remain too)."""
    found = [int(m[1]) for line in stderr.splitlines() if REMAIN.match(line) for m in [NEW.search(line)] if m]
    return found[0] if found else 0


def _assert_adds_up(stderr: str, findings: int, new: int = 0) -> tuple[int, int]:
    done, total, remaining, parts = _numbers(stderr)
    assert sum(parts) == remaining, stderr
    assert _new(stderr) == new, stderr
    if total is not None:
        assert total == findings, stderr
        assert done is not None and done + remaining - new == findings, stderr
    else:  # nothing to fix: everything remains
        assert remaining == findings, stderr
    # The "not fixed" lines: one per finding the summary counts as not fixed.
    not_fixed = re.search(r"(\d+) not fixed \(reasons above\)", stderr)
    assert stderr.count(" not fixed: ") == (int(not_fixed[1]) if not_fixed else 0), stderr
    return done or 0, remaining


CASES = [
    ("fix_leaf_embed", False),
    ("fix_leaf_capture", False),
    ("fix_wrapper", False),
    ("fix_vllm_rename", False),
    ("fix_vllm_declare", False),  # fixes that resolve other findings, one unsafe, one without a fix
    ("fix_vllm_collect", False),  # unsafe, a suggestion only, no fix
    ("fix_vllm_collect", True),
    ("fix_vllm_declare", True),
]


@pytest.mark.parametrize(("name", "unsafe"), CASES)
def test_the_summary_adds_up_and_remaining_is_what_check_reports_after(name: str, unsafe: bool, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    flags = ["--unsafe-fixes"] if unsafe else []
    _, before = run_json("check", "--no-cache", root)
    findings = len(before["findings"])
    assert findings > 0
    dry = run_cli("fix", "--no-cache", *flags, root)
    would = _assert_adds_up(dry.stderr, findings)
    applied = run_cli("fix", "--no-cache", "--apply", *flags, root)
    assert _assert_adds_up(applied.stderr, findings) == would  # the dry run told the truth
    assert "would remain" not in applied.stderr
    _, after = run_json("check", "--no-cache", root)
    assert len(after["findings"]) == would[1]


def test_reasons_are_told_apart_on_a_fixture() -> None:
    done = run_cli("fix", "--no-cache", FIXTURES / "fix_vllm_collect" / "before")
    # One finding per cause (a decoder without the mixin does not collect either: one finding).
    assert "7 findings remain: 5 need --unsafe-fixes, 1 has only a suggestion to apply by hand" in done.stderr
    assert done.stderr.rstrip().endswith("1 has no automatic fix.")
    declare = run_cli("fix", "--no-cache", FIXTURES / "fix_vllm_declare" / "before")
    assert "Would fix 4 of 6 findings in 4 files (dry run" in declare.stderr
    assert "2 findings would remain: 1 needs --unsafe-fixes, 1 has no automatic fix." in declare.stderr


def test_files_not_written_are_counted_as_not_fixed(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    found, scope = resolve_engine((root,), None, None, None)
    result = run_check(found, scope, settings=Settings(), use_cache=False, need_index=True)
    outcome = prepare_fixes(result, scope)
    full = tally_fixes(outcome, unsafe_fixes=False)
    one_file = sorted(outcome.changes)[0]
    partial = tally_fixes(outcome, unsafe_fixes=False, unwritten=[one_file])
    lost = sum(1 for plan in outcome.accepted if one_file in plan.paths)
    assert lost >= 1
    assert partial.total == full.total == len(result.findings)
    assert partial.fixed == full.fixed - lost
    assert partial.resolved == 0  # not re-checked on disk: only written fixes are known to work
    assert partial.failed == lost
    assert partial.done + partial.remaining == partial.total
    assert full.done + full.remaining == full.total


def test_summary_wording() -> None:
    tally = FixTally(total=10, fixed=3, resolved=2, failed=1, partial=1, unsafe=1, suggestions=1, no_fix=1, new=1)
    dry = summary_lines(tally, files=2, applied=False)
    assert dry == [
        "Would fix 5 of 10 findings in 2 files: 3 by their own fix, 2 through those fixes (dry run: --apply writes them).",
        "6 findings would remain: 2 not fixed (reasons above), 1 needs --unsafe-fixes, "
        "1 has only a suggestion to apply by hand (`eagle3lint check --format full` shows it), 1 has no automatic fix, "
        "1 is new in the fixed tree (`eagle3lint check` will show it).",
    ]
    nothing = summary_lines(FixTally(total=1, no_fix=1), files=0, applied=False)
    assert nothing == ["1 finding remains: 1 has no automatic fix."]
    assert summary_lines(FixTally(total=2, fixed=2), files=1, applied=True) == ["Fixed 2 of 2 findings in 1 file."]
    unwritten = summary_lines(FixTally(total=5, fixed=1, failed=4), files=1, applied=True, unwritten=2)
    assert unwritten == [
        "Fixed 1 of 5 findings in 1 file.",
        "2 files were not written (reasons above): their fixes are not applied.",
        "4 findings remain: 4 not fixed (reasons above).",
    ]


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@pytest.mark.release
def test_the_summary_adds_up_on_sglang_0_5_23(tmp_path: Path) -> None:
    """The QA report's case: 'Would fix 107', '7 unsafe', '125 suggestions', '270 remain' did not add up."""
    root = tmp_path / "sglang-0.5.23"
    shutil.copytree(release_root("sglang==0.5.23"), root / "sglang", copy_function=_link_or_copy)
    models = root / "sglang" / "srt" / "models"
    _, before = run_json("check", "--no-cache", models)
    findings = len(before["findings"])
    dry = run_cli("fix", "--no-cache", models)
    assert dry.returncode == 1, dry.stderr
    new = _new(dry.stderr)
    assert new > 0  # the two-batch-overlap notes below
    done, remaining = _assert_adds_up(dry.stderr, findings, new)
    assert done > 0 and remaining > 0
    _, _, _, parts = _numbers(dry.stderr)
    assert len(parts) >= 3  # unsafe, suggestions, no fix: each told apart
    applied = run_cli("fix", "--no-cache", "--apply", models)
    assert _assert_adds_up(applied.stderr, findings, new) == (done, remaining)
    _, after = run_json("check", "--no-cache", models)
    # The fixed wrappers now meet their decoder's two-batch-overlap note (information, for an
    # option this run assumes off): new findings, which the dry run counted as remaining too.
    assert len(after["findings"]) == remaining
