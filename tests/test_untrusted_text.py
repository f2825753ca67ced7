"""Text from analysed files reaches no output raw (round 3): a ``_version.py`` whose version
string spans lines, a plugin whose architecture names and version hold escapes and newlines (the
round-3 inputs, copied into ``tests/data/robustness/round3``), a source line and a file name
holding control characters. Every format, ``-v``, ``models``, ``contract`` and the fix diffs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eagle3lint.engines import adapter_for
from eagle3lint.fix.diff import quoted_name, terminal_diff, unified_diff
from eagle3lint.report.github import plain_line
from eagle3lint.source.engine import read_version
from eagle3lint.source.plugins import is_version, read_distribution
from tests.helpers import FIXTURES, release_root, run_cli, run_on_terminal, summary_of

ROUND3 = Path(__file__).parent / "data" / "robustness" / "round3"
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
# Any control character but the line ends and tabs the formats write themselves.
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]")
# The lines the hostile inputs try to forge.
FORGED = ("sglang/srt/models/llama.py:1:1", "vllm/model_executor/models/llama.py:1:1", "::error file=x.py", "::error file=y.py", "::error file=sglang/srt/models/llama.py")
HOSTILE_NAME = "e\x1b]0;NAME\x07\tx\ny.py"
HOSTILE_COMMENT = "# \x1b]0;SOURCE\x07\x1b[2J"


def assert_no_raw_text(text: str) -> None:
    assert not RAW.search(text), repr(RAW.search(text))
    for line in text.splitlines():
        assert not line.lstrip().startswith(FORGED), line


def _version_tree(root: Path) -> Path:
    """fixtures/sglang_basic with the round-3 ``_version.py``, a model file whose name holds an
    escape, a tab and a newline, and whose class line ends in an escape sequence."""
    tree = root / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    (tree / "sglang/_version.py").write_bytes((ROUND3 / "version_inject__version.py.txt").read_bytes())
    models = tree / "sglang/srt/models"
    source = (models / "missing.py").read_text().replace("Missing", "Hostile")
    source = source.replace("class HostileForCausalLM(nn.Module):", f"class HostileForCausalLM(nn.Module):  {HOSTILE_COMMENT}")
    (models / HOSTILE_NAME).write_text(source)
    return tree


@pytest.fixture(scope="module")
def version_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _version_tree(tmp_path_factory.mktemp("version"))


@pytest.fixture(scope="module")
def plugin_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The round-3 plugin (stored as ``.txt`` so that no tool reads it as a project of ours)."""
    root = tmp_path_factory.mktemp("plugin") / "plugin_inject"
    for source in (ROUND3 / "plugin_inject").rglob("*.txt"):
        target = root / source.relative_to(ROUND3 / "plugin_inject").with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    return root


VLLM_ENGINE = FIXTURES / "vllm_modern" / "vllm"


# ---- the version at its source ------------------------------------------------------------------


def test_a_version_string_spanning_lines_is_not_a_version(tmp_path: Path) -> None:
    pack = adapter_for("sglang").pack()
    root = tmp_path / "sglang"
    root.mkdir()
    (root / "_version.py").write_bytes((ROUND3 / "version_inject__version.py.txt").read_bytes())
    assert read_version(root, pack) == "0.5.9"  # the real assignment, after the forged one
    (root / "_version.py").write_text('__version__ = "0.5.9\x1b[2J"\n__version__ = """1.0\n"""\n')
    assert read_version(root, pack) == "unknown"


@pytest.mark.parametrize(
    ("text", "ok"),
    [("0.5.15.dev105", True), ("0.11.0+cu128", True), ("1!2.0rc1", True), ("0.5.9\n::error", False),
     ("0.0.1\x1b]0;X\x07", False), ("", False), ("1.0 beta", False)],
)
def test_is_version(text: str, ok: bool) -> None:
    assert is_version(text) is ok


def test_a_plugin_distribution_with_a_forged_version_is_not_read(plugin_tree: Path) -> None:
    dist, points = read_distribution(plugin_tree / "zz_inject_plugin")
    assert dist is None  # its name is fine, its "version" holds an escape and a newline
    assert [p.name for p in points] == ["zz"]  # the entry points still count
    project = plugin_tree.parent / "good"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "good-plugin"\nversion = "1.2.3"\n')
    dist, _ = read_distribution(project / "pkg")
    assert dist is not None and (dist.name, dist.version) == ("good-plugin", "1.2.3")


# ---- every format, on the version tree ----------------------------------------------------------


@pytest.mark.parametrize("output_format", ["concise", "full", "github"])
def test_line_formats_write_analysed_text_escaped(version_tree: Path, output_format: str) -> None:
    verbose = ["-v"] if output_format != "github" else []
    done = run_cli("check", ".", "--format", output_format, *verbose, cwd=version_tree)
    assert done.returncode == 1, done.stderr
    assert_no_raw_text(done.stdout)
    assert_no_raw_text(done.stderr)
    assert "sglang 0.5.9 (./sglang): " in done.stdout  # the summary names the real version
    if output_format == "github":
        commands = [line for line in done.stdout.splitlines() if line.startswith("::")]
        assert commands and all(re.match(r"::(error|warning|notice) file=", line) for line in commands)
        assert "e\\x1b]0;NAME\\x07\\tx\\ny.py" in done.stdout  # the file property, written out
        return
    assert "sglang/srt/models/e\\x1b]0;NAME\\x07\\tx\\ny.py:4:1: E3L001" in done.stdout
    if output_format == "full":
        # The source line, its escape written out, the caret under the class keyword.
        assert "4 | class HostileForCausalLM(nn.Module):  # \\x1b]0;SOURCE\\x07\\x1b[2J" in done.stdout
        assert "  | ^ E3L001" in done.stdout


@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_documents_stay_valid_and_keep_real_names(version_tree: Path, output_format: str) -> None:
    done = run_cli("check", ".", "--format", output_format, cwd=version_tree)
    assert not RAW.search(done.stdout)  # json.dumps writes every control character as \\u00XX
    data: dict[str, Any] = json.loads(done.stdout)
    if output_format == "json":
        assert data["engine"]["version"] == "0.5.9"
        assert any(f["path"].endswith(HOSTILE_NAME) for f in data["findings"])  # the real name
        return
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(data)
    run = data["runs"][0]
    assert run["properties"]["engine"]["version"] == "0.5.9"
    texts = [r["message"]["text"] for r in run["results"]]
    texts += [loc["message"]["text"] for r in run["results"] for loc in r.get("relatedLocations", [])]
    assert texts and not any(RAW.search(t) for t in texts)


@pytest.mark.parametrize("output_format", ["table", "markdown", "json"])
def test_models_writes_analysed_text_escaped(version_tree: Path, output_format: str) -> None:
    args = ["models", ".", "--format", output_format, *(["-v"] if output_format == "table" else [])]
    done = run_cli(*args, cwd=version_tree)
    assert done.returncode == 0, done.stderr
    assert not RAW.search(done.stdout)
    if output_format == "json":
        assert json.loads(done.stdout)["engine"]["version"] == "0.5.9"
        return
    assert_no_raw_text(done.stdout)
    assert "sglang 0.5.9" in done.stdout
    if output_format == "table":
        assert "at sglang/srt/models/e\\x1b]0;NAME\\x07\\tx\\ny.py:4" in done.stdout


# ---- a plugin's names and version -----------------------------------------------------------------


@pytest.mark.parametrize("args", [("-v",), ("--format", "full"), ("--format", "github"), ("--format", "sarif")], ids=lambda a: "-".join(a))
def test_plugin_names_and_version_reach_no_output_raw(plugin_tree: Path, args: tuple[str, ...]) -> None:
    done = run_cli("check", plugin_tree, "--engine-root", VLLM_ENGINE, *args)
    assert done.returncode == 1, done.stderr
    assert_no_raw_text(done.stdout)
    assert_no_raw_text(done.stderr)
    assert "FAKE-from-version" not in done.stdout  # the forged version is no version: not shown
    if args == ("-v",):
        assert "LlamaForCausalLM, Zz\\x1b]0;PWNED\\x07\\x1b[31m\\nvllm/" in done.stdout
        assert "  plugin        zz_inject_plugin (" in done.stdout


@pytest.mark.parametrize("args", [(), ("-v",), ("--format", "markdown")], ids=["table", "table-v", "markdown"])
def test_plugin_names_in_models(plugin_tree: Path, args: tuple[str, ...]) -> None:
    done = run_cli("models", plugin_tree, "--engine-root", VLLM_ENGINE, *args)
    assert done.returncode == 0, done.stderr
    assert_no_raw_text(done.stdout)


def test_contract_text_writes_names_escaped(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    runner = tree / "sglang/srt/model_executor/model_runner.py"
    runner.rename(runner.with_name("model\x1b[31m_runner\n.py"))
    done = run_cli("contract", tree / "sglang", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_no_raw_text(done.stdout)
    assert "model\\x1b[31m_runner\\n.py:" in done.stdout


def test_messages_naming_settings_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.eagle3lint]\n"sel\\u001b[2Ject" = []\n')
    done = run_cli("check", FIXTURES / "sglang_basic", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown key 'sel\\x1b[2Ject'" in done.stderr
    assert_no_raw_text(done.stderr)


def test_github_never_writes_a_plain_line_the_runner_reads_as_a_command() -> None:
    assert plain_line("  ::error file=x.py::no") == "eagle3lint:   ::error file=x.py::no"
    assert plain_line("##[error]no") == "eagle3lint: ##[error]no"
    assert plain_line("sglang 0.5.9\n::error::x") == "sglang 0.5.9\\n::error::x"


# ---- file names in fix diffs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "quoted"),
    [
        ("plain/name.py", "plain/name.py"),
        ("with space.py", "with space.py"),
        ("a\tb.py", '"a\\tb.py"'),
        ("x\ny\r.py", '"x\\ny\\r.py"'),
        ('q"u\\o.py', '"q\\"u\\\\o.py"'),
        ("e\x1b]0;X\x07.py", '"e\\033]0;X\\a.py"'),
        ("\u00e9.py", '"\\303\\251.py"'),
        (os.fsdecode(b"\xff.py"), '"\\377.py"'),
    ],
)
def test_diff_names_are_quoted_as_git_quotes_them(name: str, quoted: str) -> None:
    assert quoted_name(name) == quoted


def test_a_diff_with_quoted_names_applies(tmp_path: Path) -> None:
    names = ["a\tb.py", "x\ny.py", "with space.py", "e\x1b[31m.py", os.fsdecode(b"\xfe.py")]
    patch = ""
    for name in names:
        with open(os.fsencode(tmp_path / name), "w") as handle:
            handle.write("a\nb\n")
        patch += unified_diff("a\nb\n", "a\nB\n", name)
    (tmp_path / "fix.patch").write_bytes(os.fsencode(patch))
    for line in patch.splitlines():
        assert not line.startswith(("---", "+++")) or not RAW.search(line.replace("\t", "")), line
    done = subprocess.run(["git", "apply", "--unsafe-paths", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in names:
        with open(os.fsencode(tmp_path / name)) as handle:
            assert handle.read() == "a\nB\n", name


def test_terminal_diff_writes_control_characters_out() -> None:
    diff = unified_diff("a\n\tb # \x1b[2J\n", "a\n\tB # \x1b[2J\n", "m.py")
    shown = terminal_diff(diff)
    assert "\x1b" not in shown and "-       b # \\x1b[2J\n" in shown  # stops of 8 from the line start, as a terminal has
    assert shown.count("\n") == diff.count("\n")


@pytest.fixture()
def wrapper_tree(tmp_path: Path) -> Path:
    """fixtures/fix_wrapper with its wrapper file renamed to hold an escape, a tab and a newline,
    and an escape sequence in a comment the fix's diff shows as context."""
    tree = tmp_path / "w"
    shutil.copytree(FIXTURES / "fix_wrapper" / "before", tree)
    models = tree / "sglang/srt/models"
    text = (models / "vl_wrapper.py").read_text().replace("# end of FixVL", "# end \x1b]0;PWNED\x07 of FixVL")
    (models / "vl_wrapper.py").unlink()
    (models / "vl\x1b[31m\tw\nrap.py").write_text(text)
    return tree


HEADER = '--- "a/sglang/srt/models/vl\\033[31m\\tw\\nrap.py"\n+++ "b/sglang/srt/models/vl\\033[31m\\tw\\nrap.py"\n'


def test_fix_dry_run_piped_is_a_diff_git_applies(wrapper_tree: Path) -> None:
    done = run_cli("fix", ".", cwd=wrapper_tree)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(HEADER)
    assert "# end \x1b]0;PWNED\x07 of FixVL" in done.stdout  # a diff to apply carries the file's text
    (wrapper_tree / "fix.patch").write_text(done.stdout)
    applied = subprocess.run(["git", "apply", "fix.patch"], cwd=wrapper_tree, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    again = run_cli("fix", ".", cwd=wrapper_tree)
    assert again.stdout == "", again.stdout  # applied: nothing left to fix


def test_fix_dry_run_on_a_terminal_writes_control_characters_out(wrapper_tree: Path) -> None:
    returncode, shown = run_on_terminal("fix", ".", cwd=wrapper_tree)
    assert returncode == 1
    assert shown.startswith(HEADER)
    assert "\x1b" not in shown and "# end \\x1b]0;PWNED\\x07 of FixVL" in shown


def test_full_shows_the_diff_escaped(wrapper_tree: Path) -> None:
    done = run_cli("check", ".", "--format", "full", cwd=wrapper_tree)
    assert_no_raw_text(done.stdout)
    assert "      --- \"a/sglang/srt/models/vl\\033[31m\\tw\\nrap.py\"" in done.stdout


# ---- the round-3 reproductions, on the releases they were found on --------------------------------


@pytest.mark.release
def test_round3_version_file_on_sglang_0_5_9(tmp_path: Path) -> None:
    package = release_root("sglang==0.5.9")
    tree = tmp_path / "sglang-0.5.9"
    shutil.copytree(package, tree / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "sglang/_version.py").write_bytes((ROUND3 / "version_inject__version.py.txt").read_bytes())
    for output_format in ("concise", "github"):
        done = run_cli("check", "sglang/srt/models/kimi_k25.py", "--format", output_format, cwd=tree)
        assert done.returncode == 1, done.stderr
        assert_no_raw_text(done.stdout)
        assert summary_of(done.stdout) == "sglang 0.5.9 (./sglang): 1 error (1 model class checked)"


@pytest.mark.release
def test_round3_plugin_on_vllm_0_9_2(plugin_tree: Path) -> None:
    package = release_root("vllm==0.9.2")
    done = run_cli("check", plugin_tree, "--engine-root", package, "-v")
    assert done.returncode == 1, done.stderr
    assert_no_raw_text(done.stdout)
    assert "Zz\\x1b]0;PWNED\\x07\\x1b[31m\\nvllm/model_executor/models/llama.py:1:1: E3L001 fake finding" in done.stdout
    models = run_cli("models", plugin_tree, "--engine-root", package, "-v")
    assert_no_raw_text(models.stdout)
