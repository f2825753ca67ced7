"""Two engine trees side by side (a site-packages folder holding ``sglang/`` and ``vllm/``, a
repository vendoring both): each engine is checked against its own contract, one report per
engine in every format, and an engine package is never read as a plugin of the other."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES, REPO, read_from, release_root, run_cli, summary_of

SGLANG = "sglang 0.0.1+fixture"
VLLM = "vllm 0.99.0+fixture"
SGLANG_FILE = "sglang/srt/models/missing.py"  # E3L001 on MissingForCausalLM
VLLM_FILE = "vllm/model_executor/models/signature.py"  # E3L005 on SignatureForCausalLM
ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # no engine installed: only the trees named are read


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages folder holding both fixture engines (ours, synthetic)."""
    root = tmp_path_factory.mktemp("two-engines") / "site"
    shutil.copytree(FIXTURES / "sglang_basic/sglang", root / "sglang")
    shutil.copytree(FIXTURES / "vllm_modern/vllm", root / "vllm")
    return root


def check(*args: str | Path, cwd: Path | None = None) -> Any:
    return run_cli("check", "--no-cache", *args, cwd=cwd, env=ENV)


def alone(tree: Path) -> dict[str, Any]:
    """The JSON report of one engine tree checked by itself: what each engine's part of a
    two-engine run must be."""
    done = check(tree, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def keys(report: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    return sorted((f["code"], f["class"], Path(f["path"]).name, f["line"]) for f in report["findings"])


def summaries(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith((SGLANG, VLLM))]


@pytest.mark.parametrize("how", ["holding both", "each named"])
def test_each_engine_is_checked_against_its_own_contract(site: Path, how: str) -> None:
    paths = [site] if how == "holding both" else [site / "sglang", site / "vllm"]
    done = check(*paths, "--format", "json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"version", "engines"} and data["version"] == 2
    sglang, vllm = data["engines"]
    assert (sglang["engine"]["name"], vllm["engine"]["name"]) == ("sglang", "vllm")
    # Neither engine is the other's plugin, and each report is the one the engine gets alone.
    assert "plugins" not in sglang["engine"] and "plugins" not in vllm["engine"]
    assert keys(sglang) == keys(alone(site / "sglang")) and keys(sglang)
    assert keys(vllm) == keys(alone(site / "vllm")) and keys(vllm)
    assert all("/sglang/" in f["path"] for f in sglang["findings"])
    assert all("/vllm/" in f["path"] for f in vllm["findings"])
    # vLLM classes get vLLM's verdicts: no SGLang member is asked of them.
    assert not [f for f in vllm["findings"] if "set_eagle3_layers_to_capture" in f["message"]]


def test_one_engine_report_keeps_its_shape(site: Path) -> None:
    data = alone(site / "vllm")
    assert "engines" not in data and data["engine"]["name"] == "vllm" and data["version"] == 2


def test_text_formats_give_one_report_and_summary_line_per_engine(site: Path, tmp_path: Path) -> None:
    concise = check(site, cwd=tmp_path)
    assert concise.returncode == 1, concise.stderr
    # (Each summary may be followed by its tree's fix hint: `[*] N fixable with ...`.)
    lines = [line for line in concise.stdout.splitlines() if "fixable with" not in line]
    assert summaries(concise.stdout) == [
        line for line in lines if line.startswith((read_from(SGLANG, site / "sglang", tmp_path), read_from(VLLM, site / "vllm", tmp_path)))
    ]
    first, second = (lines.index(s) for s in summaries(concise.stdout))
    # Each engine's findings come before its own summary line.
    assert lines[:first] and all(line.startswith("sglang/") for line in lines[:first])
    assert lines[first + 1 : second] and all(line.startswith("vllm/") for line in lines[first + 1 : second])
    assert second == len(lines) - 1
    for fmt in ("full", "github"):
        done = check(site, "--format", fmt, cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert [s.split(":")[0] for s in summaries(done.stdout)] == [
            read_from(SGLANG, site / "sglang", tmp_path), read_from(VLLM, site / "vllm", tmp_path)
        ]
        assert summary_of(done.stdout).startswith(VLLM)


def test_sarif_holds_one_run_per_engine(site: Path) -> None:
    done = check(site, "--format", "sarif")
    assert done.returncode == 1, done.stderr
    log = json.loads(done.stdout)
    assert [run["properties"]["engine"]["name"] for run in log["runs"]] == ["sglang", "vllm"]
    codes = [{r["ruleId"] for r in run["results"]} for run in log["runs"]]
    assert "E3L001" in codes[0] and "E3L005" in codes[1] and not codes[1] & {"E3L001", "E3L004"}


@pytest.mark.parametrize("order", [(SGLANG_FILE, VLLM_FILE), (VLLM_FILE, SGLANG_FILE)])
def test_files_one_by_one_keep_each_engines_findings(site: Path, order: tuple[str, str]) -> None:
    """What pre-commit passes: a commit touching a model of each engine."""
    done = check(*order, cwd=site)
    assert done.returncode == 1, done.stderr
    assert f"{SGLANG_FILE}:4:1: E3L001 error: `MissingForCausalLM`" in done.stdout
    assert f"{VLLM_FILE}:15:5: E3L005 error: `SignatureForCausalLM" in done.stdout
    assert [s.split(" (")[0] for s in summaries(done.stdout)] == [
        SGLANG if order[0] == SGLANG_FILE else VLLM, VLLM if order[0] == SGLANG_FILE else SGLANG
    ]
    assert all("(1 model class checked)" in s for s in summaries(done.stdout))


def test_commands_that_read_one_engine_refuse_two(site: Path) -> None:
    for command in (["models"], ["fix"], ["contract"]):
        done = run_cli(*command, site, env=ENV)
        assert done.returncode == 2 and done.stdout == ""
        assert re.search(r"two engine trees: sglang \(.*site/sglang\) and vllm \(.*site/vllm\)", done.stderr), done.stderr
    # One of them picked by --engine is read alone.
    picked = run_cli("models", site, "--engine", "vllm", "--format", "json", env=ENV)
    assert picked.returncode == 0 and json.loads(picked.stdout)["engine"]["name"] == "vllm"


def test_an_engine_package_is_never_a_plugin_of_the_other(site: Path) -> None:
    for args in (
        ["--engine", "vllm", site / "sglang", site / "vllm"],
        ["--engine-root", site / "vllm", site / "sglang"],
    ):
        done = check(*args)
        assert done.returncode == 2 and done.stdout == "", done.stdout
        assert "a sglang tree, not a plugin of the vllm tree being checked" in done.stderr, done.stderr


def test_an_engine_root_holding_both_names_both(site: Path) -> None:
    done = check("--engine-root", site, site)
    assert done.returncode == 2 and done.stdout == ""
    assert re.search(r"holds two engine packages, sglang \(.*site/sglang\) and vllm \(.*site/vllm\)", done.stderr), done.stderr
    picked = check("--engine-root", site, "--engine", "vllm", site, "--format", "json")
    assert picked.returncode == 1 and json.loads(picked.stdout)["engine"]["name"] == "vllm"


def test_a_path_outside_both_trees_is_a_usage_error(site: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "my_plugin"
    plugin.mkdir()
    (plugin / "__init__.py").write_text("")
    done = check(site / "sglang", site / "vllm", plugin)
    assert done.returncode == 2
    assert "my_plugin: outside the engine trees being checked (sglang (" in done.stderr
    missing = check(site / "sglang", site / "vllm", tmp_path / "nowhere")
    assert missing.returncode == 2 and "nowhere: no such file or folder" in missing.stderr


def test_a_repository_vendoring_both_is_baselined_at_its_root(site: Path, tmp_path: Path) -> None:
    """The README's baseline step, at the root of a repository that vendors both engines."""
    repo = tmp_path / "repo"
    shutil.copytree(site / "sglang", repo / "python/sglang")
    shutil.copytree(site / "vllm", repo / "src/vllm")
    written = check("--write-baseline", "base.json", cwd=repo)
    assert written.returncode == 0, written.stderr
    assert f"of {SGLANG} (./python/sglang) and {VLLM} (./src/vllm) to baseline base.json" in written.stderr
    data = json.loads((repo / "base.json").read_text())
    assert data["engines"] == ["sglang", "vllm"]
    prefixes = {entry["path"].split("/")[0] for entry in data["findings"]}
    assert prefixes == {"sglang", "vllm"}
    again = check("--baseline", "base.json", cwd=repo)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [s.split(": ")[1].split(" (")[0] for s in summaries(again.stdout)] == ["no findings", "no findings"]
    assert all(" in the baseline; " in s for s in summaries(again.stdout))


@pytest.mark.release
def test_real_releases_side_by_side(tmp_path: Path) -> None:
    """Copies of SGLang 0.5.9 and vLLM 0.18.0 in one folder: each report is the one its
    release gets alone, with its own rules (SGLang's E3L004 on Kimi-K2.5's wrapper; none of
    SGLang's members asked of a vLLM class)."""
    site = tmp_path / "site"
    for spec in ("sglang==0.5.9", "vllm==0.18.0"):
        source = release_root(spec)
        shutil.copytree(source, site / source.name, copy_function=_link_or_copy)
    done = check(site, "--format", "json")
    assert done.returncode == 1, done.stderr[-2000:]
    sglang, vllm = json.loads(done.stdout)["engines"]
    assert (sglang["engine"]["version"], vllm["engine"]["version"]) == ("0.5.9", "0.18.0")
    assert keys(sglang) == keys(alone(site / "sglang"))
    assert keys(vllm) == keys(alone(site / "vllm"))
    assert any(f["code"] == "E3L004" and f["class"] == "KimiK25ForConditionalGeneration" for f in sglang["findings"])
    assert not [f for f in vllm["findings"] if "set_eagle3_layers_to_capture" in f["message"]]


def _link_or_copy(source: str, target: str) -> None:
    """Hard links where the cache and the test's folder share a file system: the release's
    files are only read."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def test_both_installed_and_no_path_checks_each(site: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)])}
    done = run_cli("check", "--no-cache", "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr
    assert [e["engine"]["root"] for e in json.loads(done.stdout)["engines"]] == [str(site / "sglang"), str(site / "vllm")]
    one = run_cli("check", "--no-cache", "--engine", "vllm", cwd=tmp_path, env=env)
    assert one.returncode == 1 and [s.split(" (")[0] for s in summaries(one.stdout)] == [VLLM]
