"""Issue 27 ("first hour, round 4"): what a new user still tripped over, one test (or a few) per item."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eagle3lint.engines import known_rule_codes
from tests.fix_helpers import copy_before, tree_bytes
from tests.helpers import FIXTURES, REPO, release_root, run_cli, run_json

FINDING = re.compile(r"^\S+:\d+:\d+: (E3L\d{3})( \[\*\])? (error|warning|info): ")


# Item 8: a blocked commit gives a fix hint (ruff's [*]); check --fix and check --diff work.


def test_check_marks_fixable_findings_and_ends_with_the_fix_hint(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    done = run_cli("check", "--no-cache", root)
    assert done.returncode == 1, done.stderr
    lines = [FINDING.match(line) for line in done.stdout.splitlines()]
    findings = [m for m in lines if m]
    marked = [m for m in findings if m[2]]
    # `fix` would fix 4 of the 6 (one more needs --unsafe-fixes, one has no fix).
    assert len(findings) == 6 and len(marked) == 4, done.stdout
    assert done.stdout.splitlines()[-1] == "[*] 4 fixable with `eagle3lint fix --apply` (1 more with `--unsafe-fixes`)."
    dry = run_cli("fix", "--no-cache", root)
    assert "Would fix 4 of 6 findings" in dry.stderr
    # With --unsafe-fixes the unsafe one is marked too; --format full marks as concise does.
    unsafe = run_cli("check", "--no-cache", "--unsafe-fixes", "--format", "full", root)
    assert sum(1 for line in unsafe.stdout.splitlines() if (m := FINDING.match(line)) and m[2]) == 5
    assert unsafe.stdout.splitlines()[-1] == "[*] 5 fixable with `eagle3lint fix --apply`."
    # Quiet: the marked findings alone.
    quiet = run_cli("check", "--no-cache", "-q", root)
    assert "fixable" not in quiet.stdout and " [*] " in quiet.stdout


def test_findings_without_a_fix_give_no_hint() -> None:
    done = run_cli("check", "--no-cache", FIXTURES / "vllm_legacy")
    assert done.returncode == 1 and FINDING.match(done.stdout)
    assert "fixable" not in done.stdout and "[*]" not in done.stdout


def test_check_diff_shows_the_fixes_and_writes_nothing(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    before = tree_bytes(root)
    diff = run_cli("check", "--no-cache", "--diff", root)
    dry = run_cli("fix", "--no-cache", root)
    assert diff.stdout == dry.stdout and diff.stdout.startswith("--- a/")
    assert diff.returncode == dry.returncode == 1
    assert "Would fix 4 of 6 findings" in diff.stderr
    assert tree_bytes(root) == before


def test_check_fix_writes_the_fixes_then_reports_what_remains(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    done = run_cli("check", "--no-cache", "--fix", root)
    assert done.returncode == 1, done.stderr
    assert "Fixed 4 of 6 findings in 4 files." in done.stderr
    findings = [m for line in done.stdout.splitlines() if (m := FINDING.match(line))]
    assert len(findings) == 2 and not any(m[2] for m in findings)
    assert done.stdout.splitlines()[-1] == "1 fixable with `eagle3lint fix --apply --unsafe-fixes`."
    again = run_cli("check", "--no-cache", root)
    assert again.stdout == done.stdout


def test_check_fix_and_diff_refuse_what_does_not_go_with_them(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    before = tree_bytes(root)
    for flags in (["--fix", "--diff"], ["--fix", "--statistics"], ["--diff", "--write-baseline", str(tmp_path / "b.json")], ["--fix", "--extend-select", "E3L1"]):
        done = run_cli("check", "--no-cache", *flags, root)
        assert done.returncode == 2 and "eagle3lint: error:" in done.stderr, (flags, done.stderr)
    assert tree_bytes(root) == before


# Item 9: a dry run's "would remain" is what the next check reports; the "not fixed" lines and
# the summary use one count and one wording; the README's example is a real run.

TBO_DECODER_FORWARD = '''        self.layers_to_capture = []
        self.start_layer, self.end_layer, self.first_k_dense = 0, config.num_hidden_layers, 1
        self.layers = nn.ModuleList([nn.Identity() for _ in range(config.num_hidden_layers)])

    def forward(self, input_ids, positions, forward_batch):
        hidden_states, residual = self.embed_tokens(input_ids), None
        aux_hidden_states = []
        end = self.end_layer
        if forward_batch.can_run_tbo:
            end = self.first_k_dense
        for i in range(self.start_layer, end):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = self.layers[i](positions, hidden_states, forward_batch, residual)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states
'''

HALF_MODEL = '''\
from torch import nn

from sglang.srt.layers.vocab import ParallelLMHead, VocabParallelEmbedding


class HalfModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)


class HalfForCausalLM(nn.Module):
    """EAGLE-3's getter, not its setter."""

    def __init__(self, config):
        super().__init__()
        self.model = HalfModel(config)
        self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)
        self.capture_aux_hidden_states = False

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight


class HalfVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = HalfForCausalLM(config.text_config)

    def forward(self, input_ids, positions, forward_batch):
        return self.language_model(input_ids, positions, forward_batch)


EntryClass = [HalfForCausalLM, HalfVLForConditionalGeneration]
'''

REMAIN = re.compile(r"^(\d+) findings? (?:would remain|remains?): (.*)\.$", re.MULTILINE)


def _fix_wrapper_with_tbo_and_half(tmp_path: Path) -> Path:
    """fix_wrapper's tree, its decoder skipping the capture loop under two-batch overlap (an
    E3L107 note, information with the option off, that each wrapper fixed to delegate meets
    too), and a wrapper whose delegation fix would leave it broken (not fixed)."""
    root = copy_before("fix_wrapper", tmp_path)
    leaf = root / "sglang/srt/models/leaf.py"
    leaf.write_text(leaf.read_text().replace("        self.layers_to_capture = []\n", TBO_DECODER_FORWARD, 1))
    (root / "sglang/srt/models/half.py").write_text(HALF_MODEL)
    return root


def test_fix_would_remain_is_what_the_next_check_reports(tmp_path: Path) -> None:
    root = _fix_wrapper_with_tbo_and_half(tmp_path)
    dry = run_cli("fix", "--no-cache", root)
    remain = REMAIN.search(dry.stderr)
    assert remain is not None, dry.stderr
    # The two wrappers fixed to delegate meet their decoder's two-batch-overlap note: new.
    assert "2 are new in the fixed tree" in remain[2], dry.stderr
    applied = run_cli("fix", "--no-cache", "--apply", root)
    _, after = run_json("check", "--no-cache", root)
    assert len(after["findings"]) == int(remain[1]), (dry.stderr, applied.stderr)
    again = REMAIN.search(applied.stderr)
    assert again is not None and again[1] == remain[1] and again[2] == remain[2].replace("will show", "shows")


def test_not_fixed_lines_and_the_summary_use_one_count_and_one_wording(tmp_path: Path) -> None:
    root = _fix_wrapper_with_tbo_and_half(tmp_path)
    dry = run_cli("fix", "--no-cache", root)
    lines = [line for line in dry.stderr.splitlines() if " not fixed: " in line]
    # (The summary said "1 has a fix that would leave its model incomplete" of this "broken" one.)
    assert lines == [
        "sglang/srt/models/half.py:25: E3L004 `HalfVLForConditionalGeneration.get_embed_and_head` not fixed: "
        "it would leave `HalfVLForConditionalGeneration` broken (crash: E3L001: lacks `set_eagle3_layers_to_capture`)"
    ]
    remain = REMAIN.search(dry.stderr)
    assert remain is not None and remain[2].startswith("1 not fixed (reasons above), "), dry.stderr


def _readme_fix_example() -> tuple[list[str], list[str]]:
    """The README's fix example: the command's arguments and the lines it shows."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"```text\n\$ eagle3lint (fix --release \S+) > fix\.patch\n(.*?)```", text, re.DOTALL)
    assert block is not None, "the README's fix example"
    return block[1].split(), block[2].splitlines()


@pytest.mark.release
def test_the_readme_fix_example_is_a_real_run(tmp_path: Path) -> None:
    from eagle3lint.common.cache_dir import cache_root

    args, shown = _readme_fix_example()
    release_root(args[-1])
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    got = done.stderr.replace(str(cache_root()), "~/.cache/eagle3lint").splitlines()
    assert got == shown
    assert done.stdout.startswith("--- a/sglang/")


# Item 12: did-you-mean for rule codes and names, in explain, --select/--ignore and the settings.


def test_explain_suggests_the_rule_meant() -> None:
    done = run_cli("explain", "wraper-delegation-gap")
    assert done.returncode == 2
    assert "unknown rule 'wraper-delegation-gap'; did you mean `wrapper-delegation-gap` (E3L004)?" in done.stderr
    code = run_cli("explain", "E3L0004")
    assert code.returncode == 2 and "did you mean `E3L004` (wrapper-delegation-gap)?" in code.stderr
    nothing = run_cli("explain", "no-such-thing-at-all")
    assert nothing.returncode == 2 and "did you mean" not in nothing.stderr
    # A code cut short names the codes it begins (it used to suggest E3L021, E3L031, E3L101).
    short = run_cli("explain", "E3L01")
    assert short.returncode == 2
    assert "did you mean `E3L010` (holder-lacks-mixin), `E3L011` (forward-never-collects) or `E3L012`" in short.stderr
    begun = sum(1 for code in known_rule_codes() if code.startswith("E3L01"))
    assert f"of the {begun} codes that begin with `E3L01`" in short.stderr


def test_select_and_ignore_suggest_the_rule_meant(tmp_path: Path) -> None:
    tree = FIXTURES / "vllm_legacy"
    select = run_cli("check", "--select", "E3L001,signature_mismatch", tree)
    assert select.returncode == 2
    assert "unknown rule code 'signature_mismatch'; did you mean `signature-mismatch` (E3L005)?" in select.stderr
    ignore = run_cli("check", "--ignore", "capture-skiped-under-option", tree)
    assert ignore.returncode == 2 and "did you mean `capture-skipped-under-option` (E3L107)" in ignore.stderr
    fix = run_cli("fix", "--select", "stub-methd", tree)
    assert fix.returncode == 2 and "did you mean `stub-method` (E3L003)?" in fix.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.eagle3lint]\nignore = ["stub-methd"]\n')
    settings = run_cli("check", tree, cwd=tmp_path)
    assert settings.returncode == 2 and "did you mean `stub-method` (E3L003)?" in settings.stderr


# Item 13: width and slips.


def test_rules_wrap_to_the_terminal_and_stay_whole_in_a_pipe() -> None:
    from tests.helpers import plain_environ

    wide = run_cli("rules", env={**plain_environ(), "COLUMNS": "120"})
    assert wide.returncode == 0
    assert max(len(line) for line in wide.stdout.splitlines()) <= 120
    assert wide.stdout.startswith("E3L001  missing-target-method ")
    narrow = run_cli("rules", env={**plain_environ(), "COLUMNS": "70"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 70
    assert narrow.stdout.splitlines()[1].startswith("        Reports ")  # the summary under its rule
    # Every rule's words are all there, in order, whatever the width.
    piped = run_cli("rules", env={k: v for k, v in plain_environ().items() if k != "COLUMNS"})
    whole = [line for line in piped.stdout.splitlines() if line.startswith("E3L")]
    assert len(whole) == len(piped.stdout.splitlines())  # one line per rule in a pipe
    assert " ".join(narrow.stdout.split()) == " ".join(piped.stdout.split()) == " ".join(wide.stdout.split())


@pytest.mark.release
def test_a_wide_terminal_shows_long_class_names_whole() -> None:
    """vLLM 0.34.0's per-platform rows of a long class were cut alike at 32 columns whatever the
    terminal: two rows read the same."""
    from tests.helpers import plain_environ

    def classes(columns: str) -> list[str]:
        done = run_cli("models", "--release", "vllm==0.34.0", env={**plain_environ(), "COLUMNS": columns})
        return [line for line in done.stdout.splitlines() if "Qwen4ExpForConditionalGeneration" in line or "Qwen4ExpForConditionalGeneratio…" in line]

    wide = classes("220")
    assert any("Qwen4ExpForConditionalGeneration [amd]" in line for line in wide), wide
    assert any("Qwen4ExpForConditionalGeneration [nvidia]" in line for line in wide), wide
    assert max(len(line) for line in wide) <= 220
    narrow = classes("100")  # a 100-column terminal keeps its 32 columns for the name
    assert narrow and all("Qwen4ExpForConditionalGeneratio… " in line for line in narrow), narrow


def test_markdown_names_the_architectures_of_every_row() -> None:
    done = run_cli("models", FIXTURES / "sglang_basic", "--format", "markdown")
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| `")]
    assert rows and all(row[1].strip() for row in rows), done.stdout
    # SGLang serves a class under its own name.
    assert "| `MissingForCausalLM` | MissingForCausalLM | " in done.stdout


def test_no_doubled_outcome_and_one_layer_is_singular(tmp_path: Path) -> None:
    from tests.fakes.model_folders import write_kimi_pair
    from tests.fakes.sglang_tree import write_sglang_tree

    verbose = run_cli("check", "-v", FIXTURES / "sglang_basic")
    assert "broken (crash): E3L001: lacks `set_eagle3_layers_to_capture`" in verbose.stdout
    assert "crash: crash:" not in verbose.stdout and "(crash): crash:" not in verbose.stdout
    broken = write_sglang_tree(tmp_path / "broken")
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    code, report = run_json("preflight", "--engine-root", broken, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert (code, report["outcome"]) == (1, "crash")
    messages = [item["message"] for item in report["items"]]
    target = next(m for m in messages if m.startswith("KimiK25ForConditionalGeneration: broken, crash"))
    assert "crash: crash:" not in target, target
    assert not any(re.search(r"\b1 layers\b", m) for m in messages), messages
    assert any(re.search(r"\b1 layer\b", m) for m in messages), messages  # the one-layer drafter


def test_help_and_choices_name_lmdeploy() -> None:
    top = run_cli("--help")
    assert "LMDeploy" in " ".join(top.stdout.split())
    for command in ("preflight", "verify"):
        done = run_cli(command, "--help")
        assert "[sglang|vllm|lmdeploy]" in done.stdout, (command, done.stdout)


# Item 4: a history keys a class by its registered architectures across releases; platform
# packages are a column, not new rows; "first ok" says "≤" where earlier releases were not read.


def _vllm_move_history() -> object:
    """vLLM 0.33.0 -> 0.34.0 in small: Beam moves into the [amd] and [nvidia] packages (the same
    support); Kimi's platforms disagree (a row each); Mistral appears in 0.34.0."""
    from eagle3lint.model.history_result import Cell, History

    ok, refused = Cell("supported", "works", ()), Cell("incomplete", "refused", ("E3L017",))
    history = History("vllm", ["vllm==0.33.0,0.34.0"], ["0.33.0", "0.34.0"], releases=["0.33.0", "0.34.0"])
    history.add("0.33.0", "BeamForCausalLM", None, ["BeamForCausalLM"], ok)
    history.add("0.33.0", "KimiLinearForCausalLM", "amd", ["KimiLinearForCausalLM"], refused)
    history.add("0.33.0", "KimiLinearForCausalLM", "nvidia", ["KimiLinearForCausalLM"], ok)
    for variant in ("amd", "nvidia"):
        history.add("0.34.0", "BeamForCausalLM", variant, ["BeamForCausalLM"], ok)
        history.add("0.34.0", "KimiLinearForCausalLM", variant, ["KimiLinearForCausalLM"], refused if variant == "amd" else ok)
        history.add("0.34.0", "MistralLarge4ForCausalLM", variant, ["MistralLarge4ForCausalLM"], ok)
    history.finish()
    return history


def test_a_class_moved_into_platform_packages_stays_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import json

    from eagle3lint.model.history_result import History
    from eagle3lint.report.history import footer, shown_models, write_json, write_table

    history = _vllm_move_history()
    assert isinstance(history, History)
    rows = {m.label(): m for m in history.models}
    assert sorted(rows) == ["BeamForCausalLM", "KimiLinearForCausalLM [amd]", "KimiLinearForCausalLM [nvidia]", "MistralLarge4ForCausalLM"]
    beam = rows["BeamForCausalLM"]
    assert beam.changes(history.releases) == []
    assert beam.platforms(history.releases) == "amd, nvidia (0.34.0)"
    assert rows["MistralLarge4ForCausalLM"].platforms(history.releases) == "amd, nvidia"
    # Nothing changed but Mistral's arrival.
    assert "4 model classes, 1 changed" in footer(history, shown_models(history))[-1]
    out = io.StringIO()
    monkeypatch.setenv("COLUMNS", "120")
    write_table(history, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["class", "variants", "0.33.0", "0.34.0", "first", "ok", "last", "broken"]
    assert [line.split()[0] for line in lines[1:5]].count("BeamForCausalLM") == 1
    out = io.StringIO()
    write_json(history, out)
    (row,) = [m for m in json.loads(out.getvalue())["models"] if m["class"] == "BeamForCausalLM"]
    assert row["variant"] is None and row["variants"] == {"0.34.0": ["amd", "nvidia"]}
    assert row["changes"] == [] and row["first_supported"] == "0.33.0"


def test_first_ok_says_at_most_where_earlier_releases_were_not_read() -> None:
    from eagle3lint.model.history_result import History
    from eagle3lint.report.history import first_ok_text

    history = _vllm_move_history()
    assert isinstance(history, History)
    rows = {m.label(): m for m in history.models}
    # Without the index's list: the first release analysed may not be the first.
    assert first_ok_text(history, rows["BeamForCausalLM"]) == "≤ 0.33.0"
    assert first_ok_text(history, rows["MistralLarge4ForCausalLM"]) == "0.34.0"  # absent from 0.33.0: new
    # The index lists earlier releases: the range started after them.
    history.published = ["0.34.0", "0.33.0", "0.32.1", "0.32.0", "0.33.0rc1"]
    assert first_ok_text(history, rows["BeamForCausalLM"]) == "≤ 0.33.0"
    assert first_ok_text(history, rows["MistralLarge4ForCausalLM"]) == "0.34.0"
    assert first_ok_text(history, rows["KimiLinearForCausalLM [amd]"]) is None
    # The first release published: nothing before it.
    history.published = ["0.34.0", "0.33.0", "0.33.0rc1"]
    assert first_ok_text(history, rows["BeamForCausalLM"]) == "0.33.0"


@pytest.mark.release
def test_vllm_0_34_0_platform_packages_are_no_new_rows() -> None:
    release_root("vllm==0.33.0")
    release_root("vllm==0.34.0")
    _, data = run_json("models", "--release", "vllm==0.33.0,0.34.0")
    rows = [m for m in data["models"] if m["class"] == "BeamForCausalLM"]
    assert len(rows) == 1, rows
    (beam,) = rows
    assert beam["variant"] is None and beam["variants"] == {"0.34.0": ["amd", "nvidia"]}
    assert beam["changes"] == [] and {c["status"] for c in beam["history"].values()} == {"supported"}
    assert beam["first_supported"] == "0.33.0" and beam["first_supported_or_earlier"]
    for name in ("Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"):
        (row,) = [m for m in data["models"] if m["class"] == name]
        assert row["changes"] == [], row


# Item 14 (in part): the suite's releases are kept out of the user's cache.


def test_the_suite_keeps_its_releases_out_of_the_users_cache() -> None:
    import os

    from eagle3lint.common.cache_dir import cache_root

    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eagle3lint"
    assert cache_root().resolve() != user.resolve()
    assert user.resolve() not in cache_root().resolve().parents

# Item 15 (releases of the project itself) is tests/test_packaging.py.


# Item 8/9, the loop a user met: `check` marked [*] fixes that `fix` then refused (all or nothing
# per model: a wrapper's delegation of one member while the other has no fix), and after
# `fix --apply` the check still promised them.

_WOULD_FIX = re.compile(r"Would fix (\d+) of \d+ findings in \d+ files?(?:: (\d+) by their own fix)?")


def _marked_and_fixed(*target: str | Path) -> tuple[list[str], int]:
    done = run_cli("check", "--no-cache", *target)
    marked = [line for line in done.stdout.splitlines() if (m := FINDING.match(line)) and m[2]]
    dry = run_cli("fix", "--no-cache", *target)
    would = _WOULD_FIX.search(dry.stderr)
    assert would is not None, dry.stderr
    return marked, int(would[2] or would[1])


def test_check_marks_only_what_fix_writes(tmp_path: Path) -> None:
    root = _fix_wrapper_with_tbo_and_half(tmp_path)
    marked, fixed = _marked_and_fixed(root)
    assert len(marked) == fixed
    # The half wrapper's delegation would leave it broken (no fix for its setter): not promised,
    # offered with --unsafe-fixes instead, saying why.
    assert not any("half.py" in line for line in marked), marked
    _, data = run_json("check", "--no-cache", "--format", "json", root)
    half = [f for f in data["findings"] if f["path"].endswith("half.py") and f["code"] == "E3L004"]
    assert half and half[0]["fix"]["applicability"] == "unsafe" and "no safe fix" in half[0]["fix"]["description"]


@pytest.mark.release
@pytest.mark.parametrize("release", ["sglang==0.5.23", "sglang==0.5.9", "vllm==0.34.0"])
def test_on_releases_check_marks_exactly_what_fix_writes(release: str) -> None:
    marked, fixed = _marked_and_fixed("--release", release)
    assert len(marked) == fixed


def test_models_says_what_the_fix_column_means_where_it_shows_one(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    done = run_cli("models", "--no-cache", root)
    assert done.returncode == 0, done.stderr
    # One legend, wrapped to the terminal like the lines around it.
    assert sum(1 for line in done.stdout.splitlines() if line.startswith("fix: safe = ")) == 1
    words = " ".join(done.stdout.split())
    assert "fix: safe = `eagle3lint fix --apply` writes it; unsafe = only with `--unsafe-fixes`; display = a suggestion" in words
    plain = run_cli("models", "--no-cache", FIXTURES / "vllm_legacy")
    assert "fix: safe = " not in plain.stdout
