"""Settings files of the wrong shape, and --config on things that are not files: a clear error
naming the file, exit code 2, never a traceback or a blocked read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from eagle3lint.run.settings_load import load as load_settings
from eagle3lint.settings.config import (
    ConfigError,
    FileTooLarge,
    NotRegularFile,
    find_config,
    read_regular_file,
)
from tests.helpers import FIXTURES
from tests.robust_helpers import assert_clean_exit, run_bounded

NOT_TABLES = {
    "tool-int": ("tool = 1\n", "'tool' must be a table, not an integer"),
    "tool-string": ('tool = "x"\n', "'tool' must be a table, not a string"),
    # ``"eagle3lint" in "eagle3lint"`` is true: a string once passed for the table.
    "tool-string-named-like-us": ('tool = "eagle3lint"\n', "'tool' must be a table, not a string"),
    "tool-array": ("tool = []\n", "'tool' must be a table, not an array"),
    "eagle3lint-int": ("[tool]\neagle3lint = 5\n", "[tool.eagle3lint] must be a table, not an integer"),
    "eagle3lint-array": ("[tool]\neagle3lint = [1]\n", "[tool.eagle3lint] must be a table, not an array"),
}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "proj")
    return tmp_path / "proj"


@pytest.mark.parametrize("name", list(NOT_TABLES))
def test_pyproject_above_the_working_directory_of_the_wrong_shape(project: Path, name: str) -> None:
    text, problem = NOT_TABLES[name]
    (project / "pyproject.toml").write_text(text)
    for args in (["check", "sglang"], ["show-config"], ["show-config", "--format", "json"]):
        done = run_bounded(*args, cwd=project / "sglang" / "srt")
        assert_clean_exit(done, 2)
        assert f"eagle3lint: error: {project / 'pyproject.toml'}: {problem}" in done.stderr
        assert done.stdout == ""


@pytest.mark.parametrize("name", list(NOT_TABLES))
def test_explicit_config_of_the_wrong_shape(project: Path, tmp_path: Path, name: str) -> None:
    text, problem = NOT_TABLES[name]
    settings = tmp_path / "lint.toml"
    settings.write_text(text)
    for args in (["check", "."], ["show-config"]):
        done = run_bounded(*args, "--config", settings, cwd=project)
        assert_clean_exit(done, 2)
        assert f"{settings}: {problem}" in done.stderr


def test_explicit_config_holding_tool_5(tmp_path: Path) -> None:
    settings = tmp_path / "odd.toml"
    settings.write_text("tool = 5\n")
    with pytest.raises(ConfigError, match=r"odd\.toml: 'tool' must be a table, not an integer"):
        load_settings(settings)


def test_a_pyproject_without_our_table_is_still_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    assert find_config(tmp_path) is None


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["dev-null", "folder", "fifo"])
def test_config_naming_something_that_is_not_a_regular_file(project: Path, tmp_path: Path, kind: str) -> None:
    target = {"dev-null": lambda: Path("/dev/null"), "folder": lambda: tmp_path, "fifo": lambda: _fifo(tmp_path / "p.toml")}[kind]()
    words = {"dev-null": "a device", "folder": "a folder", "fifo": "a named pipe"}[kind]
    for args in (["check", "."], ["show-config"]):
        done = run_bounded(*args, "--config", target, cwd=project)  # a blocked read would time out
        assert_clean_exit(done, 2)
        assert f"eagle3lint: error: --config {target}: is not a regular file ({words})" in done.stderr
        assert "no such file" not in done.stderr


def test_config_naming_nothing_says_no_such_file(project: Path, tmp_path: Path) -> None:
    done = run_bounded("show-config", "--config", tmp_path / "absent.toml", cwd=project)
    assert_clean_exit(done, 2)
    assert "--config" in done.stderr and "absent.toml: no such file" in done.stderr


def test_config_through_a_symlink_to_a_file_is_read(project: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text('select = ["E3L003"]\n')
    (tmp_path / "link.toml").symlink_to(real)
    assert load_settings(tmp_path / "link.toml").select == ["E3L003"]


# ---- the reader itself ----------------------------------------------------------------------


def test_reading_a_named_pipe_without_a_writer_does_not_block(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile, match="named pipe"):
        read_regular_file(_fifo(tmp_path / "pipe"), 1024)


def test_reading_dev_zero_is_refused_before_any_read() -> None:
    with pytest.raises(NotRegularFile, match="a device"):
        read_regular_file(Path("/dev/zero"), 1024)


def test_a_reader_that_follows_no_links_refuses_one(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_regular_file(tmp_path / "link", 1024) == b"data"
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        read_regular_file(tmp_path / "link", 1024, follow_symlinks=False)
    assert read_regular_file(tmp_path / "real", 1024, follow_symlinks=False) == b"data"


def test_reading_past_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 4096)
    with pytest.raises(FileTooLarge):
        read_regular_file(big, 1024)
    assert read_regular_file(big, 4096) == b"x" * 4096


def test_an_oversized_config_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("eagle3lint.settings.config.MAX_CONFIG_BYTES", 64)
    settings = tmp_path / "lint.toml"
    settings.write_text("# " + "x" * 100 + "\n")
    with pytest.raises(ConfigError, match=r"lint\.toml: cannot read configuration: is larger than"):
        load_settings(settings)
