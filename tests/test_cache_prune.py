"""Old cache namespaces are removed when a run opens the cache; nothing else ever is."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run import cache_prune
from eagle3lint.run.cache import _CACHEDIR_TAG, Cache
from eagle3lint.run.cache_prune import (
    MAX_NAMESPACES,
    STALE_AFTER_S,
    open_namespace,
    prune_namespaces,
)
from tests.helpers import FIXTURES, run_cli

NOW = 1_800_000_000.0
DAY = 24 * 3600.0
OWN = "0" * 20


def _cache(tmp_path: Path) -> Path:
    folder = tmp_path / ".eagle3lint_cache"
    folder.mkdir()
    (folder / ".gitignore").write_text("# Created by eagle3lint automatically.\n*\n")
    (folder / "CACHEDIR.TAG").write_text(_CACHEDIR_TAG)
    return folder


def _namespace(folder: Path, number: int, age: float, entries: tuple[str, ...] = ("a" * 32 + ".pickle",)) -> Path:
    path = folder / f"{number:020x}"
    path.mkdir()
    for name in entries:
        (path / name).write_bytes(b"entry")
    os.utime(path, (NOW - age, NOW - age))
    return path


def test_stale_namespaces_go_recent_ones_stay(tmp_path: Path) -> None:
    folder = _cache(tmp_path)
    stale = _namespace(folder, 1, STALE_AFTER_S + DAY, ("b" * 32 + ".pickle", ".tmp-k2j_x9"))
    recent = _namespace(folder, 2, DAY)
    assert prune_namespaces(folder, OWN, NOW) == [stale.name]
    assert not stale.exists()
    assert recent.is_dir() and len(list(recent.iterdir())) == 1
    assert (folder / ".gitignore").is_file() and (folder / "CACHEDIR.TAG").is_file()


def test_at_most_max_namespaces_least_recently_used_go_first(tmp_path: Path) -> None:
    folder = _cache(tmp_path)
    own = folder / OWN
    own.mkdir()
    made = [_namespace(folder, n, n * 60.0) for n in range(1, MAX_NAMESPACES + 3)]  # all recent
    removed = prune_namespaces(folder, OWN, NOW)
    # Own namespace plus the MAX_NAMESPACES - 1 most recently used of the others remain.
    assert sorted(removed) == sorted(p.name for p in made[MAX_NAMESPACES - 1 :])
    assert all(p.is_dir() for p in made[: MAX_NAMESPACES - 1]) and own.is_dir()
    left = [p for p in folder.iterdir() if p.is_dir()]
    assert len(left) == MAX_NAMESPACES


def test_foreign_files_and_folders_are_left_alone(tmp_path: Path) -> None:
    folder = _cache(tmp_path)
    old = STALE_AFTER_S * 3
    with_foreign_file = _namespace(folder, 1, old, ("c" * 32 + ".pickle", "notes.txt"))
    with_subfolder = _namespace(folder, 2, old)
    (with_subfolder / ("d" * 32 + ".pickle")).mkdir()
    other_name = folder / "results-from-ci"
    other_name.mkdir()
    os.utime(other_name, (NOW - old, NOW - old))
    file_named_like_one = folder / f"{3:020x}"
    file_named_like_one.write_text("not a folder")
    elsewhere = _namespace(tmp_path, 4, old)
    link = folder / f"{5:020x}"
    link.symlink_to(elsewhere, target_is_directory=True)
    assert prune_namespaces(folder, OWN, NOW) == []
    for path in (with_foreign_file, with_subfolder, other_name, file_named_like_one, link, elsewhere):
        assert path.exists()
    assert (with_foreign_file / ("c" * 32 + ".pickle")).exists()  # nothing removed piecemeal either


def test_a_folder_without_eagle3lints_tag_is_never_pruned(tmp_path: Path) -> None:
    folder = _cache(tmp_path)
    stale = _namespace(folder, 1, STALE_AFTER_S * 2)
    (folder / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# another tool's\n")
    assert prune_namespaces(folder, OWN, NOW) == []
    (folder / "CACHEDIR.TAG").unlink()
    assert prune_namespaces(folder, OWN, NOW) == []
    assert stale.is_dir()


def test_opening_marks_the_namespace_used(tmp_path: Path) -> None:
    folder = _cache(tmp_path)
    own = _namespace(folder, 0, STALE_AFTER_S * 2)
    before = time.time()
    open_namespace(folder, own.name)
    assert own.stat().st_mtime >= before - 1
    # Used just now, it survives another run's pruning.
    assert prune_namespaces(folder, "f" * 20, time.time()) == []


def test_a_read_only_cache_does_not_fail_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _cache(tmp_path)
    stale = _namespace(folder, 1, STALE_AFTER_S * 2)

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(30, "Read-only file system")

    for name in ("utime", "unlink", "rmdir"):
        monkeypatch.setattr(cache_prune.os, name, refuse)
    assert open_namespace(folder, OWN, NOW) == []
    engine = discover_engine([FIXTURES / "sglang_basic" / "sglang"])
    opened = Cache(folder, engine, "digest")  # opening prunes; a refusal is not an error
    assert opened.pruned == []
    assert stale.is_dir()


def test_a_run_prunes_and_keeps_its_own(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    (tree / "pyproject.toml").write_text("[tool.eagle3lint]\n")  # the cache lies beside it
    assert run_cli("check", ".", cwd=tree).returncode == 1
    folder = tree / ".eagle3lint_cache"
    # The tree's namespace and the summaries every tree shares.
    own, shared = [p for p in folder.iterdir() if p.is_dir()]
    stale = folder / ("e" * 20)
    stale.mkdir()
    (stale / ("e" * 32 + ".pickle")).write_bytes(b"old")
    old = time.time() - STALE_AFTER_S - DAY
    os.utime(stale, (old, old))
    os.utime(own, (old, old))
    os.utime(shared, (old, old))
    assert run_cli("check", ".", cwd=tree).returncode == 1
    assert not stale.exists()
    assert all(p.is_dir() and p.stat().st_mtime > old + DAY for p in (own, shared))
    assert sorted(p.name for p in folder.iterdir() if not p.is_dir()) == [".gitignore", "CACHEDIR.TAG"]


def test_the_shared_summaries_keep_the_most_recently_used_entries(tmp_path: Path) -> None:
    folder = _cache(tmp_path)
    shared = _namespace(folder, 7, 0.0, tuple(f"{n:032x}.pickle" for n in range(30)))
    for n in range(30):
        os.utime(shared / f"{n:032x}.pickle", (NOW - 1000 + n, NOW - 1000 + n))
    (shared / ".tmp-abc").write_bytes(b"a write under way")
    (shared / ".tmp-old").write_bytes(b"a write its killed process left")
    os.utime(shared / ".tmp-old", (time.time() - 2 * cache_prune.ABANDONED_WRITE_S,) * 2)
    assert cache_prune.prune_entries(shared, limit=40) == 0
    assert not (shared / ".tmp-old").exists()
    # Over the limit: the oldest go, down to nine tenths of it; a write under way is left alone.
    assert cache_prune.prune_entries(shared, limit=20) == 12
    left = sorted(p.name for p in shared.iterdir())
    assert left == [".tmp-abc", *(f"{n:032x}.pickle" for n in range(12, 30))]
    # Not a cache eagle3lint tagged: nothing is removed.
    (folder / "CACHEDIR.TAG").unlink()
    assert cache_prune.prune_entries(shared, limit=1) == 0
