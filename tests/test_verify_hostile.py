"""`verify` on hostile model folders and prompts files: a downloaded checkpoint is untrusted input.

The cases are the round-3 robustness inputs (``robustness/round3/preflight_inputs.py``: deep JSON,
5000-digit integers, ``1e400`` shapes, odd index types, FIFOs, ``config.json`` -> ``/dev/zero``, an
index naming ``/etc/passwd``, escapes in names) and their neighbours, each written by the test.
The CLI runs in a subprocess under a time bound and an address-space limit, so that a regression
fails the test instead of hanging it or eating the shared machine's memory.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.common.escape import line_text
from eagle3lint.engines import knowledge_for
from eagle3lint.run.verify_run import _release_note
from eagle3lint.verify.launch import build_command
from eagle3lint.verify.options import VerifyOptions
from eagle3lint.verify.wait import TerminalProgress
from tests.fakes.harness import fake_launcher, state_path
from tests.fakes.model_folders import write_kimi_pair
from tests.robust_helpers import assert_clean_exit, run_bounded

TARGET = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "vocab_size": 128256, "num_hidden_layers": 32}
DRAFT = {
    "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "vocab_size": 128256,
    "draft_vocab_size": 32000, "num_hidden_layers": 1,
}
D2T = {"d2t": {"dtype": "I64", "shape": [32000], "data_offsets": [0, 8]}}
ESCAPES = "\x1b[2J\x1b]0;PWNED\x07"
# Far above what these runs need (about 100 MB), far below what /dev/zero read whole would take.
_ADDRESS_SPACE = 4 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_ADDRESS_SPACE, _ADDRESS_SPACE))


def run_verify_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = run_bounded("verify", *args, cwd=cwd, preexec_fn=_limit_memory)
    assert_clean_exit(done)
    return done


def preflight_json(target: Path, drafter: Path, *extra: str) -> dict[str, Any]:
    done = run_verify_cli(
        "--engine", "sglang", "--preflight-only", "--model-path", target, "--draft-model-path", drafter, "--format", "json", *extra
    )
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == report["exit_code"]
    return report


def items(report: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [i for i in report["preflight"] if i["check"] == check]


# ---- writing the hostile folders ----------------------------------------------------------------


def folder(base: Path, config: dict[str, Any] | None = None, raw: str | None = None) -> Path:
    path = base / "drafter"
    path.mkdir(parents=True)
    (path / "config.json").write_text(raw if raw is not None else json.dumps(config if config is not None else DRAFT))
    return path


def weights(path: Path, header: bytes, data: bytes = b"\0" * 8, name: str = "model.safetensors") -> Path:
    (path / name).write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def raw_weights(path: Path, data: bytes) -> Path:
    (path / "model.safetensors").write_bytes(data)
    return path


def index(path: Path, obj_or_text: Any) -> Path:
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    (path / "model.safetensors.index.json").write_text(text)
    return path


def replace_with_fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def replace_with_link(path: Path, target: str | Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def deep(depth: int = 100000) -> str:
    return "[" * depth + "]" * depth


def _cfg_fifo(base: Path) -> Path:
    path = folder(base)
    replace_with_fifo(path / "config.json")
    return path


def _cfg_devzero(base: Path) -> Path:
    path = folder(base)
    replace_with_link(path / "config.json", "/dev/zero")
    return path


def _cfg_folder(base: Path) -> Path:
    path = folder(base)
    (path / "config.json").unlink()
    (path / "config.json").mkdir()
    return path


def _cfg_huge(base: Path) -> Path:
    path = folder(base)
    with (path / "config.json").open("r+b") as handle:
        handle.truncate(65 * 1024 * 1024)  # sparse: takes no disk
    return path


def _st_fifo(base: Path) -> Path:
    path = folder(base)
    replace_with_fifo(path / "model.safetensors")
    return path


def _st_devzero(base: Path) -> Path:
    path = folder(base)
    replace_with_link(path / "model.safetensors", "/dev/zero")
    return path


def _st_folder(base: Path) -> Path:
    path = folder(base)
    (path / "model.safetensors").mkdir()
    return path


# (case, builder, check, text the problem's message holds). Every case must end in a pre-flight
# PROBLEM naming the file, not an internal error, a hang or an unbounded read.
CONFIG_CASES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("cfg_deep", lambda b: folder(b, raw=deep()), "nested too deeply"),
    ("cfg_bigint", lambda b: folder(b, raw='{"hidden_size": ' + "9" * 5000 + "}"), "more than 4300 digits"),
    ("cfg_fifo", _cfg_fifo, "a named pipe"),
    ("cfg_devzero", _cfg_devzero, "a device"),
    ("cfg_folder", _cfg_folder, "a folder"),
    ("cfg_huge", _cfg_huge, "larger than 64 MiB"),
    ("cfg_not_object", lambda b: folder(b, raw="[1, 2]"), "not a JSON object"),
    ("cfg_inf_size", lambda b: folder(b, raw='{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 1e400}'), "`hidden_size` is inf"),
    ("cfg_string_size", lambda b: folder(b, DRAFT | {"vocab_size": "128256"}), "`vocab_size` is '128256'"),
    ("cfg_negative_size", lambda b: folder(b, DRAFT | {"draft_vocab_size": -1}), "`draft_vocab_size` is -1"),
    ("cfg_architectures", lambda b: folder(b, DRAFT | {"architectures": {"a": 1}}), "`architectures` is an object"),
]
WEIGHT_CASES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("st_deep", lambda b: weights(folder(b), deep().encode()), "nested too deeply"),
    ("st_inf_shape", lambda b: weights(folder(b), b'{"d2t": {"dtype": "I64", "shape": [1e400], "data_offsets": [0, 8]}}'), "shape is [inf]"),
    ("st_inf_offset", lambda b: weights(folder(b), b'{"d2t": {"dtype": "I64", "shape": [32000], "data_offsets": [0, 1e999]}}'), "data_offsets is [0, inf]"),
    ("st_bigint", lambda b: weights(folder(b), b'{"d2t": {"dtype": "I64", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 8]}}'), "more than 4300 digits"),
    ("st_float_dim", lambda b: weights(folder(b), b'{"d2t": {"dtype": "I64", "shape": [32000.5], "data_offsets": [0, 8]}}'), "shape is [32000.5]"),
    ("st_entry_number", lambda b: weights(folder(b), b'{"d2t": 5}'), "5, not an object"),
    ("st_header_cut", lambda b: raw_weights(folder(b), struct.pack("<Q", 100) + b"{}"), "header cut short"),
    ("st_header_length", lambda b: raw_weights(folder(b), struct.pack("<Q", 2**40) + b"{}"), "is not plausible"),
    ("st_fifo", _st_fifo, "a named pipe"),
    ("st_devzero", _st_devzero, "a device"),
    ("st_folder", _st_folder, "a folder"),
    ("idx_int", lambda b: index(folder(b), {"weight_map": {"a": 5}}), "mapped to 5, not a file name"),
    ("idx_mixed", lambda b: index(folder(b), {"weight_map": {"a": 5, "b": "x.safetensors"}}), "mapped to 5"),
    ("idx_list_value", lambda b: index(folder(b), {"weight_map": {"a": ["x"]}}), "mapped to ['x']"),
    ("idx_deep", lambda b: index(folder(b), deep()), "nested too deeply"),
    ("idx_not_object", lambda b: index(folder(b), "5"), "not a safetensors index"),
    ("idx_map_list", lambda b: index(folder(b), {"weight_map": ["x.safetensors"]}), "without a `weight_map` object"),
    ("idx_outside", lambda b: index(folder(b), {"weight_map": {"a": "/etc/passwd"}}), "'/etc/passwd', which is not a file inside the model folder"),
    ("idx_dotdot", lambda b: index(folder(b), {"weight_map": {"a": "../target/model.safetensors"}}), "which is not a file inside the model folder"),
]


def _target(base: Path) -> Path:
    path = base / "target"
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(TARGET))
    weights(path, json.dumps(D2T).encode())  # what idx_dotdot names: a valid file, outside
    return path


@pytest.mark.parametrize(("case", "build", "text"), CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_a_hostile_config_json_is_a_problem_naming_it(tmp_path: Path, case: str, build: Callable[[Path], Path], text: str) -> None:
    drafter = build(tmp_path)
    report = preflight_json(_target(tmp_path), drafter)
    problems = [i for i in items(report, "drafter-config") if i["status"] == "problem"]
    assert problems, report["preflight"]
    assert any(str(drafter / "config.json") in i["message"] and text in i["message"] for i in problems), problems
    assert report["verdict"]["status"] == "preflight-failed" and report["exit_code"] == 1


@pytest.mark.parametrize(("case", "build", "text"), WEIGHT_CASES, ids=[c[0] for c in WEIGHT_CASES])
def test_hostile_weights_are_a_problem_naming_the_file(tmp_path: Path, case: str, build: Callable[[Path], Path], text: str) -> None:
    drafter = build(tmp_path)
    report = preflight_json(_target(tmp_path), drafter)
    (weight,) = items(report, "drafter-weights")
    assert (weight["status"], weight["impact"]) == ("problem", "crash"), weight
    assert weight["message"].startswith(str(drafter / "model.safetensors")), weight
    assert text in weight["message"], weight


def test_an_index_naming_a_file_outside_the_folder_is_not_read(tmp_path: Path) -> None:
    drafter = index(weights(folder(tmp_path), json.dumps(D2T).encode()), {"weight_map": {"a": "/etc/passwd"}})
    done = run_verify_cli("--engine", "sglang", "--preflight-only", "--model-path", _target(tmp_path), "--draft-model-path", drafter)
    assert "/etc/passwd" in done.stdout
    # Before, the first 8 bytes of /etc/passwd were printed as a "header length".
    assert "header length" not in done.stdout


def test_a_link_to_a_regular_file_outside_the_folder_is_skipped_unread(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    drafter = folder(tmp_path)
    (drafter / "model.safetensors").symlink_to(secret)
    report = preflight_json(_target(tmp_path), drafter)
    (weight,) = items(report, "drafter-weights")
    assert weight["status"] == "skipped" and "outside the model folder: not read" in weight["message"], weight
    assert "header length" not in json.dumps(report)


def test_links_inside_the_folder_and_a_hugging_face_cache_snapshot_are_read(tmp_path: Path) -> None:
    inside = folder(tmp_path / "inside")
    (inside / "blobs").mkdir()
    weights(inside / "blobs", json.dumps(D2T).encode(), name="real.safetensors")
    (inside / "model.safetensors").symlink_to("blobs/real.safetensors")
    # The hub cache: snapshots/<rev>/<file> -> ../../blobs/<hash>, outside the snapshot folder.
    repo = tmp_path / "hub" / "models--org--drafter"
    snapshot = repo / "snapshots" / "0123abcd"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "blobs" / "c0nf1g").write_text(json.dumps(DRAFT))
    weights(repo / "blobs", json.dumps(D2T).encode(), name="w3ights")
    (snapshot / "config.json").symlink_to("../../blobs/c0nf1g")
    (snapshot / "model.safetensors").symlink_to("../../blobs/w3ights")
    for drafter in (inside, snapshot):
        report = preflight_json(_target(tmp_path), drafter)
        assert [i["status"] for i in items(report, "drafter-config")] == ["ok"], report["preflight"]
        (weight,) = items(report, "drafter-weights")
        assert weight["status"] == "ok" and "1 tensors" in weight["message"], weight


def test_config_values_of_the_wrong_shape_never_reach_a_message_whole(tmp_path: Path) -> None:
    nested: Any = [1]
    for _ in range(800):  # nested nearly as deep as the parser allows: repr() of it may not finish
        nested = [nested]
    draft = DRAFT | {"eagle_config": {"eagle_aux_hidden_state_layer_ids": nested}}
    target = TARGET | {"num_hidden_layers": 4}
    drafter = weights(folder(tmp_path, draft), json.dumps(D2T).encode())
    path = tmp_path / "target"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(target))
    report = preflight_json(path, drafter)
    (aux,) = items(report, "aux-layer-ids")
    assert aux["status"] == "problem" and "a list of 1 item(s), not a list of integers" in aux["message"], aux
    # A million ids out of range: the message names a few, not all.
    draft = DRAFT | {"eagle_config": {"eagle_aux_hidden_state_layer_ids": list(range(100, 1_000_100))}}
    (tmp_path / "drafter" / "config.json").write_text(json.dumps(draft))
    (aux,) = items(preflight_json(path, drafter), "aux-layer-ids")
    assert aux["status"] == "problem" and "(1000000 ids)" in aux["message"] and len(aux["message"]) < 2000, aux["message"][:300]


# ---- the prompts file ---------------------------------------------------------------------------


def _prompts_fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize(
    ("case", "write", "text"),
    [
        ("fifo", _prompts_fifo, "a named pipe"),
        ("devzero", lambda p: p.symlink_to("/dev/zero"), "a device"),
        ("deep", lambda p: p.write_text(deep() + "\n"), "nested too deeply"),
        ("bigint", lambda p: p.write_text('{"prompt": ' + "9" * 5000 + "}\n"), "more than 4300 digits"),
        ("prompt_list", lambda p: p.write_text('{"prompt": ["Say hello."]}\n'), 'expected {"prompt": "..."}'),
        ("not_utf8", lambda p: p.write_bytes(b'{"prompt": "\xff"}\n'), "not valid UTF-8"),
    ],
)
def test_a_hostile_prompts_file_is_a_usage_error_naming_it(tmp_path: Path, case: str, write: Callable[[Path], None], text: str) -> None:
    target, drafter = write_kimi_pair(tmp_path / "models")
    prompts = tmp_path / "prompts.jsonl"
    write(prompts)
    done = run_verify_cli("--engine", "sglang", "--preflight-only", "--model-path", target, "--draft-model-path", drafter, "--prompts", prompts)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(prompts) in done.stderr and text in done.stderr, done.stderr


# ---- text from the checkpoint on the terminal ---------------------------------------------------


def test_escapes_in_architecture_and_tensor_names_reach_the_terminal_escaped(tmp_path: Path) -> None:
    target = _target(tmp_path)
    drafter = weights(folder(tmp_path / "arch", DRAFT | {"architectures": [ESCAPES + "LlamaForCausalLMEagle3"]}), json.dumps(D2T).encode())
    tensor = weights(folder(tmp_path / "tensor"), json.dumps({ESCAPES + "x.d2t": {"dtype": "I64", "shape": [5], "data_offsets": [0, 8]}}).encode())
    for path in (drafter, tensor):
        args = ("--engine", "sglang", "--preflight-only", "--model-path", target, "--draft-model-path", path)
        human = run_verify_cli(*args)
        assert "\x1b" not in human.stdout and "\x07" not in human.stdout, human.stdout
        assert "\\x1b[2J\\x1b]0;PWNED\\x07" in human.stdout
        assert human.stdout.count("\n") == len(human.stdout.splitlines())  # no line broken in two
        # JSON keeps the text exact (escaped by the encoder) and stays valid JSON.
        report = json.loads(run_verify_cli(*args, "--format", "json").stdout)
        assert any(ESCAPES in text for text in strings(report)), report
        assert "\x1b" not in run_verify_cli(*args, "--format", "json").stdout


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_line_text_escapes_c0_c1_bidi_and_line_separators() -> None:
    text = "a\x1b[31m\r\n\t\x07\x7f\x85\x9b\u202e\u2066\u200f\u2028\u2029é中b"
    assert line_text(text) == "a\\x1b[31m\\r\\n\\t\\x07\\x7f\\x85\\x9b\\u202e\\u2066\\u200f\\u2028\\u2029é中b"


def test_progress_lines_show_the_server_log_escaped() -> None:
    stream = io.StringIO()
    progress = TerminalProgress(stream)
    progress.update("eagle3", 3.0, "loading weights", "\x1b]0;PWNED\x07 loading " + ESCAPES)
    progress.finish("the eagle3 server crashed: \x1b[2Jgone")
    assert "\x1b" not in stream.getvalue() and "\x07" not in stream.getvalue()
    assert "\\x1b]0;PWNED\\x07 loading" in stream.getvalue()


# ---- model paths that look like options -----------------------------------------------------------


def _engine_parser(engine: str) -> argparse.ArgumentParser:
    """The server's own argument parsing, as far as the model paths go: vLLM's ``serve``
    takes the model as its optional positional, SGLang as ``--model-path``."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    if engine == "vllm":
        parser.add_argument("model_tag", nargs="?")
        parser.add_argument("--tensor-parallel-size")
        parser.add_argument("--speculative-config")
    else:
        parser.add_argument("--model-path")
        parser.add_argument("--tp-size")
        parser.add_argument("--speculative-algorithm")
        parser.add_argument("--speculative-draft-model-path")
    parser.add_argument("--host")
    parser.add_argument("--port")
    return parser


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_model_path_starting_with_a_dash_is_not_a_server_option(engine: str) -> None:
    options = VerifyOptions(model_path="-target", draft_model_path="-drafter", engine=engine, launcher="server")
    argv = build_command(options, knowledge_for(engine), 8000, speculative=True)
    parsed = _engine_parser(engine).parse_args(argv[1:])
    if engine == "vllm":
        assert parsed.model_tag == "./-target"
        assert json.loads(parsed.speculative_config)["model"] == "./-drafter"
    else:
        assert (parsed.model_path, parsed.speculative_draft_model_path) == ("./-target", "./-drafter")
    assert "-target" not in argv and "-drafter" not in argv


def test_vllm_server_gets_a_dash_model_path_as_its_model(tmp_path: Path) -> None:
    target, drafter = write_kimi_pair(tmp_path / "models")
    target.rename(tmp_path / "models" / "-target")
    drafter.rename(tmp_path / "models" / "-drafter")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Say hello.\n")
    done = run_verify_cli(
        "--engine", "vllm", "--model-path=-target", "--draft-model-path=-drafter", "--no-speedup-baseline", "--format", "json",
        "--launcher", fake_launcher("vllm", state_path(tmp_path)), "--prompts", prompts, "--max-new-tokens", "8",
        "--concurrency", "1", "--log-dir", tmp_path / "logs", "--poll-interval", "0.05",
        cwd=tmp_path / "models",
    )
    report = json.loads(done.stdout)
    assert [i for i in report["preflight"] if i["status"] == "problem"] == []  # the folders were read
    command = report["launches"][0]["command"]
    assert "./-target" in command and json.loads(command[command.index("--speculative-config") + 1])["model"] == "./-drafter"
    # The (argparse) fake server took the path as its model, not as an unknown option.
    assert "'model': './-target'" in (tmp_path / "logs" / "eagle3.log").read_text()


# ---- --release ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--release", "sglang"], "expected NAME==VERSION"),
        (["--release", "sglang==0.5.9", "--engine-root", "/nonexistent/sglang"], "give one"),
        (["--release", "vllm==0.11.0", "--engine", "sglang"], "contradicts"),
    ],
)
def test_release_usage_errors_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    target, drafter = write_kimi_pair(tmp_path / "models")
    done = run_verify_cli("--preflight-only", "--model-path", target, "--draft-model-path", drafter, *extra)
    assert done.returncode == 2 and message in done.stderr, done.stderr


@pytest.mark.release
def test_preflight_only_with_a_release_checks_its_target_class(tmp_path: Path) -> None:
    from tests.helpers import release_root

    release_root("sglang==0.5.9")  # fetched (once) with the download shown, like the other release tests
    target, drafter = write_kimi_pair(tmp_path / "models")
    report = preflight_json(target, drafter, "--release", "sglang==0.5.9")
    assert (report["engine"]["name"], report["engine"]["version"]) == ("sglang", "0.5.9")
    rules = {i["rule"] for i in items(report, "target-class") if i["status"] == "problem"}
    assert "E3L004" in rules, report["preflight"]
    assert report["verdict"]["status"] == "preflight-failed"


def test_a_full_run_with_a_release_says_which_engine_ran() -> None:
    options = VerifyOptions(model_path="t", draft_model_path="d", release="sglang==0.5.9", launcher="my-container sglang")
    assert "started by --launcher" in _release_note(options, "sglang")
    options.launcher = None
    note = _release_note(options, "sglang")
    assert note.startswith("the pre-flight read sglang==0.5.9; the servers ran the ") and "sglang" in note[40:]
