"""Issue 27 ("first hour, round 4"): what a new user still tripped over, one test (or a few) per item."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fix_helpers import copy_before, tree_bytes
from tests.helpers import FIXTURES, run_cli

FINDING = re.compile(r"^\S+:\d+:\d+: (E3L\d{3})( \[\*\])? (error|warning|info): ")


# Item 8: a blocked commit gives a fix hint (ruff's [*]); check --fix and check --diff work.


def test_check_marks_fixable_findings_and_ends_with_the_fix_hint(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    done = run_cli("check", "--no-cache", root)
    assert done.returncode == 1, done.stderr
    lines = [FINDING.match(line) for line in done.stdout.splitlines()]
    findings = [m for m in lines if m]
    marked = [m for m in findings if m[2]]
    # `fix` would fix 4 of the 6 (one more needs --unsafe-fixes, one has no fix).
    assert len(findings) == 6 and len(marked) == 4, done.stdout
    assert done.stdout.splitlines()[-1] == "[*] 4 fixable with `eagle3lint fix --apply` (1 more with `--unsafe-fixes`)."
    dry = run_cli("fix", "--no-cache", root)
    assert "Would fix 4 of 6 findings" in dry.stderr
    # With --unsafe-fixes the unsafe one is marked too; --format full marks as concise does.
    unsafe = run_cli("check", "--no-cache", "--unsafe-fixes", "--format", "full", root)
    assert sum(1 for line in unsafe.stdout.splitlines() if (m := FINDING.match(line)) and m[2]) == 5
    assert unsafe.stdout.splitlines()[-1] == "[*] 5 fixable with `eagle3lint fix --apply`."
    # Quiet: the marked findings alone.
    quiet = run_cli("check", "--no-cache", "-q", root)
    assert "fixable" not in quiet.stdout and " [*] " in quiet.stdout


def test_findings_without_a_fix_give_no_hint() -> None:
    done = run_cli("check", "--no-cache", FIXTURES / "vllm_legacy")
    assert done.returncode == 1 and FINDING.match(done.stdout)
    assert "fixable" not in done.stdout and "[*]" not in done.stdout


def test_check_diff_shows_the_fixes_and_writes_nothing(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    before = tree_bytes(root)
    diff = run_cli("check", "--no-cache", "--diff", root)
    dry = run_cli("fix", "--no-cache", root)
    assert diff.stdout == dry.stdout and diff.stdout.startswith("--- a/")
    assert diff.returncode == dry.returncode == 1
    assert "Would fix 4 of 6 findings" in diff.stderr
    assert tree_bytes(root) == before


def test_check_fix_writes_the_fixes_then_reports_what_remains(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    done = run_cli("check", "--no-cache", "--fix", root)
    assert done.returncode == 1, done.stderr
    assert "Fixed 4 of 6 findings in 4 files." in done.stderr
    findings = [m for line in done.stdout.splitlines() if (m := FINDING.match(line))]
    assert len(findings) == 2 and not any(m[2] for m in findings)
    assert done.stdout.splitlines()[-1] == "1 fixable with `eagle3lint fix --apply --unsafe-fixes`."
    again = run_cli("check", "--no-cache", root)
    assert again.stdout == done.stdout


def test_check_fix_and_diff_refuse_what_does_not_go_with_them(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    before = tree_bytes(root)
    for flags in (["--fix", "--diff"], ["--fix", "--statistics"], ["--diff", "--write-baseline", str(tmp_path / "b.json")], ["--fix", "--extend-select", "E3L1"]):
        done = run_cli("check", "--no-cache", *flags, root)
        assert done.returncode == 2 and "eagle3lint: error:" in done.stderr, (flags, done.stderr)
    assert tree_bytes(root) == before
