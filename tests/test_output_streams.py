"""Output that cannot go out as written: file names that are not UTF-8, a narrow or strict
encoding, standard output closed or full, a reader that goes away. Each run ends with a
documented exit code and a message, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import BASIC_FINDINGS, FIXTURES
from tests.robust_helpers import TIMEOUT_S, cli_env

SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())
FORMATS = ["concise", "full", "github", "json", "sarif"]
ODD_NAME = b"\xff\xfe.py"  # not UTF-8: Python holds it as "\udcff\udcfe.py"


def _run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None, **popen: object) -> subprocess.CompletedProcess[bytes]:
    """The CLI with its output as bytes (a file name's raw bytes must be visible)."""
    return subprocess.run(  # type: ignore[call-overload]
        [sys.executable, "-m", "eagle3lint", *map(str, args)],
        capture_output=True, cwd=cwd, env=env or cli_env(), timeout=TIMEOUT_S, **popen,
    )


def _quiet(stderr: bytes) -> None:
    for marker in (b"Traceback", b"internal error", b"Exception ignored", b"Error:"):
        assert marker not in stderr, stderr.decode("utf-8", "replace")


@pytest.fixture()
def odd_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    models = os.fsencode(tree / "sglang/srt/models")
    source = (tree / "sglang/srt/models/missing.py").read_bytes().replace(b"Missing", b"OddName")
    with open(os.path.join(models, ODD_NAME), "wb") as handle:
        handle.write(source)
    return tree


def test_a_file_name_with_a_newline_stays_one_line_in_line_formats(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    source = (tree / "sglang/srt/models/missing.py").read_bytes().replace(b"Missing", b"NewlineName")
    (tree / "sglang/srt/models/odd\nname.py").write_bytes(source)
    for output_format in ("concise", "full"):
        done = _run("check", ".", "--format", output_format, cwd=tree)
        _quiet(done.stderr)
        lines = [line for line in done.stdout.splitlines() if b"NewlineName" in line and b"E3L" in line]
        assert lines and all(line.startswith(b"sglang/srt/models/odd\\nname.py:") for line in lines), done.stdout
    data = json.loads(_run("check", ".", "--format", "json", cwd=tree).stdout)
    assert any(f["path"].endswith("odd\nname.py") for f in data["findings"])  # JSON keeps the real name


# ---- names that are not UTF-8 ---------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", ""], ids=["utf8-strict", "ascii-strict", "locale"])
@pytest.mark.parametrize("output_format", FORMATS)
def test_a_file_name_that_is_not_utf8_in_every_format(odd_tree: Path, output_format: str, encoding: str) -> None:
    env = cli_env(**({"PYTHONIOENCODING": encoding} if encoding else {}))
    for _ in range(2):  # cold, then answered from the cache
        done = _run("check", ".", "--format", output_format, cwd=odd_tree, env=env)
        _quiet(done.stderr)
        assert done.returncode == 1, done.stderr
    out = done.stdout
    if output_format in ("concise", "full"):
        assert b"sglang/srt/models/" + ODD_NAME + b":" in out
    elif output_format == "github":
        assert b"file=sglang/srt/models/" + ODD_NAME + b"," in out
    elif output_format == "json":
        data = json.loads(out)
        paths = {f["path"] for f in data["findings"] if f["class"] == "OddNameForCausalLM"}
        assert paths and all(os.path.exists(os.fsencode(p)) for p in paths)  # round trip to the name
        assert len(data["findings"]) == BASIC_FINDINGS + 1  # one finding for the class: both members it lacks
    else:
        log = json.loads(out.decode("utf-8"))  # strict: SARIF is valid UTF-8
        jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(log)
        uris = {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]
            if r["properties"]["class"] == "OddNameForCausalLM"
        }
        assert uris == {"sglang/srt/models/%FF%FE.py"}
        names = {r["properties"]["qualname"] for r in log["runs"][0]["results"]}
        assert "sglang.srt.models.\\xff\\xfe.OddNameForCausalLM" in names


def test_fix_dry_run_on_a_file_name_that_is_not_utf8(odd_tree: Path) -> None:
    done = _run("fix", ".", cwd=odd_tree, env=cli_env(PYTHONIOENCODING="utf-8"))
    _quiet(done.stderr)
    assert done.returncode in (0, 1)


def test_sarif_artifact_uri_percent_encodes_the_bytes(tmp_path: Path) -> None:
    from eagle3lint.report.sarif import Locator, valid_text

    locator = Locator(tmp_path)
    name = os.fsdecode(b"caf\xc3\xa9-\xff.py")  # an e-acute in UTF-8, then a stray byte
    assert locator.artifact(str(tmp_path / name)) == {"uri": "caf%C3%A9-%FF.py", "uriBaseId": "%SRCROOT%"}
    assert valid_text({"k": [name, 1, "\ud800"]}) == {"k": ["caf\u00e9-\\xff.py", 1, "\ufffd"]}


# ---- standard output closed, full, or abandoned by its reader ----------------------------------


def _close_stdout() -> None:
    os.close(1)


def _close_stdout_and_stderr() -> None:
    os.close(1)
    os.close(2)


CLOSED_STDOUT_COMMANDS = [
    ["check", "."],
    ["check", ".", "--format", "json"],
    ["check", ".", "--format", "sarif"],
    ["show-config"],
    ["rules"],
    ["contract", "."],
    ["fix", "."],
]


@pytest.mark.parametrize("args", CLOSED_STDOUT_COMMANDS, ids=lambda a: "-".join(a).replace(".", "tree"))
def test_closed_stdout_is_an_error_with_a_message(tmp_path: Path, args: list[str]) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    done = _run(*args, cwd=tree, preexec_fn=_close_stdout)
    _quiet(done.stderr)
    assert done.returncode == 2, done.stderr
    assert b"eagle3lint: error: standard output is closed; nothing could be written to it" in done.stderr


def test_closed_stdout_and_stderr_still_exit_2(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    done = _run("check", ".", cwd=tree, preexec_fn=_close_stdout_and_stderr)
    assert done.returncode == 2


def test_closed_stdout_does_not_matter_to_a_command_that_writes_none(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    done = _run("check", ".", "--write-baseline", tmp_path / "base.json", cwd=tree, preexec_fn=_close_stdout)
    _quiet(done.stderr)
    assert done.returncode == 0
    assert len(json.loads((tmp_path / "base.json").read_text())["findings"]) == BASIC_FINDINGS


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("args", [["check", "."], ["check", ".", "--format", "json"], ["rules"], ["contract", "."]])
def test_stdout_on_a_full_disk(tmp_path: Path, args: list[str], buffered: bool) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    env = cli_env()
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:  # opened for writing only; the node stays as it is
        done = subprocess.run(
            [sys.executable, "-m", "eagle3lint", *args], stdout=full, stderr=subprocess.PIPE,
            cwd=tree, env=env, timeout=TIMEOUT_S,
        )
    _quiet(done.stderr)
    assert done.returncode == 2
    assert done.stderr.count(b"eagle3lint: error: cannot write standard output: No space left on device") == 1


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("args", [["check", "."], ["check", ".", "--format", "json"], ["rules"], ["contract", "."], ["fix", "."]])
def test_a_reader_that_goes_away_is_no_error_message(tmp_path: Path, args: list[str], buffered: bool) -> None:
    """The read end is closed before the command writes: every write meets a broken pipe."""
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    env = cli_env()
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    child = subprocess.Popen(
        [sys.executable, "-m", "eagle3lint", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tree, env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    try:
        stderr = child.stderr.read()
        code = child.wait(timeout=TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert code in (0, 1, 2)
    _quiet(stderr)
    assert b"Broken pipe" not in stderr and b"standard output" not in stderr


def test_head_reading_one_line_is_quiet(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    env = cli_env()
    env.pop("PYTHONUNBUFFERED", None)
    done = subprocess.run(
        f"{sys.executable} -m eagle3lint check . --format full -v | head -1",
        shell=True, capture_output=True, cwd=tree, env=env, timeout=TIMEOUT_S,
    )
    assert done.returncode == 0 and done.stdout.count(b"\n") == 1
    _quiet(done.stderr)


def test_in_process_main_puts_the_streams_back(capsys: pytest.CaptureFixture[str]) -> None:
    from eagle3lint.cli import main

    before = (sys.stdout, sys.stderr)
    main(["explain", "E3L001"])  # returns: the command ends without sys.exit
    assert (sys.stdout, sys.stderr) == before
    assert "E3L001" in capsys.readouterr().out
