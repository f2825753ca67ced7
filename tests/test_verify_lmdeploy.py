"""`verify` for LMDeploy against the scripted engine (tests/fakes/fake_engine_server.py): the
`lmdeploy serve api_server` command line, readiness, acceptance from its Prometheus counters, and
its start-up failures classified to the rules that predict them. The static pre-flight reads our
synthetic LMDeploy tree (fixtures/lmdeploy_basic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.engines import server_for
from eagle3lint.run.verify_report import VerifyReport
from eagle3lint.run.verify_run import run_verify
from eagle3lint.verify.options import VerifyOptions
from tests.fakes.harness import alive, events, fake_pids, make_options
from tests.fakes.model_folders import write_config, write_safetensors
from tests.helpers import FIXTURES

TREE = FIXTURES / "lmdeploy_basic" / "lmdeploy"


def no_gpus() -> None:
    return None


def _llama_pair(base: Path) -> tuple[Path, Path]:
    target = write_config(base / "llama", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "num_hidden_layers": 32, "vocab_size": 128256,
    })
    drafter = write_config(base / "llama-eagle3", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "num_hidden_layers": 1, "vocab_size": 128256, "draft_vocab_size": 32000,
    })
    write_safetensors(drafter / "model.safetensors", {"d2t": ("I64", [32000]), "norm.weight": ("BF16", [4096])})
    return target, drafter


def _options(tmp_path: Path, *flags: str, **overrides: object) -> VerifyOptions:
    target, drafter = _llama_pair(tmp_path / "llama-models")
    values: dict[str, object] = {"model_path": str(target), "draft_model_path": str(drafter), "engine_root": TREE}
    values.update(overrides)
    return make_options(tmp_path, "lmdeploy", *flags, **values)


def run(tmp_path: Path, *flags: str, **overrides: object) -> VerifyReport:
    report = run_verify(_options(tmp_path, *flags, **overrides), inventory_fn=no_gpus)
    assert alive(fake_pids(tmp_path)) == [], "a fake server process survived teardown"
    return report


def test_lmdeploy_command_line_readiness_and_acceptance_from_its_counters(tmp_path: Path) -> None:
    report = run(tmp_path, num_draft_tokens=4)
    assert report.verdict.status == "good", report.verdict
    started = events(tmp_path, "started")
    assert [e["speculative"] for e in started] == [True, False]
    spec, base = started[0]["argv"], started[1]["argv"]
    assert spec[spec.index("--backend") + 1] == "pytorch"
    assert spec[spec.index("--speculative-algorithm") + 1] == "eagle3"
    assert spec[spec.index("--speculative-draft-model") + 1] == report.preflight.drafter.path  # type: ignore[union-attr]
    assert spec[spec.index("--speculative-num-draft-tokens") + 1] == "4"
    assert spec[spec.index("--tp") + 1] == "1" and "--server-port" in spec
    assert "--speculative-algorithm" not in base
    # 1 + accepted / drafts = 1 + 10 / 6 per 16-token request (the fake accepts 3 per step).
    assert [round(r.acceptance_length or 0, 3) for r in report.metrics["eagle3"].results] == [2.667, 2.667]
    assert {e["path"] for e in events(tmp_path, "request")} == {"/v1/chat/completions"}


def test_the_static_pre_flight_reads_the_lmdeploy_tree(tmp_path: Path) -> None:
    report = run(tmp_path, baseline=False)
    assert report.preflight is not None
    text = "\n".join(item.message for item in report.preflight.items)
    assert "lmdeploy 0.99.0" in text and "LlamaForCausalLM" in text


@pytest.mark.parametrize(
    ("mode", "rule", "kind"),
    [
        ("crash-plain-strategy", "E3L031", "aux-capture"),
        ("crash-builder-assert", "E3L030", "interface"),
    ],
)
def test_lmdeploy_start_up_failures_are_classified(tmp_path: Path, mode: str, rule: str, kind: str) -> None:
    report = run(tmp_path, "--fake-mode", mode, ignore_preflight=True)
    assert report.verdict.status == "crash"
    record = report.launch("eagle3")
    assert record is not None and record.crash is not None and record.exit_code == 1
    assert record.crash.kind == kind
    assert rule in [r.code for r in record.crash.rules]
    assert report.launch("baseline") is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"eagle_topk": 2}, "--eagle-topk is an SGLang option"),
        ({"pp": 2}, "no pipeline parallelism"),
        ({"num_steps": 3, "num_draft_tokens": 4}, "the same number"),
    ],
)
def test_options_lmdeploy_has_no_use_for_are_refused(tmp_path: Path, overrides: dict[str, int], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        server_for("lmdeploy").validate_options(_options(tmp_path, **overrides))


def test_the_default_launcher_is_lmdeploy_serve_api_server() -> None:
    launcher = server_for("lmdeploy").default_launcher("lmdeploy", "no-such-lmdeploy-script")
    assert launcher[1:] == ["-m", "lmdeploy", "serve", "api_server"]
