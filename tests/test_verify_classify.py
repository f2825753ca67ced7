"""Crash classification on the logs the fake engine prints (the real engines' error texts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eagle3lint.common.findings import Finding
from eagle3lint.engines import knowledge_for as load_knowledge
from eagle3lint.verify.classify import ClassifyContext, classify_crash, exception_block
from tests.fakes.fake_engine_server import CRASHES

FAKE = Path(__file__).resolve().parent / "fakes" / "fake_engine_server.py"


def fake_log(mode: str, engine: str) -> tuple[str, int]:
    """Run the fake in a crash mode (it exits at once) and return its log and exit code."""
    done = subprocess.run(
        [sys.executable, str(FAKE), "--fake-engine", engine, "--fake-mode", mode, "--fake-load-seconds", "0", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout, done.returncode


def codes(cause: object) -> list[str | None]:
    return [r.code or r.name for r in cause.rules]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("mode", "kind", "rules", "in_cause"),
    [
        ("crash-missing-setter", "interface", ["E3L001", "E3L004"], "KimiK25ForConditionalGeneration` lacks `set_eagle3_layers_to_capture"),
        ("crash-not-implemented", "interface", ["E3L001", "E3L004"], "does not implement `set_eagle3_layers_to_capture"),
        ("crash-inner-lacks", "interface", ["E3L004"], "language_model"),
        ("crash-embed-head", "interface", ["E3L001", "E3L004"], "get_embed_and_head"),
        ("crash-signature", "interface", ["E3L005"], "cannot accept"),
        ("crash-bare-assert", "aux-capture", ["E3L101"], "never collected"),
        ("crash-shapes", "config-mismatch", [], "hidden size"),
        ("crash-oom", "environment", [], "out of memory"),
    ],
)
def test_sglang_crashes(mode: str, kind: str, rules: list[str], in_cause: str) -> None:
    log, code = fake_log(mode, "sglang")
    assert code == -9  # SGLang's parent SIGKILLs itself even for a Python exception
    cause = classify_crash(log, code, load_knowledge("sglang"))
    assert cause.kind == kind, cause
    assert codes(cause) == rules
    assert in_cause in cause.cause
    assert cause.exception == CRASHES[mode][3]
    assert cause.excerpt[0].endswith("Scheduler hit an exception: Traceback (most recent call last):")


@pytest.mark.parametrize(
    ("mode", "kind", "rules"),
    [
        ("crash-protocol", "interface", ["missing-target-method", "protocol-not-declared"]),
        ("crash-mixin", "interface", ["holder-lacks-mixin"]),
        ("crash-unpack", "aux-capture", ["forward-never-collects"]),
    ],
)
def test_vllm_crashes(mode: str, kind: str, rules: list[str]) -> None:
    log, code = fake_log(mode, "vllm")
    assert code == 1
    cause = classify_crash(log, code, load_knowledge("vllm"))
    # Names, not codes: the vLLM rules get their codes from the vLLM check (E3L010...).
    assert (cause.kind, [r.name for r in cause.rules]) == (kind, rules)
    # Worker prefixes "(EngineCore_DP0 pid=N) " are stripped from the excerpt.
    assert cause.exception == CRASHES[mode][3]
    assert not any(line.startswith("(EngineCore") for line in cause.excerpt)


def test_a_kill_with_no_traceback_is_the_environment() -> None:
    log, code = fake_log("killed", "sglang")
    cause = classify_crash(log, code, load_knowledge("sglang"))
    assert cause.kind == "environment"
    assert "SIGKILL" in cause.cause and "no traceback" in cause.cause


def test_address_in_use_is_the_environment() -> None:
    log, code = fake_log("port-in-use", "sglang")
    cause = classify_crash(log, code, load_knowledge("sglang"))
    assert cause.kind == "environment"
    assert "port" in cause.cause and "free port" in cause.next_step


def test_the_static_check_narrows_the_rule_and_names_the_fix() -> None:
    log, code = fake_log("crash-missing-setter", "sglang")
    finding = Finding(
        code="E3L004", rule="wrapper-delegation-gap", severity="error", path="/e/sglang/srt/models/kimi_k25.py",
        line=648, column=1, class_name="KimiK25ForConditionalGeneration", qualname="x.KimiK25ForConditionalGeneration",
        method="set_eagle3_layers_to_capture", message="...",
    )
    ctx = ClassifyContext(engine_root="/e/sglang", model_file="/e/sglang/srt/models/kimi_k25.py", target_findings=[finding])
    cause = classify_crash(log, code, load_knowledge("sglang"), ctx)
    assert codes(cause) == ["E3L004"]
    assert cause.next_step.startswith("eagle3lint fix --engine-root /e/sglang /e/sglang/srt/models/kimi_k25.py")


def test_a_config_mismatch_points_at_the_preflight() -> None:
    log, code = fake_log("crash-shapes", "sglang")
    ctx = ClassifyContext(preflight_command="eagle3lint verify --preflight-only --model-path T --draft-model-path D")
    cause = classify_crash(log, code, load_knowledge("sglang"), ctx)
    assert cause.next_step.startswith("eagle3lint verify --preflight-only --model-path T")


def test_an_unknown_error_keeps_its_exception_line() -> None:
    log = "[2025-01-01 00:00:00] Load weight begin.\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\nKeyError: 'rope_scaling'\n"
    cause = classify_crash(log, 1, load_knowledge("sglang"), ClassifyContext(log_path="/tmp/eagle3.log"))
    assert cause.kind == "unknown"
    assert cause.exception == "KeyError: 'rope_scaling'"
    assert "/tmp/eagle3.log" in cause.next_step


def test_an_attribute_error_on_a_non_interface_member_is_not_blamed_on_a_rule() -> None:
    log = "[2025-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"m.py\", line 3, in f\nAttributeError: 'NoneType' object has no attribute 'shape'\n"
    cause = classify_crash(log, -9, load_knowledge("sglang"))
    assert cause.kind == "unknown" and cause.rules == []


def test_the_last_scheduler_block_is_read_and_stops_at_the_next_record() -> None:
    log = (
        "[2025-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "  File \"a.py\", line 1, in f\n"
        "AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute 'set_eagle3_layers_to_capture'\n"
        "[2025-01-01 00:00:01 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        "  File \"b.py\", line 2, in g\n"
        "AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute 'get_embed_and_head'\n"
        "[2025-01-01 00:00:01] Received sigquit from a child process. It usually means the child failed.\n"
    )
    block = exception_block(log, load_knowledge("sglang"))
    assert len(block) == 3 and block[-1].endswith("'get_embed_and_head'")
