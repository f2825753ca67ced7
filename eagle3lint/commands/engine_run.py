"""``eagle3lint engine-run``: confirm verdicts by running the engine's CPU build."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click

from eagle3lint.common.errors import UsageError


@click.command("engine-run")
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every target class the static check finds in the engine's installed tree.")
@click.option("--model-path", type=click.Path(path_type=Path, file_okay=False), help="Launch this model folder (its config.json) instead of a shrunken config.")
@click.option("--engine", type=click.Choice(["vllm", "sglang"]), default="vllm", show_default=True, help="Which engine's CPU build (sglang: its start-up up to the drafting wall).")
@click.option("--engine-python", type=click.Path(path_type=Path, dir_okay=False), help="The engine environment's interpreter (default: EAGLE3LINT_ENGINE_PYTHON, else the one .ci/install-vllm-cpu made; for sglang EAGLE3LINT_SGLANG_ENGINE_PYTHON, else .ci/install-sglang-cpu's).")
@click.option("--release", metavar="VERSION", help="The engine environment installed for this release (e.g. 0.5.23 with `bash .ci/install-sglang-cpu 0.5.23`).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=240.0, show_default=True, help="Seconds each launch may take.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Launches side by side.")
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), help="Where configs, records and engine logs go (default: a new temporary folder).")
@click.option("--format", "output_format", type=click.Choice(["human", "json", "markdown"]), default="human", show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
def engine_run(
    names: tuple[str, ...], every: bool, model_path: Path | None, engine: str, engine_python: Path | None, release: str | None,
    timeout_s: float, jobs: int, workdir: Path | None, output_format: str, quiet: bool,
) -> None:
    """Launch the engine's CPU build with EAGLE-3 on model classes and compare with `models`.

    For each class (NAMES: classes or architectures, or --all): a shrunken config from the
    architecture's own config class, a one-layer EAGLE-3 drafter to match, dummy weights; records
    the layer ids the runner asked for, the auxiliary states the forward returned and which
    layer's residual stream each equals, or the exception. Without the drafter too where the launch
    fails, so that a failing set-up is never blamed on EAGLE-3. Exit 0 when every run that set up
    agrees with the prediction, 1 otherwise, 2 for usage errors (no engine installed).
    """
    from eagle3lint.enginerun import report
    from eagle3lint.enginerun.drafter import target_sizes, write_drafter
    from eagle3lint.enginerun.sweep import (
        Launch,
        find_engine,
        pair_prediction,
        predictions,
        run_many,
        select,
    )
    from eagle3lint.engines import engine_run_for

    if not names and not every and model_path is None:
        raise UsageError("engine-run: name a class or architecture, --all, or --model-path")
    chosen = _architecture_of(model_path) if model_path is not None else None
    spec = engine_run_for(engine)
    if release is not None and release.startswith(f"{engine}=="):
        release = release.split("==", 1)[1]
    env = find_engine(spec, engine_python, release)
    if env.package_root is None:
        raise UsageError(f"engine-run: {env.python}: {engine} has no package folder to read")
    found = predictions(env.package_root, spec)
    if model_path is not None and chosen is not None:
        folder = workdir or Path(tempfile.mkdtemp(prefix="eagle3lint-engine-run-"))
        config = json.loads((model_path / "config.json").read_text(encoding="utf-8"))
        drafter = write_drafter(folder / "drafter", *target_sizes(config))
        launches = [Launch(chosen, model_path, drafter)]
        # This pair's own verdict: its config decides what the class-level one cannot (the layer ids).
        pair = pair_prediction(env.package_root, spec, launches[0])
        if pair is not None:
            found = {**found, chosen: pair}
        workdir = folder
    else:
        launches = select(found, names, every)
    unknown = [launch.architecture for launch in launches if launch.architecture not in found]
    if unknown and not quiet:
        click.echo(f"eagle3lint: note: not a target class of {engine} {env.version}: {', '.join(unknown)} (run without a prediction)", err=True)

    def progress(done: int, total: int, run: object) -> None:
        if not quiet:
            click.echo(report.progress_line(done, total, run), err=True)  # type: ignore[arg-type]

    runs = run_many(env, launches, found, timeout_s, jobs, workdir, progress)
    if output_format == "json":
        report.write_json(env, runs, sys.stdout)
    elif output_format == "markdown":
        report.write_markdown(env, runs, sys.stdout)
    else:
        report.write_human(env, runs, sys.stdout)
    sys.exit(1 if any(r.agree is False for r in runs) else 0)


def _architecture_of(folder: Path) -> str:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        architecture = config["architectures"][0]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise UsageError(f"engine-run: {folder / 'config.json'}: no architecture to launch ({exc.__class__.__name__})") from exc
    if not isinstance(architecture, str):
        raise UsageError(f"engine-run: {folder / 'config.json'}: architectures[0] is not a name")
    return architecture
