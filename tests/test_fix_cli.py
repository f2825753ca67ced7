"""`eagle3lint fix` as a user runs it: options, exit codes, scope, and check's JSON fix data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fix_helpers import MODELS, copy_before, golden_after, tree_bytes
from tests.helpers import REPO, run_cli

CROSS_FILE_MODEL = '''\
from torch import nn

from sglang.srt.layers.logits_processor import LogitsProcessor
from sglang.srt.layers.vocab import ParallelLMHead
from sglang.srt.models.capture_leaf import CaptureModel


class CrossForCausalLM(nn.Module):
    """Its decoder lives in capture_leaf.py."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = CaptureModel(config)
        self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)
        self.logits_processor = LogitsProcessor(config)

    def forward(self, input_ids, positions, forward_batch):
        hidden_states = self.model(input_ids, positions, forward_batch)
        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch)

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight


EntryClass = CrossForCausalLM
'''


def test_single_file_scope_and_exit_codes(tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    target = root / MODELS / "vl_wrapper.py"
    dry = run_cli("fix", target)
    assert dry.returncode == 1
    assert dry.stdout.count("+    def ") == 4
    assert "Would fix 2 of 2 findings in 1 file" in dry.stderr  # one finding per cause
    applied = run_cli("fix", "--apply", target)
    assert applied.returncode == 0, applied.stderr
    assert "Fixed 2 of 2 findings in 1 file." in applied.stderr
    assert target.read_bytes() == (golden_after("fix_wrapper") / MODELS / "vl_wrapper.py").read_bytes()


def test_select_and_ignore(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_embed", tmp_path)
    before = tree_bytes(root)
    ignored = run_cli("fix", "--apply", "--unsafe-fixes", "--ignore", "E3L001", root / MODELS)
    assert ignored.returncode == 0  # nothing selected: no findings, nothing to fix
    assert tree_bytes(root) == before
    selected = run_cli("fix", "--apply", "--unsafe-fixes", "--select", "E3L004", root / MODELS)
    assert selected.returncode == 0 and tree_bytes(root) == before
    fixed = run_cli("fix", "--apply", "--unsafe-fixes", "--select", "E3L001", root / MODELS)
    assert fixed.returncode == 0 and tree_bytes(root) == tree_bytes(golden_after("fix_leaf_embed"))


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    unknown = run_cli("fix", "--select", "E9L999", REPO / "fixtures" / "fix_wrapper" / "before" / MODELS)
    assert unknown.returncode == 2 and "unknown rule code" in unknown.stderr
    release = run_cli("fix", "--apply", "--release", "sglang==0.5.9")
    assert release.returncode == 2 and "copy the tree" in release.stderr
    nowhere = run_cli("fix", tmp_path)
    assert nowhere.returncode == 2 and "not inside a sglang, vllm or lmdeploy source tree" in nowhere.stderr


def test_a_fix_that_edits_a_file_outside_the_paths_is_only_shown(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_capture", tmp_path)
    cross = root / MODELS / "cross.py"
    cross.write_text(CROSS_FILE_MODEL)
    before = tree_bytes(root)
    alone = run_cli("fix", "--apply", "--unsafe-fixes", cross)
    # What remains is information (the model has no EAGLE-3 code yet): exit 0 by default.
    assert alone.returncode == 0
    assert "1 finding remains: 1 has only a suggestion to apply by hand" in alone.stderr
    assert tree_bytes(root) == before
    # With the whole folder in scope, the decoder edit both causal LMs need is made once.
    folder = run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    assert folder.returncode == 0, folder.stderr
    leaf = (root / MODELS / "capture_leaf.py").read_text()
    assert leaf == (golden_after("fix_leaf_capture") / MODELS / "capture_leaf.py").read_text()
    assert "aux_hidden_states=aux_hidden_states" in cross.read_text()
    assert run_cli("check", root / MODELS).returncode == 0


def test_check_json_carries_fix_data(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_embed", tmp_path)
    done = run_cli("check", "--format", "json", root / MODELS)
    findings = {f["class"]: f for f in json.loads(done.stdout)["findings"]}
    safe, unsafe = findings["EmbedLeafForCausalLM"]["fix"], findings["GuessedHeadForCausalLM"]["fix"]
    assert safe["applicability"] == "safe"
    assert unsafe["applicability"] == "unsafe"
    assert "not built from a known LM-head class" in unsafe["description"]
    assert safe["diff"].startswith("--- ") and "+    def get_embed_and_head(self):" in safe["diff"]
    assert "+    def set_embed_and_head(self, embed, head):" in safe["diff"]


def test_check_json_display_only_fix_for_an_uncommon_decoder(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_capture", tmp_path)
    path = root / MODELS / "capture_pp.py"
    path.write_text(path.read_text().replace("for i in range(self.start_layer, self.end_layer):", "for i in range(len(self.layers)):"))
    done = run_cli("check", "--format", "json", path)
    (finding,) = json.loads(done.stdout)["findings"]
    fix = finding["fix"]
    # The model has no EAGLE-3 code: implementing it is all or nothing, so no half in code.
    assert finding["code"] == "E3L020" and fix["applicability"] == "display-only"
    assert "implement EAGLE-3 by hand" in fix["description"] and "for i in range(self.start_layer" in fix["description"]
    assert fix["diff"] == ""
    assert "no automatic fix: `PPModel.forward` has no `for i in range(self.start_layer" in finding["message"]
    before = path.read_text()
    applied = run_cli("fix", "--apply", "--unsafe-fixes", path)
    assert applied.returncode == 0 and path.read_text() == before


def test_the_offer_to_implement_eagle3_is_the_planners_decision(tmp_path: Path) -> None:
    # The common shape: the check offers the unsafe fix, and `fix --unsafe-fixes` has it.
    root = copy_before("fix_leaf_capture", tmp_path)
    path = root / MODELS / "capture_pp.py"
    (finding,) = json.loads(run_cli("check", "--format", "json", path).stdout)["findings"]
    assert finding["code"] == "E3L020" and finding["fix"]["applicability"] == "unsafe"
    assert finding["message"].endswith("an unsafe fix implements it (`eagle3lint fix --unsafe-fixes` shows it)")
    assert run_cli("fix", "--unsafe-fixes", path).stdout.startswith("--- ")
    # A shape only the parsed decoder shows wrong (its text passes the first, textual test):
    # no offer, the planner's reason instead, and `fix` writes nothing.
    path.write_text(path.read_text().replace("        return hidden_states\n\n\nclass PPForCausalLM", "        return self.norm(hidden_states)\n\n\nclass PPForCausalLM"))
    (finding,) = json.loads(run_cli("check", "--format", "json", path).stdout)["findings"]
    assert finding["fix"]["applicability"] == "display-only"
    assert "unsafe fix" not in finding["message"]
    assert "no automatic fix: `PPModel.forward` does not end with `return hidden_states`" in finding["message"]
    before = path.read_text()
    applied = run_cli("fix", "--apply", "--unsafe-fixes", path)
    assert applied.returncode == 0 and path.read_text() == before


def _imports_libcst(*args: str) -> bool:
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('LIBCST=%s' % ('libcst' in sys.modules)))\n"
        "from eagle3lint.cli import main\n"
        f"main({list(args)!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    return "LIBCST=True" in done.stderr


def test_check_never_imports_libcst() -> None:
    # Without the cache: a stored JSON result holds its rendered diffs (a second run of this
    # test would find the first's and render nothing).
    models = str(REPO / "fixtures" / "fix_wrapper" / "before" / MODELS)
    assert not _imports_libcst("check", "--no-cache", models)
    assert _imports_libcst("check", "--no-cache", "--format", "json", models)  # renders the fix diffs
    clean = str(REPO / "fixtures" / "fix_wrapper" / "after" / MODELS)
    assert not _imports_libcst("fix", "--no-cache", clean)  # nothing to edit, nothing parsed with libcst


WRAPPER_OF_A_LEAF_TO_FIX = '''\
from torch import nn

from sglang.srt.models.embed_leaf import EmbedLeafForCausalLM


class OuterForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = EmbedLeafForCausalLM(config.text_config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)


EntryClass = OuterForConditionalGeneration
'''


def test_a_fix_that_enables_another_is_followed_by_a_second_pass(tmp_path: Path) -> None:
    """Fixing the inner causal LM turns its wrapper's "missing" into "does not delegate", which
    the delegation template fixes in a second pass of the same run."""
    root = copy_before("fix_leaf_embed", tmp_path)
    outer = root / MODELS / "outer.py"
    outer.write_text(WRAPPER_OF_A_LEAF_TO_FIX)
    check = run_cli("check", outer)
    assert "E3L001 error: `OuterForConditionalGeneration` lacks `get_embed_and_head`" in check.stdout
    done = run_cli("fix", "--apply", root / MODELS)
    assert done.returncode == 1  # the guessed head (unsafe) remains
    assert "Fixed 2 of 3 findings in 2 files." in done.stderr  # the leaf, then the wrapper (with its companion)
    text = outer.read_text()
    assert "    def get_embed_and_head(self):\n        return self.language_model.get_embed_and_head()\n" in text
    assert "    def set_embed_and_head(self, embed, head):\n        self.language_model.set_embed_and_head(embed, head)\n" in text
    assert text.index("def set_eagle3_layers_to_capture") < text.index("def get_embed_and_head")
    again = run_cli("fix", root / MODELS)
    assert again.stdout == ""  # only the unsafe guessed head is left, and it is not shown
    assert "1 finding remains: 1 needs --unsafe-fixes." in again.stderr


def test_nothing_to_fix_is_said_and_counts_what_the_baseline_hides(tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    wrote = run_cli("check", root / MODELS, "--write-baseline", tmp_path / "base.json", cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
    done = run_cli("fix", root / MODELS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "Nothing to fix: no findings (2 in the baseline)." in done.stderr
    # `--no-baseline` is the same flag as `check`'s: the baseline set aside, every finding fixed.
    aside = run_cli("fix", root / MODELS, "--no-baseline", cwd=tmp_path)
    assert aside.returncode == 1, aside.stderr
    assert aside.stdout.count("+    def ") == 4
    assert "Would fix 2 of 2 findings in 1 file" in aside.stderr
    assert "in the baseline" not in aside.stderr


def test_verify_measures_without_speculation_under_its_own_flag() -> None:
    """verify's run without speculation is `--no-speedup-baseline`; `--no-baseline` is the
    findings baseline's flag only (`check`, `fix`), never taken for it."""
    from click.testing import CliRunner

    from eagle3lint.commands.fix import fix
    from eagle3lint.commands.verify import verify

    names = {opt for p in fix.params for opt in (*p.opts, *p.secondary_opts)}
    assert {"--no-baseline", "--speedup-baseline", "--no-speedup-baseline"} <= names
    (flag,) = [p for p in fix.params if "--no-baseline" in p.opts]
    assert flag.name == "no_baseline"
    refused = CliRunner().invoke(verify, ["--model-path", "t", "--no-baseline"])
    assert refused.exit_code == 2 and "No such option" in refused.output


def test_a_dry_runs_diff_carries_git_prefixes_and_git_apply_takes_it_as_it_is(tmp_path: Path) -> None:
    """`--- a/...` and `+++ b/...`: `git apply fix.patch` applies it without `-p0`."""
    root = copy_before("fix_wrapper", tmp_path)
    dry = run_cli("fix", ".", cwd=root)
    assert dry.returncode == 1, dry.stderr
    assert dry.stdout.startswith(f"--- a/{MODELS}/vl_wrapper.py\n+++ b/{MODELS}/vl_wrapper.py\n")
    (tmp_path / "fix.patch").write_text(dry.stdout)
    applied = subprocess.run(["git", "apply", str(tmp_path / "fix.patch")], cwd=root, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (root / MODELS / "vl_wrapper.py").read_bytes() == (golden_after("fix_wrapper") / MODELS / "vl_wrapper.py").read_bytes()
