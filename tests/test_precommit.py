"""The pre-commit hooks, for real: ``pre-commit try-repo`` on this checkout, run in a git repo that
holds a small SGLang-shaped tree. Plus the hook's file-list behaviour without pre-commit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, SGLANG_SKELETON, make_tree, run_cli

RUNNER = """\
class ModelRunner:
    def __init__(self, model, layer_ids):
        self.model = model
        self.layer_ids = layer_ids

    def initialize(self):
        self.model.set_eagle3_layers_to_capture(self.layer_ids)
"""

GOOD_MODEL = """\
from torch import nn


class LlamaForCausalLM(nn.Module):
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.layers_to_capture = layer_ids


EntryClass = LlamaForCausalLM
"""

# A wrapper around a language model that has EAGLE-3, not delegating it: broken (the seed's crash).
NEW_MODEL = """\
from torch import nn

from sglang.srt.models.llama import LlamaForCausalLM


class FooForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = LlamaForCausalLM(config)

    def forward(self, input_ids):
        return input_ids


EntryClass = FooForCausalLM
"""

FIXED_MODEL = NEW_MODEL.replace(
    "    def forward(self, input_ids):",
    "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
    "        self.language_model.set_eagle3_layers_to_capture(layer_ids)\n\n"
    "    def forward(self, input_ids):",
)

NEW_FILE = "sglang/srt/models/foo.py"
ENGINE_FILES: dict[str, str | bytes] = {
    **SGLANG_SKELETON,
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/model_runner.py": RUNNER,
    "sglang/srt/models/llama.py": GOOD_MODEL,
    "README.md": "# a fork\n",
    "tools/release_notes.py": "print('not engine code')\n",
}


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=eagle3lint tests", "-c", "user.email=tests@invalid", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True,
    )


def make_fork(root: Path) -> Path:
    make_tree(root, ENGINE_FILES)
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "engine", cwd=root)
    return root


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's working tree (tracked and new files, as they are now) committed into a
    scratch repository, once per session: try-repo on a dirty tree would test its tracked files
    only (new files not yet added would be missing) and make a temporary clone on every call."""
    snapshot = tmp_path_factory.mktemp("eagle3lint-hook-repo")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / rel)
    git("init", "-q", cwd=snapshot)
    git("add", "-A", cwd=snapshot)
    git("commit", "-q", "-m", "snapshot", cwd=snapshot)
    return snapshot


def try_repo(hook_repo: Path, fork: Path, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
    """try-repo always installs the hook into a store of its own, thrown away afterwards (a shared
    PRE_COMMIT_HOME does not carry its venv over): each call costs one venv build."""
    home = fork.parent / "pre-commit-home"  # keep the user's pre-commit cache out of it
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)  # the hook must run the package installed in its own venv
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--verbose", "--files", *files],
        cwd=fork, env=env, capture_output=True, text=True, timeout=600,
    )


def test_hook_definitions_match_the_cli() -> None:
    import yaml  # comes with pre-commit

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["eagle3lint"]["entry"] == "eagle3lint check"
    assert hooks["eagle3lint-fix"]["entry"] == "eagle3lint fix --apply"
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types"] == ["python"]
        assert hook["require_serial"] is True


@pytest.mark.release  # try-repo installs the hook's venv from the package index
def test_hook_fails_on_a_new_model_without_the_interface_and_passes_once_fixed(
    hook_repo: Path, tmp_path: Path
) -> None:
    fork = make_fork(tmp_path / "fork")
    (fork / NEW_FILE).write_text(NEW_MODEL)
    failed = try_repo(hook_repo, fork, "eagle3lint", NEW_FILE)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"{NEW_FILE}:6:1: E3L004 [*] error: `FooForCausalLM` does not delegate `set_eagle3_layers_to_capture`" in failed.stdout
    assert "1 error" in failed.stdout
    assert "[*] 1 fixable with `eagle3lint fix --apply`." in failed.stdout  # the blocked commit's way out

    (fork / NEW_FILE).write_text(FIXED_MODEL)
    passed = try_repo(hook_repo, fork, "eagle3lint", NEW_FILE)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "E3L001" not in passed.stdout
    assert "no findings" in passed.stdout  # it did analyse the model


@pytest.mark.release
def test_hook_passes_at_once_when_no_engine_file_is_touched(
    hook_repo: Path, tmp_path: Path
) -> None:
    fork = make_fork(tmp_path / "fork")
    # A broken engine file that any analysis reads (the contract scan parses it).
    (fork / "sglang/srt/model_executor/broken_runner.py").write_text("def f(model):\n    model.set_eagle3_layers_to_capture(\n")
    done = try_repo(hook_repo, fork, "eagle3lint", "README.md", "tools/release_notes.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout
    assert "broken_runner.py" not in done.stdout


# --- the same behaviour without pre-commit (fast) ---------------------------------------------


def test_files_outside_any_engine_exit_zero_without_analysing(tmp_path: Path) -> None:
    fork = make_tree(tmp_path / "fork", ENGINE_FILES)
    # A broken engine file that any analysis reads (the contract scan parses it).
    (fork / "sglang/srt/model_executor/broken_runner.py").write_text("def f(model):\n    model.set_eagle3_layers_to_capture(\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    quiet = run_cli("check", "tools/release_notes.py", "README.md", cwd=fork, env=env)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    told = run_cli("check", "-v", "tools/release_notes.py", cwd=fork, env=env)
    assert told.returncode == 0 and told.stdout == ""
    assert told.stderr.strip() == "eagle3lint: no model or engine file among the given files; nothing to check"
    # The same tree is analysed as soon as one engine file is among them: the broken file shows.
    analysed = run_cli("check", "tools/release_notes.py", "sglang/srt/models/llama.py", cwd=fork, env=env)
    assert analysed.returncode == 2 and "broken_runner.py" in analysed.stderr


def test_file_list_reports_only_the_engine_files_given(tmp_path: Path) -> None:
    fork = make_tree(tmp_path / "fork", ENGINE_FILES)
    make_tree(fork, {NEW_FILE: NEW_MODEL, "sglang/srt/models/bar.py": NEW_MODEL.replace("Foo", "Bar")})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = run_cli("check", "README.md", NEW_FILE, cwd=fork, env=env)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"{NEW_FILE}:6:1: E3L004 [*] error: `FooForCausalLM`")
    assert "BarForCausalLM" not in done.stdout


def test_a_folder_outside_any_engine_is_still_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    done = run_cli("check", tmp_path / "plain")
    assert done.returncode == 2 and "not inside a sglang, vllm or lmdeploy source tree" in done.stderr


def test_a_changed_engine_call_site_widens_the_check_to_every_model(tmp_path: Path) -> None:
    import shutil

    from tests.helpers import FIXTURES

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    runner = tree / "sglang/srt/model_executor/model_runner.py"
    runner.write_text(runner.read_text() + "\n    def draft_hook(self):\n        self.model.get_hot_token_id()\n")
    done = run_cli("check", runner, cwd=tree)
    assert "touches the engine's EAGLE-3 calls; checking every model" in done.stderr
    assert done.returncode == 1 and "MissingForCausalLM" in done.stdout
    # An engine file that does not touch the interface keeps the narrow scope.
    other = tree / "sglang/srt/model_executor/unrelated.py"
    other.write_text("def helper():\n    return 1\n")
    quiet = run_cli("check", other, cwd=tree)
    assert quiet.returncode == 0 and "checking every model" not in quiet.stderr


SOME_MODEL = """\
from torch import nn


class MyForCausalLM(nn.Module):
    def forward(self, input_ids):
        return input_ids


EntryClass = MyForCausalLM
"""


@pytest.mark.parametrize("fmt", ["concise", "github", "full", "json", "sarif"])
def test_a_model_file_outside_any_engine_is_the_same_usage_error_in_every_format(tmp_path: Path, fmt: str) -> None:
    """A new user's first try: never a silent pass for a model file the tool cannot check."""
    (tmp_path / "some_model.py").write_text(SOME_MODEL)
    (tmp_path / "notes.md").write_text("# notes\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = run_cli("check", "--format", fmt, "some_model.py", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert "eagle3lint: error: some_model.py: not inside a sglang, vllm or lmdeploy source tree" in done.stderr
    if fmt in ("concise", "github"):  # the hook's formats: named among files that are not code
        mixed = run_cli("check", "--format", fmt, "notes.md", "some_model.py", cwd=tmp_path, env=env)
        assert mixed.returncode == 2 and "some_model.py: not inside" in mixed.stderr


def test_what_looks_like_a_model_file_and_what_does_not(tmp_path: Path) -> None:
    from eagle3lint.fetch.file_scope import model_like_files

    files = make_tree(tmp_path, {
        "wrapper.py": "class FooForConditionalGeneration(Base):\n    pass\n",
        "setter_only.py": "class Foo:\n    def set_eagle3_layers_to_capture(self, ids):\n        pass\n",
        "draft.py": "class LlamaEagle3Head:\n    pass\n",
        "entry.py": "EntryClass = [A, B]\n",
        "helper.py": "from torch import nn\n\n\nclass Helper(nn.Module):\n    pass\n",
        "script.py": "print('ForCausalLM')\n",
        "README.md": "class FooForCausalLM:\n",
        "binary.py": b"\xff\xfe\x00\nclass BarForCausalLM:\n",  # not UTF-8: read all the same
    })
    names = sorted(p.name for p in model_like_files(tuple(sorted(files.iterdir()))))
    assert names == ["binary.py", "draft.py", "entry.py", "setter_only.py", "wrapper.py"]


def test_files_that_are_clearly_not_model_files_stay_quiet(tmp_path: Path) -> None:
    make_tree(tmp_path, {"tests/helper.py": "from torch import nn\n\n\nclass Helper(nn.Module):\n    pass\n", "setup.py": "x = 1\n"})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for fmt in ("concise", "github"):
        done = run_cli("check", "--format", fmt, "tests/helper.py", "setup.py", cwd=tmp_path, env=env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    # The fixer's hook answers alike: quiet for these, the usage error for a model file.
    assert run_cli("fix", "tests/helper.py", cwd=tmp_path, env=env).returncode == 0
    (tmp_path / "some_model.py").write_text(SOME_MODEL)
    refused = run_cli("fix", "some_model.py", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "some_model.py: not inside a sglang, vllm or lmdeploy source tree" in refused.stderr
