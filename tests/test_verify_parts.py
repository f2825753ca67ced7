"""The verify building blocks on their own: command lines, GPU choice, readiness, metrics, prompts."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.engines import knowledge_for as load_knowledge
from eagle3lint.engines.vllm.server import parse_spec_counters
from eagle3lint.verify.gpus import GpuInfo, choose_gpus, visible, wait_memory_released
from eagle3lint.verify.knowledge import layer_expression
from eagle3lint.verify.launch import MARKER_ENV, build_command, free_port, server_env
from eagle3lint.verify.options import VerifyOptions
from eagle3lint.verify.prompts import builtin_prompts, chat_template, load_prompts
from eagle3lint.verify.teardown import port_open
from eagle3lint.verify.wait import LogFollower, needs_ready_line, phase_of, version_before

# ---- command lines ------------------------------------------------------------------------------


def engine_arguments(engine: str, options: VerifyOptions, port: int, speculative: bool) -> list[str]:
    return load_knowledge(engine).driver.arguments(options, port, speculative)


def validate_speculative_options(engine: str, options: VerifyOptions) -> None:
    load_knowledge(engine).driver.validate_options(options)


def options(**values: object) -> VerifyOptions:
    return VerifyOptions(model_path="/m/kimi", draft_model_path="/m/eagle3", **values)  # type: ignore[arg-type]


def test_sglang_command_line_with_the_speculative_triple() -> None:
    argv = build_command(options(tp=8, num_steps=3, eagle_topk=1, num_draft_tokens=4, engine_args=["--mem-fraction-static 0.8"]), load_knowledge("sglang"), 30000, True)
    assert argv[1:3] == ["-m", "sglang.launch_server"]
    assert argv[3:] == [
        "--model-path", "/m/kimi", "--tp-size", "8", "--host", "127.0.0.1", "--port", "30000",
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/m/eagle3",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
        "--mem-fraction-static", "0.8",
    ]


def test_baseline_command_line_has_no_speculation() -> None:
    argv = engine_arguments("sglang", options(num_steps=3, eagle_topk=1, num_draft_tokens=4), 1234, speculative=False)
    assert not any(a.startswith("--speculative") for a in argv)
    vllm = engine_arguments("vllm", options(), 1234, speculative=False)
    assert "--speculative-config" not in vllm and vllm[0] == "/m/kimi"


def test_vllm_command_line_always_names_the_method() -> None:
    argv = build_command(options(tp=2, launcher="vllm serve"), load_knowledge("vllm"), 8000, True)
    assert argv[:3] == ["vllm", "serve", "/m/kimi"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config == {"method": "eagle3", "model": "/m/eagle3", "num_speculative_tokens": 3}


def test_launcher_override_keeps_the_engine_arguments() -> None:
    argv = build_command(options(launcher="docker exec box python -m sglang.launch_server"), load_knowledge("sglang"), 1, True)
    assert argv[:6] == ["docker", "exec", "box", "python", "-m", "sglang.launch_server"]
    assert argv[6:8] == ["--model-path", "/m/kimi"]


@pytest.mark.parametrize(
    ("engine", "values", "message"),
    [
        ("sglang", {"num_steps": 3}, "go together"),
        ("sglang", {"num_steps": 3, "eagle_topk": 1}, "go together"),
        ("vllm", {"eagle_topk": 1}, "SGLang options"),
        ("sglang", {"num_steps": 0, "eagle_topk": 1, "num_draft_tokens": 4}, "--num-steps 0"),
    ],
)
def test_speculative_option_errors(engine: str, values: dict[str, int], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        validate_speculative_options(engine, options(**values))


def test_server_env_carries_marker_patched_tree_and_gpus() -> None:
    env = server_env({"PYTHONPATH": "/site", "PATH": "/bin"}, "run-1", Path("/src/python"), [2, 3])
    assert env[MARKER_ENV] == "run-1"
    assert env["PYTHONPATH"] == "/src/python:/site"
    assert (env["CUDA_VISIBLE_DEVICES"], env["CUDA_DEVICE_ORDER"]) == ("2,3", "PCI_BUS_ID")
    plain = server_env({}, "run-2", None, None)
    assert "PYTHONPATH" not in plain and "CUDA_VISIBLE_DEVICES" not in plain


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert port_open("127.0.0.1", port)
    assert not port_open("127.0.0.1", port)


# ---- GPU choice (the GPU count injected) --------------------------------------------------------

INVENTORY = [
    GpuInfo(0, "GPU-0aaa", 60000, 81920),
    GpuInfo(1, "GPU-1bbb", 100, 81920),
    GpuInfo(2, "GPU-2ccc", 30000, 81920),
    GpuInfo(3, "GPU-3ddd", 200, 81920),
]


def test_gpus_with_most_free_memory_are_chosen() -> None:
    assert choose_gpus(2, None, INVENTORY, None) == [1, 3]
    assert choose_gpus(3, None, INVENTORY, None) == [1, 2, 3]


def test_gpus_option_restricts_the_choice() -> None:
    assert choose_gpus(1, [0, 2], INVENTORY, None) == [2]
    with pytest.raises(UsageError, match="--tp 3 is more than the 2 GPU"):
        choose_gpus(3, [0, 2], INVENTORY, None)
    with pytest.raises(UsageError, match="GPU 7 is not"):
        choose_gpus(1, [7], INVENTORY, None)


def test_tp_larger_than_the_visible_gpu_count_is_refused() -> None:
    with pytest.raises(UsageError, match="--tp 8 is more than the 4 GPU"):
        choose_gpus(8, None, INVENTORY, None)
    with pytest.raises(UsageError, match=r"--tp 3 is more than the 2 GPU\(s\) visible \(CUDA_VISIBLE_DEVICES=0,2\)"):
        choose_gpus(3, None, INVENTORY, "0,2")
    # Without nvidia-smi/NVML the count still comes from CUDA_VISIBLE_DEVICES.
    with pytest.raises(UsageError, match="--tp 2 is more than the 1 GPU"):
        choose_gpus(2, None, None, "5")
    assert choose_gpus(1, None, None, None) is None
    assert choose_gpus(2, [4, 5], None, None) == [4, 5]


def test_cuda_visible_devices_by_index_or_uuid() -> None:
    assert [g.index for g in visible(INVENTORY, "3,GPU-1b")] == [3, 1]
    assert [g.index for g in visible(INVENTORY, "2,9,0")] == [2]  # CUDA stops at an invalid entry


def test_memory_release_waits_for_the_used_memory_to_drop() -> None:
    readings = iter([[GpuInfo(0, "g", 9000, 81920)], [GpuInfo(0, "g", 5000, 81920)], [GpuInfo(0, "g", 1100, 81920)]])
    released, after = wait_memory_released({0: 1000}, timeout_s=5, poll_s=0, inventory_fn=lambda: next(readings))
    assert released and after == {0: 1100}
    stuck, now = wait_memory_released({0: 1000}, timeout_s=0, poll_s=0, inventory_fn=lambda: [GpuInfo(0, "g", 9000, 81920)])
    assert not stuck and now == {0: 9000}


# ---- readiness and progress ---------------------------------------------------------------------


def test_the_fired_up_line_is_needed_only_before_0_4_10_post2() -> None:
    sglang = load_knowledge("sglang")
    assert needs_ready_line(sglang, "0.4.9")
    assert needs_ready_line(sglang, "0.4.10.post1")
    assert not needs_ready_line(sglang, "0.4.10.post2")
    assert not needs_ready_line(sglang, "0.5.9")
    assert not needs_ready_line(sglang, "unknown")
    assert not needs_ready_line(load_knowledge("vllm"), "0.4.0")
    assert version_before("0.4.10", "0.4.10.post2") and not version_before("0.5.0rc1", "0.4.10.post2")


def test_phases_follow_the_log() -> None:
    sglang, vllm = load_knowledge("sglang"), load_knowledge("vllm")
    assert phase_of("[2025-01-01 00:00:00 TP0] Load weight begin. avail mem=78.00 GB", sglang) == "loading weights"
    assert phase_of("[2025-01-01 00:00:00 TP3] Capture cuda graph bs [1, 2, 4]", sglang) == "capturing CUDA graphs"
    assert phase_of("INFO 06-01 10:00:00 [gpu_model_runner.py:1] Starting to load model /m/kimi...", vllm) == "loading weights"
    assert phase_of("something else", sglang) is None


def test_log_follower_reads_only_new_complete_lines_and_progress_bars(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"first\nsec")
    follower = LogFollower(log)
    assert follower.new_lines() == ["first"]
    with log.open("ab") as handle:
        handle.write(b"ond\nLoading shards:  10%\rLoading shards:  50%\r\x1b[32mdone\x1b[0m\n")
    assert follower.new_lines() == ["second", "Loading shards:  10%", "Loading shards:  50%", "done"]
    assert follower.last_line == "done"
    assert follower.new_lines() == []


# ---- measurement inputs -------------------------------------------------------------------------


def test_spec_counters_sum_label_sets_and_skip_created() -> None:
    text = (
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0\n'
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5.0\n'
        'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 24.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 9.0\n'
    )
    assert parse_spec_counters(text) == (24.0, 15.0)
    assert parse_spec_counters("vllm:num_requests_running 0\n") is None


def test_prompt_files(tmp_path: Path) -> None:
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"prompt": "hi"}\n\n{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "why?"}]}\n')
    prompts = load_prompts(jsonl)
    assert [p.messages[-1]["content"] for p in prompts] == ["hi", "why?"]
    assert prompts[1].plain == "be brief\n\nwhy?"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": 1}\n')
    with pytest.raises(UsageError, match=r"bad.jsonl:1: expected"):
        load_prompts(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(UsageError, match="no prompts"):
        load_prompts(empty)
    assert len(builtin_prompts()) == 16


def test_chat_template_sources(tmp_path: Path) -> None:
    assert chat_template(str(tmp_path)) is None
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}))
    assert chat_template(str(tmp_path)) == "D"
    (tmp_path / "chat_template.jinja").write_text("J")
    assert chat_template(str(tmp_path)) == "J"


def test_layer_expressions_allow_only_arithmetic_on_n() -> None:
    assert [layer_expression(e, 61) for e in ("2", "n // 2", "n - 3")] == [2, 30, 58]
    with pytest.raises(UsageError):
        layer_expression("__import__('os')", 61)


def test_verify_options_can_be_shared_by_another_command() -> None:
    import click
    from click.testing import CliRunner

    from eagle3lint.commands.verify import (
        VERIFY_PARAMS,
        options_from_click,
        pop_verify_values,
        verify_run_options,
    )

    seen: dict[str, object] = {}

    @click.command()
    @click.option("--apply", is_flag=True)
    @verify_run_options
    def fix(apply: bool, **values: object) -> None:
        verify_values = pop_verify_values(values)
        seen["rest"] = values
        seen["options"] = options_from_click("sglang", None, "json", **verify_values)

    result = CliRunner().invoke(fix, ["--apply", "--model-path", "/m/t", "--draft-model-path", "/m/d", "--tp", "2", "--gpus", "0,1", "--no-speedup-baseline"])
    assert result.exit_code == 0, result.output
    options = seen["options"]
    assert isinstance(options, VerifyOptions)
    assert (options.tp, options.gpus, options.baseline, options.concurrency) == (2, [0, 1], False, (1, 16))
    assert seen["rest"] == {}
    assert set(VERIFY_PARAMS) == {p.name for p in fix.params} - {"apply"}
