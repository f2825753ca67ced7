"""The `eagle3lint verify` command, and the options `fix --apply --verify` shares with it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from eagle3lint.common.errors import UsageError
from eagle3lint.engines import ENGINE_NAMES

F = TypeVar("F", bound=Callable[..., Any])


def _int_list(value: str | None, option: str) -> list[int] | None:
    if value is None:
        return None
    try:
        items = [int(v) for v in value.split(",") if v.strip()]
    except ValueError as exc:
        raise UsageError(f"{option} {value!r}: expected comma-separated integers") from exc
    if not items:
        raise UsageError(f"{option} {value!r}: names nothing")
    return items


DRAFTER_IDS = click.option(
    "--drafter-ids", "drafter_ids", type=click.Choice(["output", "hidden-states"]),
    callback=lambda _ctx, _param, value: value.replace("-", "_") if value else None,
    help="What the drafter's layer ids mean, over what its framework documents: id k is layer k's output "
    "(SpecForge, AngelSlim), or hidden_states[k], the input of layer k (vLLM speculators, the EAGLE reference code).",
)


def verify_run_options(func: F) -> F:
    """Every verify option except the engine selection (--engine/--engine-root) and --format, which
    the command that uses them (verify, or fix) declares itself."""
    return _verify_options(func, required=True)


def optional_verify_run_options(func: F) -> F:
    """The same options for a command where verifying is optional (`fix --apply --verify`): the
    model paths are then checked by that command."""
    return _verify_options(func, required=False)


def _verify_options(func: F, required: bool) -> F:
    options = [
        click.option("--model-path", required=required, help="The target model (a local folder for the pre-flight; also what the engine loads)."),
        click.option("--draft-model-path", help="The EAGLE-3 drafter (a local folder for the pre-flight); required to launch."),
        click.option("--preflight-only", is_flag=True, help="Only the checks that need no GPU: the same as `eagle3lint preflight` (its report in this command's shape)."),
        click.option("--ignore-preflight", is_flag=True, help="Launch even when the pre-flight predicts a crash."),
        click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor-parallel size (GPUs per server)."),
        click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True, help="Pipeline-parallel size; the pre-flight's verdicts assume PP when it is over 1."),
        click.option(
            "--engine-option", "engine_options", multiple=True, metavar="NAME[=VALUE]",
            help="A launch option the pre-flight's verdicts assume, as for `check`/`models` (repeatable): two-batch-overlap, runner=v1, ...",
        ),
        click.option("--gpus", metavar="0,1,...", help="GPUs to choose from (default: all visible, most free memory first)."),
        click.option("--engine-arg", "engine_args", multiple=True, metavar="ARGS", help="Extra server arguments, e.g. --engine-arg '--mem-fraction-static 0.8' (repeatable)."),
        click.option(
            "--launcher",
            metavar="CMD",
            help="Command that starts the server instead of `python -m sglang.launch_server` / `vllm serve` "
            "(a container wrapper, another venv); the engine arguments are appended to it.",
        ),
        click.option("--num-steps", type=int, help="Speculative steps (SGLang --speculative-num-steps; vLLM num_speculative_tokens, default 3)."),
        click.option("--eagle-topk", type=int, help="SGLang --speculative-eagle-topk (give with --num-steps and --num-draft-tokens)."),
        click.option("--num-draft-tokens", type=int, help="SGLang --speculative-num-draft-tokens."),
        DRAFTER_IDS,
        click.option("--timeout", "timeout_s", type=float, default=3600.0, show_default=True, help="Seconds to wait for each server to be ready."),
        # Not --baseline: across commands that names the findings baseline (`check`, `fix`, `models`).
        click.option(
            "--speedup-baseline/--no-speedup-baseline", "baseline", default=True, show_default=True,
            help="Also measure the target without speculation: the baseline the speedup is against.",
        ),
        click.option("--prompts", "prompts_file", type=click.Path(path_type=Path), help="Prompts file: .jsonl ({\"messages\": [...]} or {\"prompt\": ...}) or one prompt per line."),
        click.option("--max-new-tokens", type=int, default=256, show_default=True),
        click.option("--concurrency", default="1,16", show_default=True, help="Concurrency levels to measure."),
        click.option("--log-dir", type=click.Path(path_type=Path), help="Where the server logs go (default: a new temporary folder)."),
        click.option("--poll-interval", "poll_interval_s", type=float, default=2.0, hidden=True),
        click.option("--teardown-grace", "teardown_grace_s", type=float, default=30.0, hidden=True),
        click.option("--teardown-timeout", "teardown_timeout_s", type=float, default=120.0, hidden=True),
        click.option("--request-timeout", "request_timeout_s", type=float, default=600.0, hidden=True),
    ]
    for option in reversed(options):
        func = option(func)
    return func


VERIFY_PARAMS = (
    "model_path", "draft_model_path", "preflight_only", "ignore_preflight", "tp", "pp", "engine_options", "gpus", "engine_args",
    "launcher", "num_steps", "eagle_topk", "num_draft_tokens", "drafter_ids", "timeout_s", "baseline", "prompts_file",
    "max_new_tokens", "concurrency", "log_dir", "poll_interval_s", "teardown_grace_s", "teardown_timeout_s",
    "request_timeout_s",
)


def pop_verify_values(values: dict[str, Any]) -> dict[str, Any]:
    """Take the parameters `verify_run_options` added out of a command's keyword arguments (for a
    command such as `fix` that has options of its own)."""
    return {name: values.pop(name) for name in VERIFY_PARAMS if name in values}


def options_from_click(engine: str | None, engine_root: Path | None, output_format: str, **values: Any) -> Any:
    """A VerifyOptions from the values `verify_run_options` collected."""
    from eagle3lint.verify.options import VerifyOptions

    concurrency = _int_list(values.pop("concurrency"), "--concurrency") or []
    gpus = _int_list(values.pop("gpus"), "--gpus")
    return VerifyOptions(
        engine=engine,
        engine_root=engine_root,
        output_format=output_format,
        gpus=gpus,
        concurrency=tuple(concurrency),
        engine_args=list(values.pop("engine_args")),
        engine_options=tuple(values.pop("engine_options", ())),
        **values,
    )


@click.command()
@click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), help="Which engine (default: the installed one).")
@click.option("--engine-root", type=click.Path(path_type=Path), help="The engine package folder; the patched tree goes first on PYTHONPATH.")
@click.option(
    "--release",
    metavar="NAME==VERSION",
    help="Check the target class against a published release (downloaded once into the cache, as "
    "`check --release` does); a launched server is still the installed engine or --launcher.",
)
@verify_run_options
@click.option("--format", "output_format", type=click.Choice(["human", "json"]), default="human", show_default=True)
def verify(engine: str | None, engine_root: Path | None, release: str | None, output_format: str, **values: Any) -> None:
    """Launch the engine with EAGLE-3 and report whether speculation pays off.

    Pre-flight (configs, drafter weights, the target class) -> launch -> wait -> on a crash, the cause
    and the rule that predicts it -> acceptance length and tokens/s against a run without
    speculation -> teardown. Exit 0 only for a good verdict.
    """
    from eagle3lint.run.verify_report import write_human, write_json
    from eagle3lint.run.verify_run import run_verify
    from eagle3lint.verify.wait import Progress, TerminalProgress

    options = options_from_click(engine, engine_root, output_format, release=release, **values)
    progress = Progress() if output_format == "json" else TerminalProgress(sys.stderr)
    report = run_verify(options, progress)
    if output_format == "json":
        write_json(report, sys.stdout)
    else:
        write_human(report, sys.stdout)
    sys.exit(report.exit_code)


@click.command()
@click.option("--model-path", required=True, help="The target model: a local folder (its config.json is read).")
@click.option("--draft-model-path", help="The EAGLE-3 drafter: a local folder (config.json, safetensors). Left out: what the release does with EAGLE-3 and no drafter.")
@click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), help="Which engine (default: the installed one).")
@click.option("--engine-root", type=click.Path(path_type=Path), help="The engine package folder whose code is read.")
@click.option("--release", metavar="NAME==VERSION", help="Read a published release (downloaded once into the cache, as `check --release` does).")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor-parallel size of the launch.")
@click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True, help="Pipeline-parallel size of the launch.")
@click.option(
    "--engine-option", "engine_options", multiple=True, metavar="NAME[=VALUE]",
    help="A launch option (repeatable), as for `check`/`models`: two-batch-overlap, runner=v1|v2, ...; "
    "vLLM's runner also follows VLLM_USE_V2_MODEL_RUNNER in the environment.",
)
@click.option("--engine-arg", "engine_args", multiple=True, metavar="ARGS", help="Raw server flags of the launch, e.g. --engine-arg '--disable-cuda-graph' (repeatable).")
@click.option("--num-steps", type=int, help="Speculative steps (SGLang --speculative-num-steps; vLLM num_speculative_tokens).")
@click.option("--eagle-topk", type=int, help="SGLang --speculative-eagle-topk.")
@click.option("--num-draft-tokens", type=int, help="SGLang --speculative-num-draft-tokens.")
@DRAFTER_IDS
@click.option("--format", "output_format", type=click.Choice(["human", "json"]), default="human", show_default=True)
@click.option(
    "--explain", is_flag=True,
    help="Per drafter id: the layer the engine captures (the release's file:line) and the one the drafter was trained on (the evidence).",
)
def preflight(engine: str | None, engine_root: Path | None, release: str | None, output_format: str, explain: bool, **values: Any) -> None:
    """Will this drafter work with this target, on this release, with these launch options?

    One outcome (works, crash, silent, refused, unknown) with every item that led to it and its
    evidence (config key, tensor, release file:line); nothing is launched and no GPU is needed.
    Exit 0 only for works, 1 for any other outcome, 2 for usage errors.
    """
    from eagle3lint.run.verify_report import write_preflight_human, write_preflight_json
    from eagle3lint.run.verify_run import run_preflight_command
    from eagle3lint.verify.options import VerifyOptions

    options = VerifyOptions(
        engine=engine, engine_root=engine_root, release=release, output_format=output_format, preflight_only=True,
        engine_options=tuple(values.pop("engine_options")), engine_args=list(values.pop("engine_args")), **values,
    )
    report = run_preflight_command(options)
    if output_format == "json":
        write_preflight_json(report, sys.stdout)
    else:
        write_preflight_human(report, sys.stdout, explain=explain)
    sys.exit(report.exit_code)
