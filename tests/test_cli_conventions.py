"""What a ruff user types: ``--output-format``, ``--exit-zero``, ``--statistics``, ``--quiet``,
``--exclude``/``--extend-exclude`` (and their settings), rule names wherever codes are taken, and
colour on a terminal only (``NO_COLOR``, ``FORCE_COLOR``)."""

from __future__ import annotations

import io
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from eagle3lint.report.colour import use_colour
from tests.helpers import (
    BASIC_FINDINGS,
    FIXTURES,
    REPO,
    plain_environ,
    run_cli,
    run_json,
    run_on_terminal,
)

BASIC = FIXTURES / "sglang_basic"
OUR_COLOURS = re.compile(r"\x1b\[(?:0|1|1;3[136])m")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    shutil.copytree(BASIC, tmp_path / "proj")
    return tmp_path / "proj"


def _settings(project: Path, body: str) -> None:
    (project / "pyproject.toml").write_text("[tool.eagle3lint]\n" + body)


def _codes(data: dict) -> Counter[str]:
    return Counter(f["code"] for f in data["findings"])


# ---- formats, exit codes, statistics, quiet --------------------------------------------------------


def test_output_format_is_the_format_option(project: Path) -> None:
    done = run_cli("check", ".", "--output-format", "json", cwd=project)
    assert json.loads(done.stdout)["summary"]["findings"] == BASIC_FINDINGS
    models = run_cli("models", ".", "--output-format", "json", cwd=project)
    assert json.loads(models.stdout)["summary"]["models"] > 0


def test_exit_zero_with_findings_but_not_with_errors(project: Path) -> None:
    assert run_cli("check", ".", cwd=project).returncode == 1
    assert run_cli("check", ".", "--exit-zero", cwd=project).returncode == 0
    (project / "sglang/srt/models/broken.py").write_text("class (:\n")
    assert run_cli("check", ".", "--exit-zero", cwd=project).returncode == 2
    assert run_cli("fix", ".", "--exit-zero", cwd=project).returncode == 2


def test_fix_exit_zero_and_quiet(project: Path) -> None:
    done = run_cli("fix", ".", cwd=project)
    assert done.returncode == 1 and "remain" in done.stderr
    quiet = run_cli("fix", ".", "--exit-zero", "--quiet", cwd=project)
    assert quiet.returncode == 0
    assert quiet.stdout == done.stdout  # the diff is the output; only the summary goes
    assert "remain" not in quiet.stderr and "Would fix" not in quiet.stderr


def test_statistics_count_each_rule_by_name(project: Path) -> None:
    _, data = run_json("check", ".", cwd=project)
    done = run_cli("check", ".", "--statistics", cwd=project)
    assert done.returncode == 1
    *rows, summary = done.stdout.splitlines()
    parsed = [row.split("\t") for row in rows]
    assert {code: int(count) for count, code, _ in parsed} == _codes(data)
    assert [int(count) for count, _, _ in parsed] == sorted((int(c) for c, _, _ in parsed), reverse=True)
    assert ["E3L004", "wrapper-delegation-gap"] in [[code, name] for _, code, name in parsed]
    assert summary.startswith("sglang 0.0.1+fixture (./sglang): ")
    as_json = json.loads(run_cli("check", ".", "--statistics", "--format", "json", cwd=project).stdout)
    assert {row["code"]: row["count"] for row in as_json} == _codes(data)
    assert {row["name"] for row in as_json if row["code"] == "E3L002"} == {"missing-draft-method"}


def test_quiet_prints_the_findings_alone_and_nothing_on_success(project: Path) -> None:
    done = run_cli("check", ".", "--quiet", cwd=project)
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == BASIC_FINDINGS  # no summary line
    assert all(re.match(r"sglang/\S+:\d+:\d+: E3L\d{3} ", line) for line in done.stdout.splitlines())
    clean = run_cli("check", ".", "-q", "--select", "E3L014", cwd=project)
    assert clean.returncode == 0 and clean.stdout == "" and clean.stderr == ""
    normal = run_cli("check", ".", "--select", "E3L014", cwd=project)
    assert normal.stdout.startswith("sglang 0.0.1+fixture (./sglang): no findings")
    assert run_cli("check", ".", "-q", "-v", cwd=project).returncode == 2


# ---- exclude ---------------------------------------------------------------------------------------


def test_exclude_leaves_files_out_of_the_report(project: Path) -> None:
    _, everything = run_json("check", ".", cwd=project)
    by_file = Counter(Path(f["path"]).name for f in everything["findings"])
    assert by_file["missing.py"] and by_file["drafts.py"]
    _, fewer = run_json("check", ".", "--exclude", "missing.py,sglang/srt/models/drafts.py", cwd=project)
    names = {Path(f["path"]).name for f in fewer["findings"]}
    assert "missing.py" not in names and "drafts.py" not in names
    assert fewer["summary"]["findings"] == BASIC_FINDINGS - by_file["missing.py"] - by_file["drafts.py"]
    assert fewer["summary"]["models_checked"] < everything["summary"]["models_checked"]
    # A folder's name leaves out everything under it; a finding goes with its model's file (the
    # stub StubForCausalLM inherits lives in sglang/srt/layers).
    _, none = run_json("check", ".", "--exclude", "models", cwd=project)
    assert none["findings"] == [] and none["summary"]["models_checked"] == 0


def test_exclude_settings_and_the_command_line(project: Path) -> None:
    _settings(project, 'exclude = ["missing.py"]\nextend-exclude = ["drafts.py"]\n')
    _, data = run_json("check", ".", cwd=project)
    assert not {"missing.py", "drafts.py"} & {Path(f["path"]).name for f in data["findings"]}
    # --exclude replaces the settings' exclude; extend-exclude still holds.
    _, data = run_json("check", ".", "--exclude", "stub.py", cwd=project)
    names = {Path(f["path"]).name for f in data["findings"]}
    assert "missing.py" in names and "drafts.py" not in names
    assert "StubForCausalLM" not in {f["class"] for f in data["findings"]}
    _, data = run_json("check", ".", "--extend-exclude", "stub.py", cwd=project)
    assert not {"missing.py", "drafts.py"} & {Path(f["path"]).name for f in data["findings"]}
    models = json.loads(run_cli("models", ".", "--format", "json", cwd=project).stdout)
    assert "MissingForCausalLM" not in {m["class"] for m in models["models"]}
    shown = run_cli("show-config", cwd=project).stdout
    assert 'exclude = ["missing.py"]' in shown and 'extend-exclude = ["drafts.py"]' in shown


def test_fix_leaves_excluded_files_alone(project: Path) -> None:
    everything = run_cli("fix", ".", cwd=project)
    assert "+++ b/sglang/srt/models/wrapper_param.py" in everything.stdout
    fewer = run_cli("fix", ".", "--extend-exclude", "wrapper_*.py", cwd=project)
    assert "wrapper_" not in fewer.stdout and fewer.stdout != everything.stdout


def test_exclude_must_hold_patterns(project: Path) -> None:
    _settings(project, "exclude = [1]\n")
    done = run_cli("check", ".", cwd=project)
    assert done.returncode == 2 and "'exclude' must hold glob patterns" in done.stderr


# ---- rule names where codes are taken ---------------------------------------------------------------


def test_rule_names_on_the_command_line(project: Path) -> None:
    _, data = run_json("check", ".", "--select", "missing-draft-method,E3L001", cwd=project)
    assert set(_codes(data)) == {"E3L001", "E3L002"}
    _, data = run_json("check", ".", "--ignore", "wrapper-delegation-gap", "--extend-select", "unused-suppression", cwd=project)
    assert "E3L004" not in _codes(data) and data["summary"]["findings"] == BASIC_FINDINGS - _codes(run_json("check", ".", cwd=project)[1])["E3L004"]
    unknown = run_cli("check", ".", "--select", "no-such-rule", cwd=project)
    assert unknown.returncode == 2 and "unknown rule code 'no-such-rule'" in unknown.stderr
    fixed = run_cli("fix", ".", "--select", "wrapper-delegation-gap", cwd=project)
    assert fixed.returncode == 1 and "+++ " in fixed.stdout


def test_rule_names_in_the_settings(project: Path) -> None:
    _settings(
        project,
        'select = ["missing-target-method", "stub-method"]\n'
        '[tool.eagle3lint.severity]\nstub-method = "warning"\n'
        '[tool.eagle3lint.per-file-ignores]\n"missing.py" = ["missing-target-method"]\n',
    )
    _, data = run_json("check", ".", cwd=project)
    assert set(_codes(data)) == {"E3L003"}
    assert {f["severity"] for f in data["findings"]} == {"warning"}
    _settings(project, 'ignore = ["stub-methd"]\n')
    done = run_cli("check", ".", cwd=project)
    assert done.returncode == 2 and "'ignore' names unknown rule code 'stub-methd'" in done.stderr


# ---- colour ------------------------------------------------------------------------------------------


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": "0"}, False, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),
        ({"TERM": "dumb"}, True, False),
    ],
)
def test_when_colour_is_used(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool, expected: bool) -> None:
    for key in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert use_colour(_Stream(tty)) is expected


def test_colour_on_a_terminal_never_through_a_pipe(project: Path) -> None:
    piped = run_cli("check", ".", cwd=project)
    assert "\x1b" not in piped.stdout
    _, shown = run_on_terminal("check", ".", cwd=project)
    assert "\x1b[1;31mE3L001 error:\x1b[0m" in shown  # an error's code in red, its severity in words too
    assert "\x1b[1;36mE3L020 info:\x1b[0m" in shown  # information in cyan
    assert "\x1b[1msglang/srt/models/missing.py\x1b[0m:" in shown
    assert OUR_COLOURS.sub("", shown).replace("\r\n", "\n") == piped.stdout


def test_force_color_and_no_color(project: Path) -> None:
    forced = run_cli("check", ".", cwd=project, env={**plain_environ(), "PYTHONPATH": str(REPO), "FORCE_COLOR": "1"})
    assert "\x1b[1;31mE3L001 error:\x1b[0m" in forced.stdout
    both = run_cli("check", ".", cwd=project, env={**plain_environ(), "PYTHONPATH": str(REPO), "FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b" not in both.stdout
