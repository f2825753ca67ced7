"""Baseline paths: what --baseline reads and --write-baseline writes is a regular file; nothing
else on disk is read forever, waited on, replaced or created."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from tests.helpers import BASIC_FINDINGS, FIXTURES
from tests.robust_helpers import TIMEOUT_S, assert_clean_exit, cli_env, run_bounded

MIB = 1024 * 1024


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "t")
    return tmp_path / "t"


def _limited(umask: int = 0o022) -> Callable[[], None]:
    """Set in the child: the umask, and an address-space cap, so that a regression reading
    /dev/zero fails with MemoryError instead of taking the shared machine's memory."""

    def setup() -> None:
        os.umask(umask)
        resource.setrlimit(resource.RLIMIT_AS, (4096 * MIB, 4096 * MIB))

    return setup


def _check(*args: str | Path, cwd: Path, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    return run_bounded("check", *args, cwd=cwd, preexec_fn=_limited(umask))


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _no_temp_files(*folders: Path) -> None:
    for folder in folders:
        leftovers = [n for n in _listing(folder) if n.endswith(".eagle3lint-tmp") or (n.startswith(".") and n != ".eagle3lint_cache")]
        assert leftovers == [], leftovers


# ---- reading ---------------------------------------------------------------------------------


def test_baseline_dev_zero_is_refused_not_read(tree: Path) -> None:
    done = _check(".", "--baseline", "/dev/zero", cwd=tree)
    assert_clean_exit(done, 2)
    assert "eagle3lint: error: baseline /dev/zero: is not a regular file (a device)" in done.stderr


@pytest.mark.parametrize("from_config", [False, True], ids=["option", "config"])
def test_baseline_fifo_is_refused_without_blocking(tree: Path, from_config: bool) -> None:
    os.mkfifo(tree / "base.json")
    if from_config:
        (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
        done = _check(".", cwd=tree)
    else:
        done = _check(".", "--baseline", "base.json", cwd=tree)
    assert_clean_exit(done, 2)
    assert "base.json: is not a regular file (a named pipe)" in done.stderr
    assert stat.S_ISFIFO(os.stat(tree / "base.json").st_mode)


def test_baseline_naming_a_folder_is_refused(tree: Path) -> None:
    done = _check(".", "--baseline", "", cwd=tree)
    assert_clean_exit(done, 2)
    assert "is not a regular file (a folder)" in done.stderr


def test_oversized_baseline_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3lint.settings import baseline

    monkeypatch.setattr(baseline, "MAX_BASELINE_BYTES", 1024)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"version": 1, "findings": [], "pad": "x" * 2048}))
    with pytest.raises(UsageError, match="larger than"):
        baseline.check_baseline_file(big)
    with pytest.raises(UsageError, match="larger than"):
        baseline.read_baseline(big)


def test_baseline_nested_past_the_json_parser_is_a_usage_error(tmp_path: Path) -> None:
    from eagle3lint.settings.baseline import read_baseline

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    with pytest.raises(UsageError, match="not a readable eagle3lint baseline"):
        read_baseline(deep)


@pytest.mark.parametrize("entry", [[1, 2], "x", {"path": [], "qualname": "q", "member": "m", "code": "c"}])
def test_malformed_entries_are_usage_errors(tmp_path: Path, entry: object) -> None:
    from eagle3lint.settings.baseline import read_baseline

    path = tmp_path / "b.json"
    path.write_text(json.dumps({"version": 1, "findings": [entry]}))
    with pytest.raises(UsageError, match="malformed entry"):
        read_baseline(path)


def test_no_baseline_switches_off_the_configured_one(tree: Path) -> None:
    assert_clean_exit(_check(".", "--write-baseline", "base.json", cwd=tree), 0)
    (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
    assert_clean_exit(_check(".", cwd=tree), 0)
    done = _check(".", "--no-baseline", "--format", "json", cwd=tree)
    assert_clean_exit(done, 1)
    report = json.loads(done.stdout)
    assert report["summary"]["baselined"] == 0 and len(report["findings"]) == BASIC_FINDINGS
    # A configured baseline that is missing does not matter once it is switched off.
    (tree / "base.json").unlink()
    assert_clean_exit(_check(".", "--no-baseline", cwd=tree), 1)
    both = _check(".", "--no-baseline", "--baseline", "x.json", cwd=tree)
    assert_clean_exit(both, 2)
    assert "--baseline and --no-baseline contradict each other" in both.stderr


# A library caller of run_check: no CLI checked the baseline first. The analysis is made to fail
# loudly, so a refusal that comes only after it (or never: a read blocked on a pipe) shows.
RUN_CHECK_DIRECTLY = """
import sys
from pathlib import Path

import eagle3lint.run.runner as runner
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.common.errors import UsageError

def analysed(*args, **kwargs):
    raise SystemExit("analysed before the baseline was refused")

runner._evaluate = analysed
engine = discover_engine([Path(sys.argv[1])])
try:
    runner.run_check(engine, [engine.root], baseline=Path(sys.argv[2]))
except UsageError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_the_stored_results_key_reads_the_baseline_as_the_run_does(tree: Path, kind: str) -> None:
    """The warm-run lookup hashes the baseline before anything else: through the same reader
    as the run (a regular file, size-capped, opened without blocking)."""
    baseline = tree / "base.json"
    if kind == "fifo":
        os.mkfifo(baseline)
    else:
        baseline.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", RUN_CHECK_DIRECTLY, str(tree), str(baseline)],
        capture_output=True, text=True, cwd=tree, env=cli_env(), timeout=TIMEOUT_S, preexec_fn=_limited(),
    )
    what = "a named pipe" if kind == "fifo" else "a folder"
    assert done.stdout.strip() == f"refused: baseline {baseline}: is not a regular file ({what})", done.stdout + done.stderr
    assert done.returncode == 0, done.stderr


# ---- writing ---------------------------------------------------------------------------------


def test_write_baseline_to_a_folder_is_refused(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    done = _check(tree, "--write-baseline", target, cwd=tmp_path)
    assert_clean_exit(done, 2)
    assert f"--write-baseline {target}: is a folder, not a file; not written" in done.stderr
    assert _listing(target) == []
    _no_temp_files(tmp_path)


def test_write_baseline_onto_a_fifo_is_refused(tree: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "base.json"
    os.mkfifo(fifo)
    done = _check(tree, "--write-baseline", fifo, cwd=tmp_path)
    assert_clean_exit(done, 2)
    assert "is not a regular file (a named pipe); not written" in done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    _no_temp_files(tmp_path)


def test_write_baseline_onto_a_device_node_is_refused(tree: Path, tmp_path: Path) -> None:
    """A character device of our own (the null device's numbers), never a node under /dev."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    done = _check(tree, "--write-baseline", node, cwd=tmp_path)
    assert_clean_exit(done, 2)
    assert "is not a regular file (a device); not written" in done.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    _no_temp_files(tmp_path)


def test_write_baseline_through_a_symlink_writes_its_target(tree: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (tmp_path / "base.json").symlink_to(store / "real.json")  # dangling at first
    for _ in range(2):  # created, then replaced: the link stays a link both times
        done = _check(tree, "--write-baseline", "base.json", cwd=tmp_path)
        assert_clean_exit(done, 0)
        assert (tmp_path / "base.json").is_symlink()
        assert os.readlink(tmp_path / "base.json") == str(store / "real.json")
        assert len(json.loads((store / "real.json").read_text())["findings"]) == BASIC_FINDINGS
    _no_temp_files(tmp_path, store)
    assert_clean_exit(_check(tree, "--baseline", "base.json", cwd=tmp_path), 0)


def test_write_baseline_through_a_symlink_to_a_fifo_is_refused(tree: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "base.json").symlink_to(tmp_path / "pipe")
    done = _check(tree, "--write-baseline", "base.json", cwd=tmp_path)
    assert_clean_exit(done, 2)
    assert "the symlink points to" in done.stderr
    assert (tmp_path / "base.json").is_symlink() and stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)


def test_write_baseline_does_not_create_missing_folders(tree: Path, tmp_path: Path) -> None:
    done = _check(tree, "--write-baseline", tmp_path / "no" / "such" / "base.json", cwd=tmp_path)
    assert_clean_exit(done, 2)
    assert "does not exist; create it first" in done.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_baseline_file_follows_the_umask(tree: Path, tmp_path: Path, umask: int, mode: int) -> None:
    done = _check(tree, "--write-baseline", "base.json", cwd=tmp_path, umask=umask)
    assert_clean_exit(done, 0)
    assert stat.S_IMODE(os.stat(tmp_path / "base.json").st_mode) == mode


def test_a_replaced_baseline_keeps_its_mode(tree: Path, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text("{}")
    base.chmod(0o640)
    assert_clean_exit(_check(tree, "--write-baseline", base, cwd=tmp_path), 0)
    assert stat.S_IMODE(os.stat(base).st_mode) == 0o640
    assert json.loads(base.read_text())["version"] == 1


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError(28, "No space left on device")], ids=["interrupt", "disk-full"])
def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException) -> None:
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.settings import baseline

    engine = discover_engine([FIXTURES / "sglang_basic"])

    def failing_replace(src: str, dst: str) -> None:
        raise failure

    monkeypatch.setattr(baseline.os, "replace", failing_replace)
    expected: type[BaseException] = KeyboardInterrupt if failure is KeyboardInterrupt else UsageError
    with pytest.raises(expected):
        baseline.write_baseline(tmp_path / "base.json", [([], engine)])
    assert _listing(tmp_path) == []
