"""`run_verify` end to end against the fake engine server (a test double; see tests/fakes/)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.run.verify_report import VerifyReport
from eagle3lint.run.verify_run import exit_after_failed_requests, run_verify
from eagle3lint.verify import launch as verify_launch
from eagle3lint.verify import teardown as verify_teardown
from eagle3lint.verify.gpus import GpuInfo
from tests.fakes.clock import LeapingClock
from tests.fakes.harness import (
    GENEROUS_S,
    alive,
    events,
    fake_pids,
    make_options,
    marked_alive,
    read_state,
)
from tests.fakes.model_folders import kimi_drafter_config, write_config
from tests.fakes.sglang_tree import write_sglang_tree


def no_gpus() -> list[GpuInfo] | None:
    return None


@pytest.fixture(autouse=True)
def nothing_left_running(tmp_path: Path) -> Iterator[None]:
    yield
    assert marked_alive(tmp_path) == [], "verify left a marked process running"


def run(tmp_path: Path, engine: str = "sglang", *flags: str, **overrides: object) -> VerifyReport:
    report = run_verify(make_options(tmp_path, engine, *flags, **overrides), inventory_fn=no_gpus)
    assert alive(fake_pids(tmp_path)) == [], "a fake server process survived teardown"
    return report


def test_sglang_good_run_measures_eagle3_and_baseline(tmp_path: Path) -> None:
    report = run(tmp_path, "sglang")
    assert report.verdict.status == "good", report.verdict
    assert report.exit_code == 0
    started = events(tmp_path, "started")
    assert [e["speculative"] for e in started] == [True, False]
    spec_argv, base_argv = started[0]["argv"], started[1]["argv"]
    assert spec_argv[spec_argv.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert spec_argv[spec_argv.index("--speculative-draft-model-path") + 1] == report.preflight.drafter.path  # type: ignore[union-attr]
    assert "--speculative-num-steps" not in spec_argv  # none given: SGLang chooses
    assert "--speculative-algorithm" not in base_argv
    assert all(e["marker"] for e in started) and started[0]["marker"] != started[1]["marker"]
    eagle3 = report.metrics["eagle3"]
    # The fake verifies ceil(16 / 3) = 6 times for 16 tokens: acceptance 16 / 6.
    assert [round(r.acceptance_length or 0, 3) for r in eagle3.results] == [2.667, 2.667]
    assert [r.concurrency for r in eagle3.results] == [1, 4]
    assert all(r.acceptance_length is None for r in report.metrics["baseline"].results)
    assert [t.ended_by for t in report.teardowns] == ["SIGTERM", "SIGTERM"]
    assert all(t.clean for t in report.teardowns)
    # 4 prompts at c=1, 4 at c=4, plus a warm-up: per server.
    assert len(events(tmp_path, "request")) == 2 * (4 + 4 + 1)


def test_vllm_good_run_reads_acceptance_from_metrics_deltas(tmp_path: Path) -> None:
    report = run(tmp_path, "vllm", num_steps=5)
    assert report.verdict.status == "good", report.verdict
    spec_argv = events(tmp_path, "started")[0]["argv"]
    config = json.loads(spec_argv[spec_argv.index("--speculative-config") + 1])
    assert config == {"method": "eagle3", "model": report.preflight.drafter.path, "num_speculative_tokens": 5}  # type: ignore[union-attr]
    assert spec_argv[spec_argv.index("--tensor-parallel-size") + 1] == "1"
    # 1 + accepted / drafts = 1 + 10 / 6 per 16-token request.
    assert [round(r.acceptance_length or 0, 3) for r in report.metrics["eagle3"].results] == [2.667, 2.667]
    assert report.metrics["eagle3"].prompt_format == "server-chat"
    assert {e["path"] for e in events(tmp_path, "request")} == {"/v1/chat/completions"}


def test_vllm_base_model_without_chat_template_falls_back_to_completions(tmp_path: Path) -> None:
    report = run(tmp_path, "vllm", "--fake-no-chat-template", baseline=False)
    assert report.verdict.status == "good"
    assert report.metrics["eagle3"].prompt_format == "plain"
    assert {e["path"] for e in events(tmp_path, "request")} == {"/v1/completions"}


@pytest.mark.parametrize(
    ("flags", "status", "exit_code"),
    [
        (("--fake-accept", "1.2"), "broken", 1),
        (("--fake-speedup", "0.5"), "no-benefit", 1),
        (("--fake-accept", "2.0"), "marginal", 1),
    ],
)
def test_verdicts(tmp_path: Path, flags: tuple[str, ...], status: str, exit_code: int) -> None:
    report = run(tmp_path, "sglang", *flags)
    assert (report.verdict.status, report.exit_code) == (status, exit_code), report.verdict


def test_broken_acceptance_points_at_capture_rules_and_preflight(tmp_path: Path) -> None:
    report = run(tmp_path, "sglang", "--fake-accept", "1.1", baseline=False)
    assert report.verdict.status == "broken"
    assert "eagle3lint check" in report.verdict.message and "pre-flight" in report.verdict.message


def test_no_baseline_launches_one_server(tmp_path: Path) -> None:
    report = run(tmp_path, "sglang", baseline=False)
    assert report.verdict.status == "good"
    assert [r.label for r in report.launches] == ["eagle3"]
    assert len(events(tmp_path, "started")) == 1
    assert report.speedup(1) is None


def test_sglang_speculative_triple_is_passed_whole(tmp_path: Path) -> None:
    run(tmp_path, "sglang", num_steps=3, eagle_topk=1, num_draft_tokens=4, baseline=False)
    argv = events(tmp_path, "started")[0]["argv"]
    assert argv[argv.index("--speculative-num-steps") + 1 :][:5] == ["3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


@pytest.mark.parametrize(
    ("mode", "rules"),
    [
        ("crash-missing-setter", ["E3L001", "E3L004"]),
        ("crash-signature", ["E3L005"]),
    ],
)
def test_sglang_crash_is_classified_and_the_baseline_is_skipped(tmp_path: Path, mode: str, rules: list[str]) -> None:
    report = run(tmp_path, "sglang", "--fake-mode", mode)
    assert report.verdict.status == "crash"
    assert report.exit_code == 1
    record = report.launch("eagle3")
    assert record is not None and record.crash is not None
    assert record.exit_code == -9
    assert [r.code for r in record.crash.rules] == rules
    assert record.crash.next_step.startswith("eagle3lint fix")
    assert report.launch("baseline") is None
    assert len(events(tmp_path, "started")) == 1
    assert report.teardowns[0].clean


def test_crash_uses_the_static_check_to_name_the_rule_and_file(tmp_path: Path) -> None:
    tree = write_sglang_tree(tmp_path / "tree")
    report = run(tmp_path, "sglang", "--fake-mode", "crash-missing-setter", engine_root=tree, ignore_preflight=True)
    record = report.launch("eagle3")
    assert record is not None and record.crash is not None
    assert [r.code for r in record.crash.rules] == ["E3L004"]
    assert f"--engine-root {tree}" in record.crash.next_step
    assert "kimi_k25.py" in record.crash.next_step
    # The patched tree goes first on the server's PYTHONPATH.
    assert events(tmp_path, "started")[0]["pythonpath"].split(":")[0] == str(tree.parent)


def test_vllm_crash_exits_1_and_is_classified(tmp_path: Path) -> None:
    report = run(tmp_path, "vllm", "--fake-mode", "crash-protocol")
    record = report.launch("eagle3")
    assert record is not None and record.crash is not None and record.exit_code == 1
    assert record.crash.kind == "interface"
    assert "Model does not support EAGLE3 interface" in (record.crash.exception or "")


def test_a_predicted_crash_stops_before_launch_unless_told(tmp_path: Path) -> None:
    options = make_options(tmp_path, "sglang")
    drafter = kimi_drafter_config() | {"hidden_size": 4096}
    write_config(Path(options.draft_model_path), drafter)
    report = run_verify(options, inventory_fn=no_gpus)
    assert report.verdict.status == "preflight-failed"
    assert report.launches == [] and read_state(tmp_path) == []
    options.ignore_preflight = True
    options.baseline = False
    assert run_verify(options, inventory_fn=no_gpus).verdict.status == "good"


def hang_runs_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LeapingClock:
    """The start-up timeout passes once the fake is stuck in its graph capture (not when a
    fraction of a second has: on a loaded machine the fake may not have started by then)."""
    return LeapingClock(lambda: bool(events(tmp_path, "hanging"))).install(monkeypatch, verify_launch)


def grace_runs_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LeapingClock:
    """The SIGTERM grace period passes once the fake has ignored the SIGTERM."""
    return LeapingClock(lambda: bool(events(tmp_path, "sigterm-ignored"))).install(monkeypatch, verify_teardown)


def test_a_hanging_server_times_out_and_is_terminated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = hang_runs_out(tmp_path, monkeypatch)
    report = run(tmp_path, "sglang", "--fake-mode", "hang")
    assert clock.leapt
    assert report.verdict.status == "timeout"
    record = report.launch("eagle3")
    assert record is not None and record.outcome == "timeout"
    assert "capturing CUDA graphs" in record.detail
    assert report.teardowns[0].ended_by == "SIGTERM"
    assert events(tmp_path, "sigterm")


def test_a_server_ignoring_sigterm_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hang_runs_out(tmp_path, monkeypatch)
    grace = grace_runs_out(tmp_path, monkeypatch)
    report = run(tmp_path, "sglang", "--fake-mode", "hang", "--fake-ignore-sigterm")
    assert grace.leapt and events(tmp_path, "sigterm-ignored")
    assert report.teardowns[0].ended_by == "SIGKILL"
    assert report.teardowns[0].exit_code == -9
    assert report.teardowns[0].clean


def test_children_in_the_group_are_ended_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grace_runs_out(tmp_path, monkeypatch)
    report = run(tmp_path, "sglang", "--fake-child", "group", "--fake-ignore-sigterm", baseline=False)
    children = events(tmp_path, "child-running")
    assert len(children) == 1 and children[0]["pgid"] == events(tmp_path, "started")[0]["pid"]
    assert report.teardowns[0].ended_by == "SIGKILL"
    assert report.teardowns[0].swept_pids == []


def test_a_child_that_left_the_group_is_swept_by_its_marker(tmp_path: Path) -> None:
    report = run(tmp_path, "sglang", "--fake-child", "session", baseline=False)
    child = events(tmp_path, "child-running")[0]
    assert child["pgid"] == child["pid"]  # its own session: killpg on the server cannot reach it
    assert report.teardowns[0].swept_pids == [child["pid"]]


def test_a_crash_while_measuring_is_classified(tmp_path: Path) -> None:
    report = run(tmp_path, "sglang", "--fake-mode", "crash-on-request", "--fake-crash-after", "2", baseline=False)
    record = report.launch("eagle3")
    assert record is not None and record.outcome == "crash"
    assert record.crash is not None and "illegal memory access" in (record.crash.exception or "")
    assert report.verdict.status == "crash"


_ENDING_SERVER = """
import socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
print(listener.getsockname()[1], flush=True)
sys.stdin.readline()  # serving until told to end
listener.close()  # a dying process closes its sockets before its parent can see the exit
print("closed", flush=True)
sys.stdin.readline()
sys.exit(3)
"""


def test_a_server_whose_port_closed_is_waited_for_not_called_ready(tmp_path: Path) -> None:
    # The race behind a crash while measuring read as "ready": the requests fail as soon as the
    # dying server's sockets close, before poll() sees the exit. Made deterministic here.
    child = subprocess.Popen([sys.executable, "-c", _ENDING_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        port = int(child.stdout.readline())
        server = verify_launch.LaunchedServer("eagle3", [], child, port, "127.0.0.1", tmp_path / "log", "run", 0.0)  # type: ignore[arg-type]
        assert exit_after_failed_requests(server, GENEROUS_S) is None  # still listening: it failed the requests itself
        child.stdin.write("end\n")
        child.stdin.flush()
        assert child.stdout.readline() == "closed\n"
        assert child.poll() is None  # the window: the port is closed, the exit not yet seen
        found: list[int | None] = []
        waiter = threading.Thread(target=lambda: found.append(exit_after_failed_requests(server, GENEROUS_S)))
        waiter.start()
        child.stdin.write("exit\n")
        child.stdin.flush()
        waiter.join(GENEROUS_S)
        assert found == [3]
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def test_old_sglang_waits_for_the_fired_up_line(tmp_path: Path) -> None:
    tree = write_sglang_tree(tmp_path / "tree", fixed=True)
    (tree / "version.py").write_text('__version__ = "0.4.9"\n')
    run(tmp_path, "sglang", "--fake-old-sglang", "--fake-ready-line-delay", "0.4", engine_root=tree, baseline=False)
    order = [e["event"] for e in read_state(tmp_path) if e["event"] in ("ready", "request")]
    assert order[0] == "ready"  # no request before the line, although /health said 200 earlier


def test_newer_sglang_trusts_health(tmp_path: Path) -> None:
    tree = write_sglang_tree(tmp_path / "tree", fixed=True)  # version 0.5.9
    # The line would come long after the run is over: a request before it shows health was enough.
    run(tmp_path, "sglang", "--fake-old-sglang", "--fake-ready-line-delay", "3600", engine_root=tree, baseline=False)
    order = [e["event"] for e in read_state(tmp_path) if e["event"] in ("ready", "request")]
    assert order and order[0] == "request"


def test_chat_template_of_the_target_is_applied_for_sglang(tmp_path: Path) -> None:
    options = make_options(tmp_path, "sglang", baseline=False)
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
    (Path(options.model_path) / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    report = run_verify(options, inventory_fn=no_gpus)
    texts = [e["text"] for e in events(tmp_path, "request")]
    try:
        import jinja2  # noqa: F401
    except ImportError:
        assert report.metrics["eagle3"].prompt_format == "plain"
        assert texts[0] == "Say hello."
    else:
        assert report.metrics["eagle3"].prompt_format == "chat-template"
        # jinja drops the template's final newline, as transformers' apply_chat_template does
        assert texts[0] == "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant"


def test_gpus_are_chosen_by_free_memory_and_passed_to_the_server(tmp_path: Path) -> None:
    inventory = [GpuInfo(0, "GPU-a", 70000, 81920), GpuInfo(1, "GPU-b", 1000, 81920), GpuInfo(2, "GPU-c", 500, 81920)]
    options = make_options(tmp_path, "sglang", tp=2, baseline=False)
    report = run_verify(options, inventory_fn=lambda: inventory)
    started = events(tmp_path, "started")[0]
    assert started["cuda_visible_devices"] == "1,2"
    assert started["argv"][started["argv"].index("--tp-size") + 1] == "2"
    assert report.launches[0].gpus == [1, 2]
    assert report.teardowns[0].gpu_released is True


def test_a_tp_larger_than_the_visible_gpus_is_refused_before_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    inventory = [GpuInfo(0, "GPU-a", 0, 81920), GpuInfo(1, "GPU-b", 0, 81920)]
    with pytest.raises(UsageError, match="--tp 4 is more than the 2 GPU"):
        run_verify(make_options(tmp_path, "sglang", tp=4), inventory_fn=lambda: inventory)
    assert read_state(tmp_path) == []


def test_a_failed_baseline_leaves_the_verdict_to_acceptance_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eagle3lint.run import verify_run

    real_build = verify_run.build_command

    def crash_the_baseline(options: object, knowledge: object, port: int, speculative: bool) -> list[str]:
        argv = real_build(options, knowledge, port, speculative)  # type: ignore[arg-type]
        return argv if speculative else [*argv, "--fake-mode", "crash-oom"]

    monkeypatch.setattr(verify_run, "build_command", crash_the_baseline)
    report = run(tmp_path, "sglang")
    baseline = report.launch("baseline")
    assert baseline is not None and baseline.crash is not None and baseline.crash.kind == "environment"
    assert report.verdict.status == "good"
    assert "baseline run ended in crash" in report.verdict.message
