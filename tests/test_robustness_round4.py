"""Robustness round 4 (issue 30): each defect's reproducer, reduced to what the test writes.

The accounts are in ``robustness/round4/DEFECTS.md`` (R4-NN). Release runs are marked ``release``;
the others use the synthetic SGLang tree or files the test writes.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.verify.pair.evaluate import Evaluator, Unresolved
from tests.fakes.model_folders import kimi_drafter_config, write_kimi_pair
from tests.fakes.sglang_tree import write_sglang_tree
from tests.robust_helpers import assert_clean_exit, run_bounded


def run_body(source: str, lenient: bool = False, **env: Any) -> Any:
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return Evaluator(env, lenient=lenient).run(fn.body)


def preflight(*args: str | Path, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    done = run_bounded("preflight", *args, "--format", "json", cwd=cwd)
    assert_clean_exit(done)
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["exit_code"] == done.returncode
    return done.returncode, report


def usage_error(*args: str | Path, cwd: Path | None = None) -> str:
    """The message of a run that must end as a usage error (exit 2, nothing on stdout)."""
    done = run_bounded(*args, cwd=cwd)
    assert_clean_exit(done, 2)
    assert done.stdout == "", done.stdout
    return done.stderr


# ---- R4-01: a drafter num_hidden_layers of 10**30 --------------------------------------------------


def test_r4_01_a_range_too_large_for_len_is_unresolved_not_an_overflow() -> None:
    with pytest.raises(Unresolved, match="too long"):
        run_body("def f(n):\n    return [i for i in range(n)]\n", n=10**30)
    assert run_body("def f(n):\n    x = list(range(n))\n    return 1\n", lenient=True, n=10**400) == 1


def test_r4_01_drafter_layers_of_10_30_are_a_problem_naming_the_key(tmp_path: Path) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    draft = fixed / "srt" / "models" / "llama_eagle3.py"
    draft.write_text(draft.read_text().replace(
        "        self.hot_token_id = None\n",
        "        self.hot_token_id = None\n        self.layers = [i for i in range(config.num_hidden_layers)]\n",
    ))
    target, drafter = write_kimi_pair(tmp_path / "models", drafter={**kimi_drafter_config(), "num_hidden_layers": 10**30})
    code, report = preflight("--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter)
    assert code == 1
    problems = [i["message"] for i in report["items"] if i["status"] == "problem"]
    assert any("config.json" in m and "num_hidden_layers" in m for m in problems), problems


# ---- R4-04 and R4-05: a model path too long for the file system, an empty one -----------------------


@pytest.mark.parametrize("command", [("preflight",), ("verify", "--preflight-only")])
@pytest.mark.parametrize("flag", ["--model-path", "--draft-model-path"])
def test_r4_04_a_path_the_file_system_cannot_hold_is_a_usage_error(tmp_path: Path, command: tuple[str, ...], flag: str) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target, drafter = write_kimi_pair(tmp_path / "models")
    paths = {"--model-path": str(target), "--draft-model-path": str(drafter)}
    for hostile in ("a" * 300, str(tmp_path) + "/b" * 3000):
        args = [*command, "--engine-root", fixed, *(a for k, v in {**paths, flag: hostile}.items() for a in (k, v))]
        message = usage_error(*args)
        assert flag in message and "File name too long" in message, message


@pytest.mark.parametrize("command", [("preflight",), ("verify", "--preflight-only")])
def test_r4_05_an_empty_model_path_is_a_usage_error_not_the_working_directory(tmp_path: Path, command: tuple[str, ...]) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target, drafter = write_kimi_pair(tmp_path / "models")
    # The working directory is a valid target folder: it must not be read in the empty path's place.
    message = usage_error(*command, "--engine-root", fixed, "--model-path", "", "--draft-model-path", drafter, cwd=target)
    assert "--model-path is empty" in message, message
    message = usage_error(*command, "--engine-root", fixed, "--model-path", target, "--draft-model-path", "", cwd=drafter)
    assert "--draft-model-path is empty" in message, message


# ---- R4-06, R4-07: release strings past Python's int limit and past a file name's length -------------


@pytest.mark.parametrize("command", ["check", "models"])
@pytest.mark.parametrize("release", ["sglang==" + "9" * 5000, "sglang==0.5.9," + "9" * 5000, "sglang>=" + "9" * 5000], ids=["pin", "list", "range"])
def test_r4_06_a_version_past_the_int_conversion_limit_is_a_usage_error(command: str, release: str) -> None:
    message = usage_error(command, "--release", release)
    assert "not a release, a list or a PEP 440 range" in message, message[-300:]
    assert len(message) < 1000  # the value is named by its start and length, not written whole


@pytest.fixture()
def fake_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A private release cache and an index that has ``sglang`` 9.9.7 to 9.9.9 only (the releases
    it was asked to download are listed)."""
    from eagle3lint.fetch import pip_index, releases, remote_zip

    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    asked: list[str] = []

    def link(name: str, version: str) -> None:
        if version not in ("9.9.7", "9.9.8", "9.9.9"):
            raise pip_index.NoSuchRelease(f"{name}=={version}: no such release on the package index; the latest is 9.9.9")

    def download(name: str, version: str, wanted: Any, staging: Path, progress: object = None) -> remote_zip.Transfer:
        asked.append(f"{name}=={version}")
        for rel, text in {"sglang/__init__.py": "", "sglang/srt/models/llama.py": "class LlamaForCausalLM:\n    pass\n"}.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_text(text)
        return remote_zip.Transfer()

    monkeypatch.setattr(releases, "_wheel_link", link)
    monkeypatch.setattr(releases, "read_wheel_files", download)
    return asked


def test_r4_07_a_version_too_long_for_a_folder_name_is_asked_of_the_index(fake_index: list[str]) -> None:
    from eagle3lint.fetch.pip_index import NoSuchRelease
    from eagle3lint.fetch.releases import fetch_release

    with pytest.raises(NoSuchRelease, match="no such release on the package index"):
        fetch_release("sglang==0.5." + "1" * 300)
    assert fake_index == []


# ---- R4-12: the release cache folder is a file, or an entry in it is ----------------------------------


def test_r4_12_a_cache_folder_that_is_a_file_is_a_usage_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3lint.common.errors import UsageError
    from eagle3lint.fetch.releases import fetch_release

    blocker = tmp_path / "cache"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(blocker))
    with pytest.raises(UsageError, match=r"release cache .*cache/releases cannot hold sglang==9\.9\.9: Not a directory"):
        fetch_release("sglang==9.9.9")


def test_r4_12_a_release_entry_that_is_a_file_is_replaced(fake_index: list[str], tmp_path: Path) -> None:
    from eagle3lint.fetch.releases import fetch_release

    entry = tmp_path / "cache" / "releases" / "sglang-9.9.9"
    entry.parent.mkdir(parents=True)
    entry.write_text("x\n")
    root = fetch_release("sglang==9.9.9", announce=lambda line: None)
    assert (root / "srt" / "models" / "llama.py").is_file() and fake_index == ["sglang==9.9.9"]


# ---- R4-08, R4-09: launch sizes -----------------------------------------------------------------------


def test_r4_08_a_pp_of_any_size_is_judged_as_pp_on() -> None:
    from eagle3lint.model.launch_options import parse_options
    from eagle3lint.source.rulepack import load_pack

    specs = load_pack("sglang").options
    for size in ("999999", "9" * 5000, "0002"):
        assert parse_options([f"pp={size}"], specs, engine="sglang").values["pp"] == "on"
    assert parse_options(["pp=0001"], specs, engine="sglang").values["pp"] == "off"


def test_r4_08_preflight_pp_999999_is_not_an_option_the_user_did_not_give(tmp_path: Path) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target, drafter = write_kimi_pair(tmp_path / "models")
    done = run_bounded("preflight", "--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter, "--pp", "999999", "--format", "json")
    assert_clean_exit(done)
    assert "--engine-option" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["launch"]["pp"] == 999999


@pytest.mark.parametrize("command", [("verify", "--preflight-only"), ("fix",)])
@pytest.mark.parametrize("tp", ["0", "-1"])
def test_r4_09_verify_and_fix_take_a_tp_of_at_least_1(tmp_path: Path, command: tuple[str, ...], tp: str) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target, drafter = write_kimi_pair(tmp_path / "models")
    done = run_bounded(*command, "--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter, f"--tp={tp}")
    assert_clean_exit(done, 2)
    assert f"Invalid value for '--tp': {tp} is not in the range x>=1" in done.stderr, done.stderr


# ---- R4-02: a target naming no class -----------------------------------------------------------------


@pytest.mark.parametrize("architectures", [None, []], ids=["missing", "empty"])
def test_r4_02_a_target_without_architectures_is_not_works(tmp_path: Path, architectures: list[str] | None) -> None:
    from tests.fakes.model_folders import kimi_target_config

    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    config = kimi_target_config()
    config.pop("architectures")
    if architectures is not None:
        config["architectures"] = architectures
    target, drafter = write_kimi_pair(tmp_path / "models", target=config)
    code, report = preflight("--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter)
    assert (code, report["outcome"]) == (1, "crash"), report["reason"]
    (item,) = [i for i in report["items"] if i["check"] == "target-class"]
    assert item["status"] == "problem" and "architectures" in item["message"] and "config.json" in item["message"]


# ---- R4-11: an option variable the engine cannot read --------------------------------------------------


def test_r4_11_the_runner_variable_is_read_as_vllm_reads_it() -> None:
    from eagle3lint.model.launch_options import options_from_environment, unreadable_environment
    from eagle3lint.source.rulepack import load_pack

    specs = load_pack("vllm").options
    for value, runner in (("1", "v2"), ("0", "v1"), ("2", "v2"), (" 0 ", "v1")):
        assert options_from_environment(specs, {"VLLM_USE_V2_MODEL_RUNNER": value}) == [f"runner={runner}"]
        assert unreadable_environment(specs, {"VLLM_USE_V2_MODEL_RUNNER": value}) == []
    for value in ("garbage", "true", "yes", ""):
        assert unreadable_environment(specs, {"VLLM_USE_V2_MODEL_RUNNER": value}) == [("VLLM_USE_V2_MODEL_RUNNER", value)]


def test_r4_11_preflight_with_an_unreadable_runner_variable_is_a_crash(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.robust_helpers import TIMEOUT_S, cli_env

    target, drafter = write_kimi_pair(tmp_path / "models")
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "preflight", "--engine", "vllm", "--model-path", str(target),
         "--draft-model-path", str(drafter), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=cli_env(VLLM_USE_V2_MODEL_RUNNER="garbage"), timeout=TIMEOUT_S,
    )
    assert_clean_exit(done, 1)
    report = json.loads(done.stdout)
    assert report["outcome"] == "crash" and "VLLM_USE_V2_MODEL_RUNNER='garbage'" in report["reason"], report["reason"]


# ---- R4-14: drafter values the draft class cannot be built with -------------------------------------


def _with_draft_init(fixed: Path, lines: str) -> None:
    """Adds ``lines`` (indented for ``__init__``) to the synthetic draft class's constructor."""
    draft = fixed / "srt" / "models" / "llama_eagle3.py"
    draft.write_text(draft.read_text().replace("        self.hot_token_id = None\n", "        self.hot_token_id = None\n" + lines))


@pytest.mark.parametrize(("value", "error"), [(0, "ZeroDivisionError"), ("x", "TypeError"), ({"a": 1}, "TypeError"), (None, "TypeError")])
def test_r4_14_an_operation_the_constructor_cannot_do_is_a_draft_class_crash(tmp_path: Path, value: Any, error: str) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    _with_draft_init(fixed, "        self.group_size = config.hidden_size // config.fc_groups\n")
    target, drafter = write_kimi_pair(tmp_path / "models", drafter={**kimi_drafter_config(), "fc_groups": value})
    code, report = preflight("--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter)
    assert (code, report["outcome"]) == (1, "crash"), report["reason"]
    (item,) = [i for i in report["items"] if i["check"] == "draft-class"]
    assert item["status"] == "problem" and error in item["message"] and "llama_eagle3.py:" in item["message"], item["message"]


def test_r4_14_a_base_constructors_checks_are_run_too(tmp_path: Path) -> None:
    """``super().__init__`` is the same object's construction: the checks of the attention a base
    builds stay within the evaluator's depth."""
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    draft = fixed / "srt" / "models" / "llama_eagle3.py"
    draft.write_text(draft.read_text().replace("class LlamaForCausalLMEagle3(nn.Module):", '''
class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.head_dim = config.hidden_size // config.fc_groups


class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention(config)


class BaseLayer(Layer):
    def __init__(self, config):
        super().__init__(config)


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = BaseLayer(config)


class LlamaForCausalLMEagle3(nn.Module):'''))
    _with_draft_init(fixed, "        self.model = Model(config)\n")
    target, drafter = write_kimi_pair(tmp_path / "models", drafter={**kimi_drafter_config(), "fc_groups": 0})
    code, report = preflight("--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter)
    assert (code, report["outcome"]) == (1, "crash"), report["reason"]


@pytest.mark.parametrize("key", ["num_attention_heads", "num_key_value_heads", "intermediate_size", "head_dim", "rms_norm_eps", "rope_theta", "rope_scaling"])
def test_r4_14_hostile_drafter_values_are_a_problem_naming_the_key(tmp_path: Path, key: str) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    hostile: dict[str, list[Any]] = {
        "rope_scaling": ["x", [1]], "rms_norm_eps": [{"a": 1}, float("nan"), 10**400], "rope_theta": ["x", -1],
        "num_attention_heads": [0, 10**30], "num_key_value_heads": [{"a": 1}, None],
    }
    for number, value in enumerate(hostile.get(key, [-1, [1]])):
        target, drafter = write_kimi_pair(tmp_path / f"models{number}", drafter={**kimi_drafter_config(), key: value})
        code, report = preflight("--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter)
        problems = [i["message"] for i in report["items"] if i["check"] == "drafter-config" and i["status"] == "problem"]
        assert code == 1 and any(f"`{key}`" in m and "config.json" in m for m in problems), (value, report["reason"])


# ---- R4-03: an invalid value under the key the release's runner reads ----------------------------------


@pytest.mark.release
def test_r4_03_the_value_the_runner_reads_is_validated_wherever_it_is(tmp_path: Path) -> None:
    from tests.helpers import release_root
    from tests.pair_helpers import eagle_ids, write_pair

    release_root("vllm==0.33.0")
    # SpecForge's ids, valid, and beside them the top-level key vLLM's runner reads, garbage.
    target, drafter = write_pair(tmp_path, "llama", drafter={**eagle_ids([1, 15, 28]), "eagle_aux_hidden_state_layer_ids": [10**30]})
    code, report = preflight("--release", "vllm==0.33.0", "--model-path", target, "--draft-model-path", drafter)
    assert (code, report["outcome"]) == (1, "crash"), report["reason"]
    (item,) = [i for i in report["items"] if i["check"] == "layer-ids"]
    assert item["status"] == "problem" and "`eagle_aux_hidden_state_layer_ids` is [a 31-digit integer]" in item["message"], item["message"]


# ---- R4-19: architecture names in Markdown are literal text -------------------------------------------


def test_r4_19_markdown_writes_architecture_names_as_literal_text(tmp_path: Path) -> None:
    import shutil

    from tests.helpers import FIXTURES, run_cli

    tree = tmp_path / "vllm_modern"
    shutil.copytree(FIXTURES / "vllm_modern", tree)
    registry = tree / "vllm" / "model_executor" / "models" / "registry.py"
    hostile = "Evil2*bold*[click me](https://example.invalid/x)`code`_u_"
    registry.write_text(registry.read_text().replace(
        '    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n',
        f'    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),\n    "{hostile}": ("llama", "LlamaForCausalLM"),\n',
    ))
    done = run_cli("models", tree / "vllm", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| `LlamaForCausalLM`")]
    assert r"Evil2\*bold\*\[click me\]\(https://example.invalid/x\)\`code\`\_u\_" in row, row
    assert "[click me](" not in row and "*bold*" not in row


# ---- R4-10: a killed fix's temporary file, in a folder the rerun has nothing left to write in ----------


def test_r4_10_fix_apply_removes_stale_temp_files_of_the_folders_it_reads(tmp_path: Path) -> None:
    import os
    import time

    from eagle3lint.fix.write import STALE_AFTER_S
    from tests.fix_helpers import MODELS, copy_before

    root = copy_before("fix_wrapper", tmp_path)
    models = root / MODELS
    first = run_bounded("fix", "--apply", "--no-cache", models, cwd=root)
    assert_clean_exit(first, 0, 1)
    # What a run killed after its last rename leaves: the whole new text, beside a fixed file.
    stale = models / ".vl_wrapper.py.2p5row4w.eagle3lint-tmp"
    stale.write_text("the new text")
    then = time.time() - 3 * STALE_AFTER_S
    os.utime(stale, (then, then))
    again = run_bounded("fix", "--apply", "--no-cache", models, cwd=root)
    assert_clean_exit(again, 0, 1)
    assert not stale.exists(), again.stderr
    assert ".vl_wrapper.py.2p5row4w.eagle3lint-tmp: removed" in again.stderr


# ---- R4-20: a symbolic link leading outside the given PATHs --------------------------------------------


def test_r4_20_fix_apply_does_not_write_through_a_link_out_of_the_given_paths(tmp_path: Path) -> None:
    import os
    import shutil

    from tests.helpers import FIXTURES

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    models = tree / "sglang" / "srt" / "models"
    outside = tmp_path / "elsewhere" / "wrapper_attr.py"
    outside.parent.mkdir()
    shutil.move(models / "wrapper_attr.py", outside)
    (models / "wrapper_attr.py").symlink_to(outside)
    before = outside.read_text()
    done = run_bounded("fix", "--apply", "--no-cache", models, cwd=tree)
    assert_clean_exit(done, 2)
    assert outside.read_text() == before and (models / "wrapper_attr.py").is_symlink()
    assert "wrapper_attr.py: not written: a symbolic link to " in done.stderr and str(outside) in done.stderr, done.stderr
    assert "outside the given paths" in done.stderr
    # The rest of the tree is fixed; the link's target only with the option that says so.
    assert "Fixed" in done.stderr
    written = run_bounded("fix", "--apply", "--no-cache", "--write-through-links", models, cwd=tree)
    assert_clean_exit(written, 0, 1)
    assert outside.read_text() != before and os.path.islink(models / "wrapper_attr.py")


# ---- R4-18: the pre-flight writes nothing into the working directory -----------------------------------


@pytest.mark.parametrize("command", [("preflight",), ("verify", "--preflight-only")])
def test_r4_18_preflight_in_a_checkpoint_folder_writes_nothing_there(tmp_path: Path, command: tuple[str, ...]) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target, drafter = write_kimi_pair(tmp_path / "models")
    before = sorted(p.name for p in drafter.iterdir())
    done = run_bounded(*command, "--engine-root", fixed, "--model-path", target, "--draft-model-path", ".", cwd=drafter)
    assert_clean_exit(done, 0, 1)
    assert sorted(p.name for p in drafter.iterdir()) == before
    assert not list(tmp_path.rglob(".eagle3lint_cache"))


# ---- R4-16: the evaluator's memory and time bound --------------------------------------------------------

_BOMB = "        _x = list(range(100000))\n        _y = [{elt} for _i in range(99999)]\n"


def test_r4_16_the_evaluator_bounds_what_it_builds_in_all() -> None:
    from eagle3lint.verify.pair.evaluate import Exhausted

    for elt in ("sorted(_x)", "len(sorted(_x))", "list(_x)"):
        body = "def f():\n" + _BOMB.format(elt=elt) + "        return 1\n"
        with pytest.raises(Exhausted, match="builds too much"):
            run_body(body.replace("        ", "    "), lenient=True)
    # What real code builds stays far inside the bound.
    assert run_body("def f(n):\n    return [[i] * 3 for i in range(n)][-1]\n", n=1000) == [999] * 3


def test_r4_16_a_draft_class_building_too_much_is_unknown_with_its_line(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    from tests.robust_helpers import TIMEOUT_S, cli_env

    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    _with_draft_init(fixed, _BOMB.format(elt="sorted(_x)"))
    target, drafter = write_kimi_pair(tmp_path / "models")

    def limit() -> None:  # before the fix this took every byte it could: fail instead
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "preflight", "--engine-root", str(fixed), "--model-path", str(target),
         "--draft-model-path", str(drafter), "--format", "json"],
        capture_output=True, text=True, env=cli_env(), timeout=TIMEOUT_S, preexec_fn=limit,
    )
    assert_clean_exit(done, 1)
    report = json.loads(done.stdout)
    (item,) = [i for i in report["items"] if i["check"] == "draft-class"]
    assert (report["outcome"], item["status"]) == ("unknown", "unknown"), item
    assert "builds too much" in item["message"] and "llama_eagle3.py:" in item["message"], item["message"]


# ---- R4-13: a damaged release entry in the cache -------------------------------------------------------


@pytest.mark.parametrize("damage", ["models-deleted", "truncated", "marker-rewritten"])
def test_r4_13_a_damaged_cache_entry_is_fetched_again(fake_index: list[str], tmp_path: Path, damage: str) -> None:
    import shutil

    from eagle3lint.fetch.releases import fetch_release

    said: list[str] = []
    root = fetch_release("sglang==9.9.9", announce=said.append)
    model = root / "srt" / "models" / "llama.py"
    if damage == "models-deleted":
        shutil.rmtree(root / "srt" / "models")
    elif damage == "truncated":
        model.write_text(model.read_text()[:10])
    else:
        (root.parent / ".eagle3lint-complete").write_text("garbage\n")
    assert fetch_release("sglang==9.9.9", announce=said.append) == root
    assert fake_index == ["sglang==9.9.9", "sglang==9.9.9"] and "again (the cached copy" in said[-1], said
    assert model.read_text() == "class LlamaForCausalLM:\n    pass\n"
    fetch_release("sglang==9.9.9", announce=said.append)  # intact now: used as it is
    assert len(fake_index) == 2


def test_r4_13_a_cached_release_with_no_model_class_is_an_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.robust_helpers import TIMEOUT_S, cli_env

    entry = tmp_path / "cache" / "releases" / "sglang-9.9.9"
    for rel, text in {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "9.9.9"\n', "sglang/srt/__init__.py": ""}.items():
        (entry / rel).parent.mkdir(parents=True, exist_ok=True)
        (entry / rel).write_text(text)
    # An entry of a cache made before manifests (its models folder since deleted); no look-up
    # of its requirements on the index.
    (entry / ".eagle3lint-complete").write_text("sglang==9.9.9\n0\n")
    (entry / ".eagle3lint-no-metadata").write_text("")
    for command in ("check", "models"):
        done = subprocess.run(
            [sys.executable, "-m", "eagle3lint", command, "--release", "sglang==9.9.9"],
            capture_output=True, text=True, cwd=tmp_path, env=cli_env(EAGLE3LINT_CACHE_DIR=str(tmp_path / "cache")), timeout=TIMEOUT_S,
        )
        assert_clean_exit(done, 2)
        assert "no model classes found in sglang 9.9.9" in done.stderr and "damaged" in done.stderr, done.stderr


# ---- R4-15: staging folders a killed fetch left ---------------------------------------------------------


def _locked(path: Path, how: int) -> int:
    import fcntl
    import os

    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, how)
    return fd


def test_r4_15_a_fetch_removes_staging_folders_no_live_run_holds(fake_index: list[str], tmp_path: Path) -> None:
    import fcntl
    import os
    import time

    from eagle3lint.fetch.releases import fetch_release

    releases = tmp_path / "cache" / "releases"
    staging = {
        "same": releases / ".download-sglang-9.9.9-k3j2x9qa",  # the release now fetched: its lock is ours
        "free": releases / ".download-vllm-1.0-ab12cd34",  # another release, no run fetching it
        "live": releases / ".download-vllm-2.0-zz99yy88",  # another release, its fetch still running
        "old": releases / ".download-q1w2e3r4",  # named before staging folders carried their release
        "fresh": releases / ".download-t5y6u7i8",
    }
    for folder in staging.values():
        (folder / "src").mkdir(parents=True)
        (folder / "src" / "half.py").write_text("x = ")
    then = time.time() - 3 * 24 * 3600
    os.utime(staging["old"], (then, then))
    live = _locked(releases / ".vllm-2.0.lock", fcntl.LOCK_EX)  # as a live fetch holds it
    try:
        fetch_release("sglang==9.9.9", announce=lambda line: None)
    finally:
        os.close(live)
    left = {name for name, folder in staging.items() if folder.exists()}
    assert left == {"live", "fresh"}, left
    assert not [p for p in releases.iterdir() if p.name.startswith(".download-sglang")]  # its own staging is gone too


# ---- R4-17: eviction passes over a release another live run reads -----------------------------------------


def test_r4_17_eviction_skips_a_release_another_live_run_reads(fake_index: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from eagle3lint.fetch.releases import fetch_release

    releases = tmp_path / "cache" / "releases"
    held = releases / "sglang-9.9.7"
    (held / "sglang").mkdir(parents=True)
    (held / "sglang" / "__init__.py").write_text("")
    (held / ".eagle3lint-complete").write_text("sglang==9.9.7\n0\n")
    reader = subprocess.Popen(  # another run, reading sglang 9.9.7: it holds the entry's use lock
        [sys.executable, "-c", "import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_SH)\nprint('held', flush=True)\nsys.stdin.read()\n", str(releases / ".sglang-9.9.7.use.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "held"
        monkeypatch.setenv("EAGLE3LINT_MAX_RELEASES", "1")
        fetch_release("sglang==9.9.9", announce=lambda line: None)
        assert (held / ".eagle3lint-complete").exists()  # kept: the other run still reads it
    finally:
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(timeout=60)
    fetch_release("sglang==9.9.8", announce=lambda line: None)
    assert not held.exists()  # that run has ended: the entry is evicted as usual


def test_r4_14_a_builtin_python_refuses_on_the_drafters_values_is_a_crash(tmp_path: Path) -> None:
    """``range(config.num_hidden_layers)`` with ``null``: a TypeError in the constructor."""
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    _with_draft_init(fixed, "        self.layers = [i for i in range(config.num_hidden_layers)]\n")
    target, drafter = write_kimi_pair(tmp_path / "models", drafter={**kimi_drafter_config(), "num_hidden_layers": None})
    code, report = preflight("--engine-root", fixed, "--model-path", target, "--draft-model-path", drafter)
    assert (code, report["outcome"]) == (1, "crash"), report["reason"]
    (item,) = [i for i in report["items"] if i["check"] == "draft-class"]
    assert "TypeError: `range(config.num_hidden_layers)`" in item["message"], item["message"]


def test_r4_19_the_history_table_writes_architecture_names_as_literal_text() -> None:
    import io

    from eagle3lint.model.history_result import Cell, History
    from eagle3lint.report.history import write_markdown

    hostile = "Evil2*bold*[click me](https://example.invalid/x)`code`_u_"
    history = History("vllm", ["vllm==0.1.0"], ["0.1.0"], releases=["0.1.0"])
    history.add("0.1.0", "LlamaForCausalLM", None, ["LlamaForCausalLM", hostile], Cell("supported", "works", ()))
    history.finish()
    out = io.StringIO()
    write_markdown(history, out)
    (row,) = [line for line in out.getvalue().splitlines() if line.startswith("| `LlamaForCausalLM`")]
    assert r"Evil2\*bold\*\[click me\]\(https://example.invalid/x\)\`code\`\_u\_" in row, row
    assert "[click me](" not in row and "*bold*" not in row
