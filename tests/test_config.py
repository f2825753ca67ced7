"""[tool.eagle3lint] settings: discovery, merging with the command line, strict validation."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, run_cli, run_json


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "proj")
    return tmp_path / "proj"


def _write(project: Path, body: str) -> Path:
    path = project / "pyproject.toml"
    path.write_text("[project]\nname = 'fork'\n\n[tool.eagle3lint]\n" + body)
    return path


def test_config_found_by_walking_up_from_cwd(project: Path) -> None:
    _write(project, 'select = ["E3L004"]\n')
    code, data = run_json("check", "sglang/srt/models", cwd=project / ".")
    assert code == 1
    assert {f["code"] for f in data["findings"]} == {"E3L004"}
    sub = project / "sglang/srt"
    code, data = run_json("check", "models", cwd=sub)
    assert {f["code"] for f in data["findings"]} == {"E3L004"}


def test_command_line_select_overrides_and_ignore_adds(project: Path) -> None:
    _write(project, 'select = ["E3L004"]\nignore = ["E3L005"]\n')
    _, data = run_json("check", ".", "--select", "E3L001,E3L005", cwd=project)
    assert {f["code"] for f in data["findings"]} == {"E3L001"}


def test_extend_select_and_per_file_ignores(project: Path) -> None:
    _write(project, 'extend-select = ["E3L900"]\n[tool.eagle3lint.per-file-ignores]\n"sglang/srt/models/wrapper_*.py" = ["E3L004"]\n')
    _, data = run_json("check", ".", cwd=project)
    assert not [f for f in data["findings"] if f["code"] == "E3L004" and "wrapper_" in f["path"]]
    assert [f for f in data["findings"] if f["code"] == "E3L001"]


def test_output_format_and_engine_root_from_config(project: Path) -> None:
    _write(project, 'output-format = "json"\nengine-root = "sglang"\n')
    done = run_cli("check", cwd=project)
    assert json.loads(done.stdout)["engine"]["name"] == "sglang"


def test_explicit_config_file(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "lint.toml"
    other.write_text('select = ["E3L003"]\n')
    _, data = run_json("check", ".", "--config", other, cwd=project)
    assert {f["code"] for f in data["findings"]} == {"E3L003"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('selct = ["E3L001"]\n', "unknown key 'selct' (did you mean 'select'?)"),
        ('select = "E3L001"\n', "'select' must be an array, not str"),
        ('ignore = ["E3L777"]\n', "'ignore' names unknown rule code 'E3L777'"),
        ('engine = "tgi"\n', "'engine' must be one of sglang, vllm, lmdeploy"),
        ('output-format = "xml"\n', "'output-format' must be one of"),
        ("unsafe-fixes = 1\n", "'unsafe-fixes' must be a boolean"),
        ('[tool.eagle3lint.sglang]\nextra-members = [{ nme = "x" }]\n', "unknown key 'nme'"),
        ("select = [\n", "invalid TOML"),
        ('engine-root = "nowhere"\n', "'engine-root' names 'nowhere', which is not a folder"),
        ('[tool.eagle3lint.sglang]\nextra-models = ["plugins/none"]\n', "'extra-models' names 'plugins/none', which does not exist"),
        ('[tool.eagle3lint.sglang]\nextra-members = [{ name = "get aux!" }]\n', "is not a Python identifier"),
    ],
)
def test_bad_config_is_a_clear_error_naming_file_and_key(project: Path, body: str, message: str) -> None:
    path = _write(project, body)
    done = run_cli("check", ".", cwd=project)
    assert done.returncode == 2
    assert message in done.stderr
    assert str(path) in done.stderr or "pyproject.toml" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_config_file(project: Path) -> None:
    done = run_cli("check", ".", "--config", project / "nope.toml", cwd=project)
    assert done.returncode == 2 and "no such file" in done.stderr


def test_extra_required_member(project: Path) -> None:
    _write(
        project,
        '[tool.eagle3lint.sglang]\nextra-members = [{ name = "get_aux_width", role = "target", required = true }]\n',
    )
    _, data = run_json("check", "sglang/srt/models/llama_like.py", cwd=project)
    (finding,) = data["findings"]
    assert (finding["code"], finding["method"]) == ("E3L001", "get_aux_width")
    assert finding["related"][0]["path"].endswith("pyproject.toml")


def test_extra_models_outside_the_engine(project: Path) -> None:
    plugins = project / "plugins"
    plugins.mkdir()
    (plugins / "my_model.py").write_text(
        "from torch import nn\n\n"
        "class MyForCausalLM(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        self.lm_head = nn.Linear(1, 1)\n\n"
        "EntryClass = MyForCausalLM\n"
    )
    _write(project, '[tool.eagle3lint.sglang]\nextra-models = ["plugins"]\n')
    _, data = run_json("check", "plugins", "--engine-root", "sglang", cwd=project)
    # No EAGLE-3 code in it: the out-of-tree model is checked and found not to implement it.
    assert {(f["class"], f["code"]) for f in data["findings"]} == {("MyForCausalLM", "E3L020")}


def test_show_config_prints_merged_settings(project: Path) -> None:
    _write(project, 'select = ["E3L004"]\nunsafe-fixes = true\n')
    done = run_cli("show-config", "--format", "json", cwd=project)
    assert done.returncode == 0
    shown = json.loads(done.stdout)
    assert shown["select"] == ["E3L004"] and shown["unsafe-fixes"] is True
    assert shown["config-file"].endswith("pyproject.toml")
    # Defaults are shown as the values a run uses, not as null, and listed as defaults.
    assert shown["output-format"] == "concise"
    assert shown["cache-dir"] == str(project.resolve() / ".eagle3lint_cache")
    assert shown["sglang"] == {"extra-members": [], "extra-models": []}
    assert "output-format" in shown["defaults"] and "cache-dir" in shown["defaults"]
    assert "select" not in shown["defaults"] and "unsafe-fixes" not in shown["defaults"]


def test_show_config_text_marks_defaults(project: Path) -> None:
    _write(project, 'select = ["E3L004"]\nunsafe-fixes = true\ncache-dir = "build/lint-cache"\n')
    done = run_cli("show-config", cwd=project)
    assert done.returncode == 0, done.stderr
    lines = {line.split(" = ", 1)[0]: line for line in done.stdout.splitlines() if " = " in line and not line.startswith("#")}
    assert str(project.resolve() / "pyproject.toml") in done.stdout.splitlines()[0]
    # Set in the file: the value alone.
    assert lines["select"] == 'select = ["E3L004"]'
    assert lines["unsafe-fixes"] == "unsafe-fixes = true"
    cache = project.resolve() / "build/lint-cache"
    assert lines["cache-dir"] == f"cache-dir = {json.dumps(str(cache))}"
    # Left unset: the effective value, marked as a default.
    assert lines["output-format"].startswith('output-format = "concise"') and lines["output-format"].endswith("# default")
    # No value to give: a commented-out line, so the whole output is valid TOML.
    unset = {line.split(" = ", 1)[0][2:]: line for line in done.stdout.splitlines() if line.startswith("# ") and " = " in line}
    assert unset["baseline"].startswith("# baseline = (unset)") and "# default: every finding is reported" in unset["baseline"]
    assert unset["engine"].startswith("# engine = (unset)") and "# default: discovered" in unset["engine"]
    assert "null" not in done.stdout
    import tomllib

    assert tomllib.loads(done.stdout)["select"] == ["E3L004"]
    # The cache folder shown is the one a run uses.
    assert run_cli("check", "sglang/srt/models", cwd=project).returncode == 1
    assert (cache / "CACHEDIR.TAG").is_file()


def test_show_config_without_a_file_shows_every_default(tmp_path: Path) -> None:
    user = tmp_path / "user-cache"
    tmp_path = tmp_path / "work"  # the user cache lies outside the folder the run starts in
    tmp_path.mkdir()
    done = run_cli("show-config", cwd=tmp_path, env={**os.environ, "EAGLE3LINT_CACHE_DIR": str(user)})
    assert done.returncode == 0, done.stderr
    body = [line for line in done.stdout.splitlines() if not line.startswith("#")]
    assert body and all("# default" in line for line in body)
    # No settings file: the cache is one folder in the user cache, never the working directory.
    assert f"cache-dir = {json.dumps(str(user / 'check-cache'))}" in done.stdout
    assert "in the user cache folder" in done.stdout
    assert run_cli("check", str(FIXTURES / "sglang_basic"), cwd=tmp_path, env={**os.environ, "EAGLE3LINT_CACHE_DIR": str(user)}).returncode == 1
    assert (user / "check-cache" / "CACHEDIR.TAG").is_file() and not (tmp_path / ".eagle3lint_cache").exists()
    select = next(line for line in body if line.startswith("select = "))
    assert "E3L001" in select and "E3L900" not in select.split("#")[0] and "every rule but E3L900" in select
