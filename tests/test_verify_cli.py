"""`eagle3lint verify` as a user runs it: output formats, exit codes, Ctrl-C, usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.harness import alive, events, fake_launcher, fake_pids, marked_alive, state_path
from tests.fakes.model_folders import write_kimi_pair
from tests.helpers import REPO, run_cli


def verify_args(tmp_path: Path, engine: str = "sglang", *flags: str) -> list[str]:
    target, drafter = write_kimi_pair(tmp_path / "models")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Say hello.\nCount to five.\n")
    return [
        "verify", "--engine", engine, "--model-path", str(target), "--draft-model-path", str(drafter),
        "--launcher", fake_launcher(engine, state_path(tmp_path), "--fake-load-seconds", "0.02", *flags),
        "--prompts", str(prompts), "--max-new-tokens", "16", "--concurrency", "1,2",
        "--log-dir", str(tmp_path / "logs"), "--poll-interval", "0.05", "--teardown-grace", "120", "--teardown-timeout", "120",
    ]


def test_human_report_of_a_good_run(tmp_path: Path) -> None:
    done = run_cli(*verify_args(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Pre-flight" in out and "d2t-mapping" in out
    assert "Launch: EAGLE-3" in out and "Launch: baseline (no speculation)" in out
    assert "tok/s c=1" in out and "accept c=2" in out and "speedup" in out
    assert "Verdict: good" in out
    # Progress goes to stderr, never into the report.
    assert "starting the eagle3 server" in done.stderr
    assert "starting the eagle3 server" not in out
    assert alive(fake_pids(tmp_path)) == []


def test_json_report_of_a_crash_is_quiet_and_exits_1(tmp_path: Path) -> None:
    done = run_cli(*verify_args(tmp_path, "sglang", "--fake-mode", "crash-embed-head"), "--format", "json")
    assert done.returncode == 1
    assert done.stderr == ""
    report = json.loads(done.stdout)
    assert report["verdict"]["status"] == "crash"
    assert report["exit_code"] == 1
    launch = report["launches"][0]
    assert launch["outcome"] == "crash" and launch["exit_code"] == -9
    crash = launch["crash"]
    assert crash["kind"] == "interface"
    assert [r["code"] for r in crash["rules"]] == ["E3L001", "E3L004"]
    assert crash["exception"].endswith("has no attribute 'get_embed_and_head'")
    assert crash["next_step"].startswith("eagle3lint fix")
    assert report["teardown"][0]["clean"] is True
    assert set(report) >= {"version", "engine", "target", "drafter", "preflight", "launches", "metrics", "speedup", "verdict"}


def test_human_report_of_a_crash_shows_cause_rule_excerpt_and_next_step(tmp_path: Path) -> None:
    done = run_cli(*verify_args(tmp_path, "sglang", "--fake-mode", "crash-missing-setter"))
    assert done.returncode == 1
    out = done.stdout
    assert "crash after" in out and "exit code -9" in out
    assert "cause (interface): `KimiK25ForConditionalGeneration` lacks `set_eagle3_layers_to_capture`" in out
    assert "rule: E3L001 missing-target-method, E3L004 wrapper-delegation-gap" in out
    assert "| AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute 'set_eagle3_layers_to_capture'" in out
    assert "next: eagle3lint fix" in out
    assert "Verdict: crash" in out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_verify_tears_the_server_down(tmp_path: Path, sig: signal.Signals) -> None:
    args = verify_args(tmp_path, "sglang", "--fake-mode", "hang", "--fake-child", "session")
    process = subprocess.Popen(
        [sys.executable, "-m", "eagle3lint", *args, "--format", "json"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not events(tmp_path, "child-running"):
            assert process.poll() is None and time.monotonic() < deadline, "the fake server never started"
            time.sleep(0.05)
        process.send_signal(sig)
        out, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 2
    report = json.loads(out)
    assert report["verdict"]["status"] == "interrupted"
    assert report["launches"][0]["outcome"] == "interrupted"
    assert len(report["teardown"]) == 1 and report["teardown"][0]["clean"] is True
    assert alive(fake_pids(tmp_path)) == []
    assert marked_alive(tmp_path) == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--num-steps", "3"], "go together"),
        (["--tp", "0"], "'--tp': 0 is not in the range x>=1"),
        (["--gpus", "a,b"], "--gpus 'a,b'"),
        (["--concurrency", "0"], "--concurrency"),
        (["--prompts", "/nonexistent/prompts.jsonl"], "cannot read prompts"),
        (["--engine-root", "/nonexistent/sglang"], "no such folder"),
    ],
)
def test_usage_errors_exit_2_with_a_message(tmp_path: Path, extra: list[str], message: str) -> None:
    args = verify_args(tmp_path)
    for option in extra[::2]:  # the later value wins in click, but drop duplicates for clarity
        if option in args:
            i = args.index(option)
            del args[i : i + 2]
    done = run_cli(*args, *extra)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert events(tmp_path, "started") == []


def test_vllm_options_that_are_sglang_only_are_refused(tmp_path: Path) -> None:
    done = run_cli(*verify_args(tmp_path, "vllm"), "--eagle-topk", "2")
    assert done.returncode == 2 and "SGLang options" in done.stderr


def test_check_does_not_load_verify_at_start_up() -> None:
    code = (
        "import sys, eagle3lint.cli\n"
        "heavy = [m for m in sys.modules if m.startswith('eagle3lint.verify.') and m not in "
        "('eagle3lint.commands.verify', 'eagle3lint.verify.options')]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
