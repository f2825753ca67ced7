"""Summaries are keyed by content, not by tree: a file unchanged between two trees (two releases,
a release and its fork, a tree copied elsewhere) is summarised once, and reported where it lies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagle3lint.common.findings import FileError
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run.cache import Cache
from eagle3lint.source.sources import ParseRequest, parse_module
from eagle3lint.source.summary_types import ModuleSummary
from tests.helpers import FIXTURES, run_json

MODELS = "sglang/srt/models"


def _shared(cache: Path) -> dict[str, int]:
    """The shared namespace's summaries, with their modification times: the folder whose entries
    are all summaries and the tables of each module's latest one (a tree's namespace holds its
    contract and results)."""
    from eagle3lint.run import cache as C

    found: dict[str, int] = {}
    for folder in cache.iterdir():
        entries = sorted(folder.glob("*.pickle")) if folder.is_dir() else []
        names = {p: C._loads(p.read_bytes())["name"] for p in entries}
        if names and all(n.startswith(("summary:", "latest-summaries:")) for n in names.values()):
            found.update({p.name: p.stat().st_mtime_ns for p, n in names.items() if n.startswith("summary:")})
    return found


def test_a_tree_copied_elsewhere_with_a_model_file_moved_is_summarised_once(tmp_path: Path) -> None:
    first = tmp_path / "a"
    shutil.copytree(FIXTURES / "sglang_basic", first)
    (tmp_path / "pyproject.toml").write_text("[tool.eagle3lint]\n")  # the cache lies beside it
    code, before = run_json("check", "a", cwd=tmp_path)
    assert code == 1
    stored = _shared(tmp_path / ".eagle3lint_cache")
    assert len(stored) > 10
    # The second tree: the same files, and one model moved to another folder (its module name
    # changes; it has no relative import, so its summary does not).
    second = tmp_path / "b"
    shutil.copytree(first, second)
    (second / MODELS / "moved").mkdir()
    (second / MODELS / "moved/__init__.py").write_text("")
    (second / MODELS / "plain.py").rename(second / MODELS / "moved/plain.py")
    code, after = run_json("check", "b", cwd=tmp_path)
    assert code == 1
    # Nothing was summarised again (the new empty __init__.py aside) and nothing rewritten.
    now = _shared(tmp_path / ".eagle3lint_cache")
    assert {k: v for k, v in now.items() if k in stored} == stored and len(now) - len(stored) <= 1
    # The same findings, each where the second tree has it.
    def keys(data: dict) -> list[tuple[str, str, str, str]]:
        return sorted((f["code"], f["class"], f["method"], Path(f["path"]).name) for f in data["findings"])

    assert keys(after) == keys(before)
    assert all(Path(f["path"]).is_relative_to(second) for f in after["findings"])
    (plain,) = [f for f in after["findings"] if f["class"] == "PlainForCausalLM"]
    assert (plain["code"], plain["path"]) == ("E3L020", str(second / MODELS / "moved/plain.py"))


def _requests(engine_root: Path, names: list[str]) -> list[ParseRequest]:
    return [ParseRequest(str(engine_root / "srt/models" / n), f"sglang.srt.models.{n[:-3]}", False, frozenset({"forward"})) for n in names]


def test_the_cache_parses_a_file_unchanged_between_trees_once(tmp_path: Path) -> None:
    for name in ("a", "b"):
        shutil.copytree(FIXTURES / "sglang_basic", tmp_path / name)
    files = ["plain.py", "wrapper_attr.py", "llama_like.py"]
    parsed: list[str] = []

    def fallback(requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
        parsed.extend(r.path for r in requests)
        return [parse_module(r) for r in requests]

    folder = tmp_path / "cache"
    results = {}
    for name in ("a", "b"):
        engine = discover_engine([tmp_path / name / "sglang"])
        cache = Cache(folder, engine, "settings of " + name)  # another tree and other settings
        results[name] = cache.provider(fallback)(_requests(engine.root, files))
        assert (cache.hits, cache.misses) == ((0, 3) if name == "a" else (3, 0))
    assert parsed == [str(tmp_path / "a/sglang/srt/models" / n) for n in files]
    for summary in results["b"]:
        assert isinstance(summary, ModuleSummary) and summary.path.startswith(str(tmp_path / "b"))
    # Another walk is another summary.
    engine = discover_engine([tmp_path / "b" / "sglang"])
    other = Cache(folder, engine, "")
    wider = [ParseRequest(r.path, r.module, r.is_package, frozenset({"forward", "load_weights"})) for r in _requests(engine.root, files[:1])]
    other.provider(fallback)(wider)
    assert other.misses == 1


def test_a_relative_import_keys_the_summary_by_its_module(tmp_path: Path) -> None:
    engine = discover_engine([FIXTURES / "sglang_basic" / "sglang"])
    cache = Cache(tmp_path / "cache", engine, "")
    plain = b"from sglang.srt.models.llama_like import Base\n"
    relative = b"from .llama_like import Base\n"
    here = ParseRequest("/x/a.py", "sglang.srt.models.a", False, frozenset())
    there = ParseRequest("/y/b.py", "sglang.srt.other.b", False, frozenset())
    assert cache.summary_key(here, "d", plain) == cache.summary_key(there, "d", plain)
    assert cache.summary_key(here, "d", relative) != cache.summary_key(there, "d", relative)
    # Nor is a package's __init__ the same as a module of the same name.
    package = ParseRequest("/x/a/__init__.py", "sglang.srt.models.a", True, frozenset())
    assert cache.summary_key(here, "d", relative) != cache.summary_key(package, "d", relative)


def test_the_shared_folder_is_listed_only_when_this_runs_entries_may_fill_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eagle3lint.run import cache as C
    from eagle3lint.run import cache_prune

    listings: list[int] = []

    def counted(namespace: Path, limit: int = 4) -> int:
        room = cache_prune.room_after_pruning(namespace, limit)
        listings.append(len(list(namespace.glob("*.pickle"))))
        return room

    monkeypatch.setattr(C, "room_after_pruning", counted)
    engine = discover_engine([FIXTURES / "sglang_basic" / "sglang"])
    cache = Cache(tmp_path / "cache", engine, "")
    provide = cache.provider(lambda requests: [parse_module(r) for r in requests])
    files = sorted(p.name for p in (engine.root / "srt/models").glob("*.py"))[:7]
    assert len(files) == 7
    for name in files:  # one module per batch, as a cold run loads them
        provide(_requests(engine.root, [name]))
    # A limit of 4: listed at the first store (a summary and the table of each module's latest
    # summary: room for 2), not again until the fourth summary passed the limit (pruned to nine
    # tenths: 3 left, room for 1), and again at the sixth (5 entries, pruned to 3): three
    # listings for seven batches, not seven.
    assert listings == [2, 3, 3]
