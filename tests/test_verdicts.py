"""Verdicts on the synthetic tree: the support matrix, fail-on, severities from the settings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, read_from, run_cli, run_json, summary_of

TREE = FIXTURES / "sglang_basic"
EXPECTED = json.loads((TREE / "expected.json").read_text())
PLAIN = TREE / "sglang/srt/models/plain.py"


def test_models_json_is_the_support_matrix() -> None:
    code, data = run_json("models", TREE, "--format", "json")
    assert code == 0
    assert data["version"] == 2 and data["engine"]["name"] == "sglang"
    rows = {m["class"]: m for m in data["models"]}
    assert {name: row["status"] for name, row in rows.items()} == EXPECTED["statuses"]
    keys = {"class", "architectures", "path", "line", "kind", "variant", "status", "outcome", "reason", "evidence", "conditions", "codes", "fix"}
    for row in rows.values():
        assert set(row) == keys
        assert row["reason"]
        # A target has an outcome; a class that is not one has none.
        assert (row["outcome"] is None) == (row["status"] == "not-a-target")
    kimi_like = rows["WrapperAttrForConditionalGeneration"]
    assert kimi_like["codes"] == ["E3L004"] and kimi_like["fix"] == {"applicability": "safe"}
    # The fixture's engine calls the setter bare: a crash, with the call site as its evidence.
    assert kimi_like["outcome"] == "crash" and kimi_like["evidence"]["path"].endswith(".py") and kimi_like["evidence"]["line"] > 0
    assert rows["PlainForCausalLM"]["codes"] == ["E3L020"]
    assert rows["FixLlamaForCausalLM"]["codes"] == [] and rows["FixLlamaForCausalLM"]["fix"] is None
    assert rows["FixLlamaForCausalLM"]["outcome"] == "works" and rows["FixLlamaForCausalLM"]["evidence"] is None
    assert data["summary"]["by_status"]["broken"] == list(EXPECTED["statuses"].values()).count("broken")
    assert data["summary"]["by_outcome"]["works"] == list(EXPECTED["statuses"].values()).count("supported")
    assert data["options"]["all"] is False


def test_models_table_fits_100_columns_and_markdown_is_one_table() -> None:
    table = run_cli("models", TREE)
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:5] == ["status", "outcome", "class", "fix", "reason"]
    assert lines[1].startswith("broken ")  # what needs action comes first
    assert max(len(line) for line in lines) <= 100
    counts = EXPECTED["statuses"]
    summary = " ".join(x.strip() for x in lines[lines.index(next(x for x in lines if x.startswith("sglang 0.0.1+fixture "))):])
    assert summary.startswith(f"{read_from('sglang 0.0.1+fixture', TREE / 'sglang')}: {len(counts)} model classes: ")
    assert f"{list(counts.values()).count('supported')} supported" in summary and "outcomes: " in summary
    verbose = run_cli("models", TREE, "-v").stdout
    assert "    engine: " in verbose and max(len(line) for line in verbose.splitlines()) > 100
    markdown = run_cli("models", TREE, "--format", "markdown")
    assert markdown.returncode == 0
    assert markdown.stdout.startswith("# EAGLE-3 support in sglang 0.0.1+fixture\n")
    header = "| Class | Architectures | Status | Outcome | Conditions | Reason | Fix |"
    assert markdown.stdout.count(header) == 1
    rows = [line for line in markdown.stdout.splitlines() if line.startswith("| `")]
    assert all(line.count(" | ") == 6 for line in rows)
    plain = next(line for line in rows if line.startswith("| `PlainForCausalLM` |"))
    # SGLang's architecture is the class's own name, said (a blank column reads as unknown); the reason names the rule.
    assert plain.startswith("| `PlainForCausalLM` | PlainForCausalLM | not implemented | crash |") and "(missing-target-method)" in plain
    assert "E3L0" not in markdown.stdout
    assert "FixEmbeddingModel" not in markdown.stdout  # not a target: left out of the page


def test_check_verbose_and_json_summary_carry_the_statuses() -> None:
    done = run_cli("check", TREE, "-v")
    assert "PlainForCausalLM: generative model (has self.lm_head); not-implemented (crash):" in done.stdout
    assert "  verdicts: " in done.stdout
    _, data = run_json("check", TREE)
    by_status = data["summary"]["models_by_status"]
    assert by_status["not-implemented"] == list(EXPECTED["statuses"].values()).count("not-implemented")


def test_only_infos_exit_0_and_fail_on_moves_the_threshold() -> None:
    assert run_cli("check", PLAIN).returncode == 0
    assert run_cli("check", PLAIN, "--fail-on", "info").returncode == 1
    assert run_cli("check", TREE / "sglang/srt/models/missing.py", "--fail-on", "error").returncode == 1
    assert run_cli("check", TREE / "sglang/srt/models/wrapper_attr.py", "--fail-on", "warning").returncode == 1
    bad = run_cli("check", PLAIN, "--fail-on", "fatal")
    assert bad.returncode == 2


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(TREE, root)
    return root


def _settings(project: Path, text: str) -> None:
    (project / "pyproject.toml").write_text("[tool.eagle3lint]\n" + text)


def test_severity_settings_raise_a_code_and_fail_on_from_the_settings(project: Path) -> None:
    model = "sglang/srt/models/plain.py"
    _settings(project, '[tool.eagle3lint.severity]\nE3L020 = "error"\n')
    code, data = run_json("check", model, cwd=project)
    assert code == 1 and [f["severity"] for f in data["findings"]] == ["error"]
    # The verdict is the analysis's: raising the severity does not make the model broken.
    assert {m["class"]: m["status"] for m in data["models"]}["PlainForCausalLM"] == "not-implemented"
    _settings(project, 'fail-on = "info"\n')
    assert run_cli("check", model, cwd=project).returncode == 1
    _settings(project, 'fail-on = "error"\n[tool.eagle3lint.severity]\nE3L0 = "warning"\nE3L004 = "error"\n')
    _, data = run_json("check", "sglang/srt/models/wrapper_attr.py", "sglang/srt/models/missing.py", cwd=project)
    assert {(f["code"], f["severity"]) for f in data["findings"]} == {("E3L004", "error"), ("E3L001", "warning")}
    shown = run_cli("show-config", cwd=project)
    assert 'fail-on = "error"' in shown.stdout and 'severity = { "E3L0" = "warning", "E3L004" = "error" }' in shown.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[tool.eagle3lint.severity]\nE3L999 = "error"\n', "names unknown rule code 'E3L999'"),
        ('[tool.eagle3lint.severity]\nE3L020 = "fatal"\n', "must be one of error, warning, info"),
        ('fail-on = "never"\n', "'fail-on' must be one of error, warning, info"),
        ("severity = 3\n", "'severity' must be a table"),
    ],
)
def test_bad_severity_settings_are_exit_2(project: Path, text: str, message: str) -> None:
    _settings(project, text)
    done = run_cli("check", ".", cwd=project)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_models_narrowed_to_some_classes() -> None:
    code, data = run_json("models", TREE, "--format", "json", "--model", "wrapper*", "--model", "PlainForCausalLM")
    assert code == 0
    names = {m["class"] for m in data["models"]}
    assert names == {n for n in EXPECTED["statuses"] if n.lower().startswith("wrapper")} | {"PlainForCausalLM"}
    assert data["summary"]["models"] == len(names)
    # A name that matches nothing is an error; with others that match, the rest is still shown.
    done = run_cli("models", TREE, "--model", "NoSuchForCausalLM")
    assert done.returncode == 2 and done.stdout == ""
    assert "--model 'NoSuchForCausalLM': no model class or architecture of that name in sglang 0.0.1+fixture" in done.stderr
    done = run_cli("models", TREE, "--model", "NoSuchForCausalLM", "--model", "PlainForCausalLM")
    assert done.returncode == 2 and "PlainForCausalLM" in done.stdout


QUIET_PP = '''

class QuietModel(RefusedModel):
    def forward(self, input_ids, positions):
        hidden_states, residual = input_ids, None
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states


class QuietForCausalLM(RefusedForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.model = QuietModel(vllm_config=vllm_config, prefix=prefix)
'''


def test_a_broken_rows_reason_is_its_cause_before_the_launch_conditions(tmp_path: Path) -> None:
    """A broken row that also changes under a launch option (refused with PP) says why it is
    broken first (the code and the short reason), the conditions after."""
    tree = tmp_path / "pp"
    shutil.copytree(FIXTURES / "vllm_pp", tree)
    models = tree / "vllm" / "model_executor" / "models"
    (models / "pp_models.py").write_text((models / "pp_models.py").read_text() + QUIET_PP)
    registry = models / "registry.py"
    registry.write_text(registry.read_text().replace(
        '    "SharedForCausalLM"', '    "QuietForCausalLM": ("pp_models", "QuietForCausalLM"),\n    "SharedForCausalLM"',
    ))
    done = run_cli("models", tree / "vllm", "--no-cache")
    (row,) = [line for line in done.stdout.splitlines() if " QuietForCausalLM " in line]
    assert row.startswith("broken ")
    reason = row.split(" QuietForCausalLM ", 1)[1].split(None, 1)[1]
    assert reason.startswith("E3L0"), row
    verbose = run_cli("models", tree / "vllm", "--no-cache", "-v").stdout
    (row,) = [line for line in verbose.splitlines() if " QuietForCausalLM " in line]
    reason = row.split(" QuietForCausalLM ", 1)[1].split(None, 1)[1]
    assert not reason.startswith(("refused with", "crash with", "silent with")), row
    assert "with --pipeline-parallel-size > 1" in reason
    # A supported row keeps its conditions first: they are all there is to say.
    (opted,) = [line for line in done.stdout.splitlines() if " OptOutForCausalLM " in line]
    # The reason column may be cut to the terminal's width (then it ends in "…").
    shown = opted.split(" OptOutForCausalLM ", 1)[1].split(None, 1)[1].rstrip()
    assert shown.startswith("refused"), opted
    assert "refused with --pipeline-parallel-size > 1".startswith(shown.removesuffix("…")) or shown.startswith(
        "refused with --pipeline-parallel-size > 1"
    ), opted


def test_min_severity_keeps_the_errors_and_says_how_many_it_left_out() -> None:
    """`check --min-severity error` (or `--severity`): errors only, the rest counted in the
    summary; each line says its severity in words; `models --min-severity error`: the classes
    with an error."""
    every = run_cli("check", TREE)
    severities = {line.split(": ", 2)[1].split()[1] for line in every.stdout.splitlines() if ": E3L" in line}
    assert severities >= {"error", "info"}
    below = sum(1 for line in every.stdout.splitlines() if ": E3L" in line and " error: " not in line)
    for flag in ("--min-severity", "--severity"):
        errors = run_cli("check", TREE, flag, "error")
        assert errors.returncode == 1
        lines = [line for line in errors.stdout.splitlines() if ": E3L" in line]
        assert lines and all(line.split(": ", 2)[1].endswith(" error") for line in lines)
        assert f"({below} below --min-severity error; " in summary_of(errors.stdout)
    _code, data = run_json("models", TREE, "--min-severity", "error")
    statuses = {m["status"] for m in data["models"]}
    assert "supported" not in statuses and "broken" in statuses
    table = run_cli("models", TREE, "--severity", "error").stdout
    assert "broken " in table and "\nsupported " not in table
