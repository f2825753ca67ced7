"""Bad input: a clear per-file message, the rest still checked, never a traceback."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import BASIC_FINDINGS, FIXTURES, run_cli, run_json


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "t")
    return tmp_path / "t"


def _models(tree: Path) -> Path:
    return tree / "sglang/srt/models"


def test_syntax_error_is_reported_and_the_rest_checked(tree: Path) -> None:
    (_models(tree) / "broken.py").write_text("class Broken(:\n    pass\n")
    code, data = run_json("check", tree)
    assert code == 2
    (error,) = data["errors"]
    assert error["path"].endswith("broken.py")
    assert "syntax error at line 1" in error["message"]
    assert {f["class"] for f in data["findings"]} >= {"MissingForCausalLM", "WrapperAttrForConditionalGeneration"}
    done = run_cli("check", tree)
    assert "broken.py: error: syntax error" in done.stderr
    assert "Traceback" not in done.stderr


# Each needs the Python named: on an older one it is a syntax error that says so.
NEWER_SYNTAX = [
    ("pep695_alias.py", "type Alias = list[int]\n", (3, 12)),
    ("pep695_function.py", "def first[T](items: list[T]) -> T:\n    return items[0]\n", (3, 12)),
    ("pep695_class.py", "class Box[T]:\n    pass\n", (3, 12)),
    ("pep701_fstring.py", 'names = ["a"]\nlabel = f"{", ".join(names)}"\n', (3, 12)),
    ("pep696_default.py", "class Holder[T = int]:\n    pass\n", (3, 13)),
]


def test_syntax_of_a_newer_python_says_the_file_may_need_one(tree: Path) -> None:
    models = _models(tree)
    for name, text, _ in NEWER_SYNTAX:
        (models / name).write_text(text)
    (models / "plain_error.py").write_text("x = = 1\n")
    # An engine file the contract scan reads (it holds a member's name) goes through its parser.
    (tree / "sglang/srt/speculative/typed_worker.py").write_text(
        "def capture(model):\n    type Layers = list[int]\n    model.set_eagle3_layers_to_capture()\n"
    )
    code, data = run_json("check", tree, "--no-cache")
    assert code == 2 and len(data["findings"]) == BASIC_FINDINGS
    messages = {Path(e["path"]).name: e["message"] for e in data["errors"]}
    running = ".".join(map(str, sys.version_info[:3]))
    for name, _, needed in [*NEWER_SYNTAX, ("typed_worker.py", "", (3, 12))]:
        if sys.version_info[:2] >= needed:
            assert name not in messages  # this Python reads it
        else:
            assert messages[name].startswith("syntax error at line ")
            hint = f"; the file may need Python {needed[0]}.{needed[1]} or newer (eagle3lint runs on Python {running})"
            assert messages[name].endswith(hint), messages[name]
    assert messages["plain_error.py"] == "syntax error at line 1, column 5: invalid syntax"


def test_non_utf8_file(tree: Path) -> None:
    (_models(tree) / "latin.py").write_bytes(b"# caf\xe9\nclass X:\n    pass\n")
    code, data = run_json("check", tree)
    assert code == 2
    (error,) = data["errors"]
    assert "not valid utf-8" in error["message"] and "0xe9" in error["message"]
    assert len(data["findings"]) == BASIC_FINDINGS


def test_declared_encoding_is_honoured(tree: Path) -> None:
    (_models(tree) / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\nclass X:\n    pass\n")
    code, data = run_json("check", tree)
    assert data["errors"] == []
    assert code == 1


def test_unreadable_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests run as root, where chmod cannot make a file unreadable: make open() refuse instead.
    import builtins

    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.run.runner import build_index

    secret = _models(tree) / "secret.py"
    secret.write_text("x = 1\n")
    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == str(secret):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("eagle3lint.source.sources.open", refusing_open, raising=False)
    index = build_index(discover_engine([tree]))
    index.load_files([secret, _models(tree) / "missing.py"])
    assert index.errors[str(secret)].message == "cannot be read: permission denied"
    assert index.modules["sglang.srt.models.missing"] is not None


def test_unreadable_path_message() -> None:
    from eagle3lint.common.findings import FileError
    from eagle3lint.source.sources import read_source

    result = read_source("/proc/self/mem-does-not-exist")
    assert isinstance(result, FileError) and "vanished" in result.message
    assert isinstance(read_source(str(FIXTURES)), FileError)


def test_file_vanishing_mid_run_is_an_error_not_a_crash(tree: Path) -> None:
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.run.runner import build_index

    engine = discover_engine([tree])
    index = build_index(engine)
    ghost = _models(tree) / "ghost.py"
    index.load_files([ghost])
    assert "vanished" in index.errors[str(ghost)].message


def test_broken_symlink_and_directory_named_py(tree: Path) -> None:
    (_models(tree) / "dangling.py").symlink_to(tree / "nowhere.py")
    (_models(tree) / "pkg.py").mkdir()
    code, data = run_json("check", tree)
    messages = {e["path"]: e["message"] for e in data["errors"]}
    assert code == 2
    # Named at the link, as what it is (not a file that vanished).
    assert messages[str(_models(tree) / "dangling.py")] == "is a broken symbolic link"
    assert len(data["findings"]) == BASIC_FINDINGS


def test_null_bytes(tree: Path) -> None:
    (_models(tree) / "nul.py").write_bytes(b"x = 1\x00\n")
    code, data = run_json("check", tree)
    assert code == 2 and "nul.py" in data["errors"][0]["path"]
    assert "None" not in data["errors"][0]["message"] and "null bytes" in data["errors"][0]["message"]


def test_missing_path_and_no_engine(tmp_path: Path) -> None:
    done = run_cli("check", tmp_path / "nope")
    assert done.returncode == 2 and "no such file or folder" in done.stderr
    (tmp_path / "plain").mkdir()
    done = run_cli("check", tmp_path / "plain")
    assert done.returncode == 2 and "not inside a sglang, vllm or lmdeploy source tree" in done.stderr
    done = run_cli("check", "--engine-root", tmp_path / "plain", tmp_path / "plain")
    assert done.returncode == 2 and "no sglang, vllm or lmdeploy package found" in done.stderr


def test_no_installed_engine(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = run_cli("check", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "no PATH given and no installed sglang, vllm or lmdeploy package found" in done.stderr


def test_bad_release_spec() -> None:
    done = run_cli("check", "--release", "sglang-0.5.9")
    assert done.returncode == 2 and "expected NAME==VERSION" in done.stderr
    done = run_cli("check", "--release", "torch==2.0")
    assert done.returncode == 2 and "unknown engine" in done.stderr


@pytest.mark.release  # asks the package index
def test_unknown_release_version_is_a_clear_error(tmp_path: Path) -> None:
    env = {**os.environ, "EAGLE3LINT_CACHE_DIR": str(tmp_path)}
    done = run_cli("check", "--release", "sglang==0.0.0.999", env=env)
    assert done.returncode == 2
    assert "sglang==0.0.0.999" in done.stderr and "Traceback" not in done.stderr


def test_check_never_imports_analysed_code(tree: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported.marker"
    bomb = (
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('imported')\n"
        "raise SystemExit('eagle3lint imported a model file')\n"
        "class BombForCausalLM:\n"
        "    def __init__(self):\n"
        "        self.lm_head = None\n"
        "EntryClass = BombForCausalLM\n"
    )
    (_models(tree) / "bomb.py").write_text(bomb)
    (tree / "sglang/srt/model_executor/bomb_runner.py").write_text(bomb.replace("BombForCausalLM", "Runner") + "\ndef f(model):\n    model.set_eagle3_layers_to_capture()\n")
    (tree / "sglang/__init__.py").write_text(bomb)
    code, data = run_json("check", tree)
    assert not marker.exists()
    assert code == 1
    assert "BombForCausalLM" in {f["class"] for f in data["findings"]}
    assert not [m for m in sys.modules if m.startswith("sglang")]


def test_symlink_loop_and_named_pipe_are_per_file_errors(tree: Path) -> None:
    models = _models(tree)
    (models / "zz_l2.py").symlink_to(models / "zz_l1.py")
    (models / "zz_l1.py").symlink_to(models / "zz_l2.py")
    os.mkfifo(models / "zz_fifo.py")  # reading it would block forever
    code, data = run_json("check", tree, "--no-cache")
    assert code == 2
    messages = {e["path"].rsplit("/", 1)[-1]: e["message"] for e in data["errors"]}
    assert "Too many levels of symbolic links" in messages["zz_l1.py"]
    assert "not a regular file" in messages["zz_fifo.py"]
    assert len(data["findings"]) == BASIC_FINDINGS


def test_paths_outside_the_engine_being_checked_are_usage_errors(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "foo.py").write_text("x = 1\n")
    # Another engine named explicitly, for files of an SGLang tree.
    missing = _models(tree) / "missing.py"
    for command in ("check", "fix"):
        done = run_cli(command, "--engine", "vllm", missing)
        assert done.returncode == 2 and "in a sglang tree, not vllm" in done.stderr
    # A folder outside the engine given with --engine-root.
    done = run_cli("check", "--engine-root", tree / "sglang", outside)
    assert done.returncode == 2 and "not inside the sglang tree being checked" in done.stderr
    # Structured output always gets a document or an error, never empty output.
    done = run_cli("check", outside / "foo.py", "--format", "sarif")
    assert done.returncode == 2 and "not inside a sglang, vllm or lmdeploy source tree" in done.stderr


@pytest.mark.release
def test_absolute_path_outside_a_release_is_a_usage_error(tmp_path: Path) -> None:
    from tests.helpers import release_root

    release_root("sglang==0.5.9")
    done = run_cli("check", "--release", "sglang==0.5.9", tmp_path)
    assert done.returncode == 2 and "not inside the sglang tree being checked (sglang==0.5.9)" in done.stderr


@pytest.mark.release
def test_ctrl_c_during_a_cold_check_exits_130_and_leaves_no_worker(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time
    from signal import SIGINT

    from tests.helpers import REPO, release_root

    release_root("sglang==0.5.23")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "eagle3lint", "check", "--no-cache", "--release", "sglang==0.5.23", "sglang/srt/models"]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children: set[int] = set()
    deadline = time.monotonic() + 120  # generous: the workers appear within the first second
    while not children and process.poll() is None and time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True).stdout.split()
        children = {int(pid) for pid in found}
        time.sleep(0.02)
    assert children, "the check never started its parse workers"
    process.send_signal(SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    # Workers die with the parent; a loaded machine may take its time to reap them.
    deadline = time.monotonic() + 120
    while (left := [pid for pid in children if Path(f"/proc/{pid}").exists()]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []


def test_a_broken_symbolic_link_is_said_to_be_one(tmp_path: Path) -> None:
    from eagle3lint.common.findings import FileError
    from eagle3lint.source.sources import read_source

    link = tmp_path / "gone.py"
    link.symlink_to(tmp_path / "nowhere.py")
    result = read_source(str(link))
    assert isinstance(result, FileError) and result.message == "is a broken symbolic link"


# ---- line endings and whitespace the ast sees differently (robustness round 3) ------------------

ROUND3 = Path(__file__).resolve().parent / "data" / "round3"
# The round-3 inputs wrap `sglang.srt.models.llama.LlamaForCausalLM`: here, a leaf model's subclass.
LLAMA = "from sglang.srt.models.leaf import LeafForCausalLM\n\n\nclass LlamaForCausalLM(LeafForCausalLM):\n    pass\n\n\nEntryClass = LlamaForCausalLM\n"
WRAPPERS = {"cr_only_wrapper.py": "ZzCrForCausalLM", "formfeed_wrapper.py": "ZzFfForCausalLM"}


def _drop_round3_inputs(models: Path) -> None:
    for name in WRAPPERS:
        shutil.copy(ROUND3 / f"{name}.txt", models / name)


def test_cr_line_endings_and_form_feeds_take_down_nothing(tmp_path: Path) -> None:
    from tests.fix_helpers import MODELS, copy_before

    root = copy_before("fix_wrapper", tmp_path)
    models = root / MODELS
    (models / "llama.py").write_text(LLAMA)
    _drop_round3_inputs(models)
    cr_before = (models / "cr_only_wrapper.py").read_bytes()
    assert b"\n" not in cr_before and b"\x0c    def forward" in (models / "formfeed_wrapper.py").read_bytes()

    code, data = run_json("check", models)
    assert code == 1 and data["errors"] == []
    fixable = {f["class"] for f in data["findings"] if f.get("fix")}
    assert fixable >= set(WRAPPERS.values())
    done = run_cli("models", models)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    assert all(name in done.stdout for name in WRAPPERS.values())
    full = run_cli("check", "--format", "full", models)
    assert "Traceback" not in full.stderr
    # The source line shown is the line the ast numbers: `str.splitlines` would have shown the
    # blank line a form feed makes of line 5, and a CR-only file is not one long line.
    assert "6 | class ZzCrForCausalLM(nn.Module):" in full.stdout
    assert "6 | class ZzFfForCausalLM(nn.Module):" in full.stdout
    # The fix diff shows the form feed in its line, escaped, as it shows any control character.
    assert "\\x0c    def forward(self" in full.stdout and "\x0c" not in full.stdout

    done = run_cli("fix", "--apply", models)
    assert done.returncode == 0, done.stderr
    assert " not fixed: " not in done.stderr and "Traceback" not in done.stderr
    cr_after = (models / "cr_only_wrapper.py").read_bytes()
    assert b"\n" not in cr_after and b"\r    def set_eagle3_layers_to_capture(self, layer_ids=None):\r" in cr_after
    assert cr_after.startswith(cr_before[: cr_before.index(b"EntryClass")].rstrip(b"\r"))  # members added at the end
    formfeed_after = (models / "formfeed_wrapper.py").read_bytes()
    assert b"\x0c\nclass ZzFfForCausalLM" in formfeed_after and b"\x0c    def forward" in formfeed_after
    assert b"def get_embed_and_head(self):" in formfeed_after
    again = run_cli("fix", models)
    assert (again.returncode, again.stdout) == (0, "")


def test_an_internal_error_editing_one_file_costs_that_file_s_fixes_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import eagle3lint.fix.apply
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.run.fix_session import prepare_fixes
    from eagle3lint.run.runner import run_check
    from tests.fix_helpers import MODELS, copy_before

    root = copy_before("fix_wrapper", tmp_path)
    models = root / MODELS
    (models / "llama.py").write_text(LLAMA)
    _drop_round3_inputs(models)
    real = eagle3lint.fix.apply.apply_edits

    def failing(path: str, *args: Any, **kwargs: Any) -> str:
        if path.endswith("cr_only_wrapper.py"):  # as the CR-only file once did
            raise IndexError("list index out of range")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(eagle3lint.fix.apply, "apply_edits", failing)
    outcome = prepare_fixes(run_check(discover_engine([models]), [models]), [models])
    assert {Path(p).name for p in outcome.changes} == {"formfeed_wrapper.py", "vl_wrapper.py"}
    assert {r.reason for r in outcome.rejections} == {
        "cr_only_wrapper.py: cannot be edited: internal error (please report): IndexError: list index out of range"
    }


@pytest.mark.release
def test_round3_inputs_in_a_real_sglang_tree_take_down_nothing(tmp_path: Path) -> None:
    """Dropped into SGLang 0.5.9's models folder, the CR-only file once took down `--format json`
    and `full`, `models` and `fix` for the whole tree."""
    from tests.fix_helpers import MODELS
    from tests.helpers import release_root

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)  # the fixer replaces files, never writes into them
        except OSError:
            shutil.copy2(src, dst)

    tree = tmp_path / "sglang-0.5.9"
    shutil.copytree(release_root("sglang==0.5.9"), tree / "sglang", copy_function=link_or_copy)
    models = tree / MODELS
    _drop_round3_inputs(models)
    code, data = run_json("check", "--no-cache", models)
    assert code == 1 and data["errors"] == []
    assert {f["class"] for f in data["findings"] if f.get("fix")} >= set(WRAPPERS.values())
    assert len({m["class"] for m in data["models"]}) > 150  # the rest of the tree is still there
    done = run_cli("models", models)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    full = run_cli("check", "--format", "full", *(models / name for name in WRAPPERS))
    assert "6 | class ZzCrForCausalLM(nn.Module):" in full.stdout and "Traceback" not in full.stderr
    done = run_cli("fix", "--apply", *(models / name for name in WRAPPERS))
    assert done.returncode == 0, done.stderr
    assert b"\n" not in (models / "cr_only_wrapper.py").read_bytes()
    assert b"\x0c    def forward" in (models / "formfeed_wrapper.py").read_bytes()
    for name in WRAPPERS:
        assert b"def set_eagle3_layers_to_capture" in (models / name).read_bytes()
