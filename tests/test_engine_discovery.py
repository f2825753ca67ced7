"""Finding the engine from any PATH, a checkout, --engine-root, or the installed package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.source.engine import read_version
from eagle3lint.source.rulepack import load_pack
from tests.helpers import FIXTURES, SGLANG_SKELETON, make_tree, run_json, summary_of

TREE = FIXTURES / "sglang_basic"


@pytest.mark.parametrize(
    "start",
    ["sglang/srt/models/missing.py", "sglang/srt/models", "sglang", "sglang/srt/speculative"],
)
def test_walks_up_to_the_package_root(start: str) -> None:
    engine = discover_engine([TREE / start])
    assert engine.name == "sglang"
    assert engine.root == (TREE / "sglang").resolve()
    assert engine.version == "0.0.1+fixture"


def test_checkout_layout_is_found_downwards(tmp_path: Path) -> None:
    make_tree(tmp_path / "repo/python", SGLANG_SKELETON)
    engine = discover_engine([tmp_path / "repo"])
    assert engine.root == (tmp_path / "repo/python/sglang").resolve()
    assert engine.version == "9.9.9"


def test_engine_root_override_and_engine_filter(tmp_path: Path) -> None:
    engine = discover_engine([], engine_root=TREE / "sglang")
    assert engine.root == (TREE / "sglang").resolve()
    with pytest.raises(UsageError, match="no vllm package found"):
        discover_engine([], engine="vllm", engine_root=TREE / "sglang")


def test_version_unknown_when_the_tree_does_not_say(tmp_path: Path) -> None:
    files = dict(SGLANG_SKELETON)
    del files["sglang/version.py"]
    make_tree(tmp_path, files)
    engine = discover_engine([tmp_path / "sglang"])
    assert engine.version == "unknown"
    assert read_version(tmp_path / "sglang", load_pack("sglang")) == "unknown"


def test_installed_package_is_found_without_importing_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    files = dict(SGLANG_SKELETON)
    files["sglang/__init__.py"] = "raise SystemExit('imported the engine')\n"
    make_tree(site, files)
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(site)])}
    from tests.helpers import run_cli

    done = run_cli("check", "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert '"version": "9.9.9"' in done.stdout


def test_fixture_paths_report_relative_paths_under_cwd() -> None:
    _code, data = run_json("check", TREE / "sglang/srt/models/missing.py")
    assert data["findings"][0]["path"].endswith("sglang/srt/models/missing.py")


def test_no_path_reads_the_tree_the_user_stands_in_before_the_installed_one(tmp_path: Path) -> None:
    """The README's baseline step, run at a fork's root while the upstream release is installed:
    the fork's tree is read (and baselined), and every summary line says which tree it was."""
    import json
    import shutil

    from tests.helpers import read_from, run_cli

    site = make_tree(tmp_path / "site", SGLANG_SKELETON)  # "installed": sglang 9.9.9, no models
    fork = tmp_path / "fork"
    shutil.copytree(TREE / "sglang", fork / "python/sglang")
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(site)])}

    written = run_cli("check", "--no-cache", "--write-baseline", "base.json", cwd=fork, env=env)
    assert written.returncode == 0, written.stderr
    assert "of sglang 0.0.1+fixture (./python/sglang) to baseline base.json" in written.stderr
    baselined = json.loads((fork / "base.json").read_text())["findings"]
    assert any(e["path"] == "sglang/srt/models/missing.py" and e["code"] == "E3L001" for e in baselined)

    inside = fork / "python/sglang/srt/models"
    for cwd in (fork, inside):
        done = run_cli("check", "--no-cache", cwd=cwd, env=env)
        assert done.returncode == 1, done.stderr
        assert summary_of(done.stdout).startswith(f"{read_from('sglang 0.0.1+fixture', fork / 'python/sglang', cwd)}: ")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    installed = run_cli("check", "--no-cache", cwd=elsewhere, env=env)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.splitlines()[-1].startswith(f"{read_from('sglang 9.9.9', site / 'sglang', elsewhere)}: no findings")


def test_the_tree_read_is_named_briefly() -> None:
    from eagle3lint.report.paths import tree_where

    assert tree_where(TREE / "sglang", cwd=TREE) == "./sglang"
    assert tree_where(TREE / "sglang", cwd=TREE / "sglang") == "."
    assert tree_where(Path.home() / "src/fork/python/sglang", cwd=Path("/nonexistent")) == "~/src/fork/python/sglang"
    assert tree_where(Path("/opt/site/sglang"), cwd=Path("/srv")) == "/opt/site/sglang"
