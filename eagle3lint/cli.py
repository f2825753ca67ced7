"""The command line. Exit codes: 0 clean, 1 findings, 2 usage/config/internal error."""

from __future__ import annotations

import dataclasses
import gc
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from eagle3lint import __version__, interrupts
from eagle3lint.engines import ENGINE_NAMES
from eagle3lint.errors import UsageError
from eagle3lint.interrupts import EXIT_INTERRUPTED
from eagle3lint.report import FORMATS

if TYPE_CHECKING:
    from eagle3lint.config import Settings
    from eagle3lint.engine import Engine
    from eagle3lint.plugins import PluginPackage
    from eagle3lint.result import CheckResult
from eagle3lint.escape import line_text
from eagle3lint.report.paths import line_path

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def engine_options(func: F) -> F:
    func = click.option("--release", metavar="NAME==VERSION", help="Check a published release (downloaded once into the cache); PATHs are then relative to it (`models` takes a list or range).")(func)
    func = click.option("--engine-root", type=click.Path(path_type=Path), help="The engine package folder (overrides discovery).")(func)
    func = click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), help="Which engine (default: discovered from PATH).")(func)
    return func


def launch_options(func: F) -> F:
    return click.option(
        "--engine-option", "engine_option", multiple=True, metavar="NAME[=VALUE]",
        help="A launch option the verdicts assume (repeatable): pp, two-batch-overlap, dp-attention (SGLang), runner=v1|v2 (vLLM), or all; default: the engine's defaults.",
    )(func)


def with_engine_options(settings: Settings, chosen: tuple[str, ...]) -> Settings:
    """The settings' ``engine-options`` and the command line's, the command line's last."""
    if chosen:
        settings.engine_options = (*settings.engine_options, *chosen)
    return settings


def resolve_engine(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    extra_models: list[Path] | None = None,
) -> tuple[Engine, list[Path]]:
    """The engine to check against and the reporting scope. A PATH outside the engine's tree
    is read as a plugin (an out-of-tree package extending it: a second source root); the
    engine is then the one ``--engine-root``/``--release`` name, or the installed one."""
    from eagle3lint.engine_finder import discover_engine
    from eagle3lint.releases import fetch_release, parse_release_spec

    scope = list(paths)
    if release:
        name, _ = parse_release_spec(release)
        if engine and engine != name:
            raise UsageError(f"--engine {engine} contradicts --release {release}")
        package_root = fetch_release(release)
        base = package_root.parent
        # Relative PATHs are the release's; one that is not there but exists here is a plugin.
        scope = [p if p.is_absolute() or (not (base / p).exists() and p.exists()) else base / p for p in paths] or [package_root]
        for p in scope:
            if not p.exists():
                raise UsageError(f"{line_path(str(p))}: no such file or folder in {release}")
        found = discover_engine([], engine=name, engine_root=package_root)
    else:
        try:
            found = discover_engine(scope, engine=engine, engine_root=engine_root)
        except UsageError:
            extended = _engine_for_plugins(scope, engine) if scope and engine_root is None else None
            if extended is None:
                raise
            found = extended
        if not scope:
            scope = [found.root]
    plugins = _plugins_outside(found, scope, extra_models or [], release)
    if plugins:
        found = dataclasses.replace(found, plugins=plugins)
    from eagle3lint.libraries import attach_libraries

    return attach_libraries(found), scope


def _engine_for_plugins(scope: list[Path], engine: str | None) -> Engine | None:
    """For PATHs in no engine tree that hold plugin packages: the installed engine they extend
    (from their entry-point groups, or ``--engine``), None when there is none."""
    from eagle3lint.engine_finder import engine_at, installed_engine_root
    from eagle3lint.engines import adapter_for, adapters
    from eagle3lint.plugins import package_roots, read_plugin

    wanted: list[str] = [engine] if engine else []
    for path in scope:
        for root in package_roots(path) if path.exists() else []:
            plugin = read_plugin(root)
            for adapter in adapters():
                if plugin.entry_points_in(adapter.pack().plugin_groups) and adapter.name not in wanted:
                    wanted.append(adapter.name)
    if not wanted:
        return None
    found = installed_engine_root([adapter_for(name) for name in wanted])
    if found is None:
        names = " or ".join(wanted)
        raise UsageError(
            f"{line_path(str(scope[0]))}: a plugin package for {names}, and no {names} tree to check it against: "
            f"give --engine-root, or --release {wanted[0]}==VERSION"
        )
    return engine_at(*found)


def _plugins_outside(found: Engine, scope: list[Path], extra_models: list[Path], release: str | None) -> tuple[PluginPackage, ...]:
    """Every PATH must lie in the engine analysed (or hold it, as a checkout does, or be a
    configured out-of-tree model folder), or be a Python package read as a plugin: a PATH
    elsewhere would be reported clean unexamined."""
    from eagle3lint.engine_finder import located
    from eagle3lint.plugins import package_roots, read_plugin

    root = located(found.root)
    allowed = [located(e) for e in extra_models]
    plugins: dict[Path, PluginPackage] = {}
    for path in scope:
        target = located(path)
        if target == root or root in target.parents or target in root.parents:
            continue
        if any(target == e or e in target.parents for e in allowed):
            continue
        roots = [r for r in package_roots(path) if r.name != found.pack.package]
        if not roots:
            where = release or str(found.root)
            raise UsageError(
                f"{line_path(str(path))}: not inside the {found.name} tree being checked ({where}), and no Python package to read as a plugin"
            )
        for package in roots:
            plugins.setdefault(package, read_plugin(package))
    return tuple(plugins.values())


def _split_codes(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for value in values:
        out.extend(v.strip().upper() for v in value.split(",") if v.strip())
    return out


class _LazyGroup(click.Group):
    """Subcommands living in other modules load when named (or listed by --help): ``check``
    on every commit should not pay for importing the fixer and the GPU launcher."""

    lazy = {"fix": "eagle3lint.fix.cli:fix", "verify": "eagle3lint.verify.cli:verify"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            import importlib

            module, _, attr = self.lazy[cmd_name].partition(":")
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eagle3lint")
def cli() -> None:
    """Static compatibility linter for EAGLE-3 speculative decoding (SGLang, vLLM)."""


def config_option(func: F) -> F:
    return click.option(
        "--config", "config_file", type=click.Path(path_type=Path),
        help="Settings file (default: the nearest pyproject.toml with [tool.eagle3lint]).",
    )(func)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@engine_options
@config_option
@click.option("--format", "output_format", type=click.Choice(list(FORMATS)), help="Output format (default: concise, or output-format in the settings).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable, replacing the defaults (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable (comma-separated).")
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path), help="Report only findings not recorded in this baseline file.")
@click.option("--no-baseline", is_flag=True, help="Report every finding, whatever baseline the settings name.")
@click.option("--write-baseline", "write_baseline_file", type=click.Path(path_type=Path), help="Record today's findings in this file and exit 0.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write .eagle3lint_cache/.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), help="Exit 1 for findings at or above this severity (default: warning, or fail-on in the settings).")
@click.option("-v", "--verbose", is_flag=True, help="Also list every model class with its classification and verdict.")
@launch_options
def check(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    config_file: Path | None,
    output_format: str | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    baseline_file: Path | None,
    no_baseline: bool,
    write_baseline_file: Path | None,
    no_cache: bool,
    fail_on: str | None,
    verbose: bool,
    engine_option: tuple[str, ...],
) -> None:
    """Check model classes against the engine's EAGLE-3 contract."""
    from eagle3lint.config import load_settings
    from eagle3lint.file_scope import engine_files, is_file_list

    settings = with_engine_options(load_settings(config_file), engine_option)
    if no_baseline and baseline_file is not None:
        raise UsageError("--baseline and --no-baseline contradict each other")
    if write_baseline_file is not None or no_baseline:
        settings.baseline = None  # a new baseline records every finding, not only new ones
    # The baseline files are checked before the run: a folder, a pipe or a device named there
    # is refused at once, not read (or waited on) after a long analysis.
    from eagle3lint.baseline import baseline_target, check_baseline_file

    reading = baseline_file or settings.baseline
    if write_baseline_file is not None:
        baseline_target(write_baseline_file)
    elif reading is not None:
        check_baseline_file(reading)
    extra = [p for o in settings.engines.values() for p in o.extra_models]
    chosen_format = output_format or settings.output_format or "concise"
    if not release and is_file_list(paths) and chosen_format in ("concise", "github"):
        # A hook passes the changed files: only those in an engine tree (or in the configured
        # out-of-tree model folders) are ours to report on. (Structured formats always get a
        # document, so they take the full path, where a file outside any engine is an error.)
        kept = tuple(engine_files(paths, engine or settings.engine, engine_root or settings.engine_root, extra))
        if not kept:
            _refuse_other_engine(paths, engine or settings.engine)
            if verbose:
                click.echo("eagle3lint: no model or engine file among the given files; nothing to check", err=True)
            sys.exit(EXIT_CLEAN)
        paths = kept
    from eagle3lint.report import writer_for
    from eagle3lint.runner import run_check

    selected, extended, ignored = _split_codes(select), _split_codes(extend_select), _split_codes(ignore)
    _validate_codes([*selected, *extended, *ignored])
    found, scope = resolve_engine(
        paths, engine or settings.engine, engine_root or (settings.engine_root if not paths else None), release, extra
    )
    if is_file_list(paths):
        from eagle3lint.file_scope import widen_for_call_site_changes

        scope, widening = widen_for_call_site_changes(found, scope)
        for path in widening:
            click.echo(f"eagle3lint: {line_path(str(path))} touches the engine's EAGLE-3 calls; checking every model", err=True)
    result = run_check(
        found,
        scope,
        select=selected or None,
        ignore=ignored or None,
        extend_select=extended or None,
        settings=settings,
        use_cache=not no_cache,
        baseline=None if write_baseline_file else baseline_file,
        # Each finding's fix (applicability, description, diff), in the formats that carry it.
        with_fixes=chosen_format in ("json", "full") and write_baseline_file is None,
    )
    for error in result.errors:
        click.echo(f"{line_path(error.path)}: error: {error.message}", err=True)
    _refuse_empty_scope(result, scope if paths else [])
    if write_baseline_file is not None:
        from eagle3lint.baseline import write_baseline

        count = write_baseline(write_baseline_file, result.findings, result.engine)
        click.echo(f"eagle3lint: wrote {count} finding{'s' if count != 1 else ''} to baseline {write_baseline_file}", err=True)
        sys.exit(EXIT_ERROR if result.errors else EXIT_CLEAN)
    writer_for(chosen_format)(result, sys.stdout, verbose)
    if result.errors:
        sys.exit(EXIT_ERROR)
    from eagle3lint.runner import fails

    sys.exit(EXIT_FINDINGS if fails(result.findings, fail_on or settings.fail_on) else EXIT_CLEAN)


def _refuse_empty_scope(result: CheckResult, scope: list[Path]) -> None:
    """A folder PATH (or plugin package) holding no model class is a mistake to say, not a clean
    run: "0 model classes checked" and exit 0 reads as "all is well". Files passed one by one
    (a pre-commit hook's changed files) may hold none."""
    empty = [p for p in scope if p.is_dir() and not any(m.in_scope([p]) for m in result.models)]
    if not empty:
        return
    where = ", ".join(line_path(str(p)) for p in empty)
    plugins = " (read as a plugin: no registration, entry point or EntryClass names a model class in it)" if result.engine.plugins else ""
    click.echo(
        f"eagle3lint: error: no model classes found under {where}{plugins}; give the engine's models folder, "
        "a model file, or the plugin package that registers the models",
        err=True,
    )
    sys.exit(EXIT_ERROR)


def _refuse_other_engine(paths: tuple[Path, ...], engine: str | None) -> None:
    """``--engine vllm`` given files of an SGLang tree: a usage error, not a silent pass."""
    if engine is None:
        return
    from eagle3lint.engine_finder import discover_engine

    for path in paths:
        try:
            other = discover_engine([path])
        except UsageError:
            continue
        if other.name != engine:
            raise UsageError(f"{line_path(str(path))}: in a {other.name} tree, not {engine} (--engine / engine =)")


def _validate_codes(codes: list[str]) -> None:
    from eagle3lint.engines import is_known_code

    for code in codes:
        if not is_known_code(code):
            raise UsageError(f"unknown rule code {code!r} (see `eagle3lint rules`)")


@cli.command("show-config")
@config_option
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def show_config(config_file: Path | None, output_format: str) -> None:
    """Print the settings in effect: each value a run uses, marked where it is a default."""
    from eagle3lint.config import load_settings
    from eagle3lint.settings_view import write_json, write_text

    (write_json if output_format == "json" else write_text)(load_settings(config_file), sys.stdout)


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@engine_options
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def contract(path: Path | None, engine: str | None, engine_root: Path | None, release: str | None, output_format: str) -> None:
    """Print the EAGLE-3 interface as derived from the engine's own source."""
    import json

    from eagle3lint.contract import extract_contract
    from eagle3lint.report.contract_text import write_contract_text

    found, _ = resolve_engine((path,) if path else (), engine, engine_root, release)
    result = extract_contract(found)
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2))
        sys.stdout.write("\n")
    else:
        write_contract_text(result, sys.stdout)
    for error in result.errors:
        click.echo(f"{line_path(error.path)}: error: {error.message}", err=True)
    sys.exit(EXIT_ERROR if result.errors else EXIT_CLEAN)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--release", "releases", multiple=True, metavar="NAME==VERSION|RANGE",
    help="A published release (downloaded once into the cache; PATHs are then relative to it), or several: "
    "a list (sglang==0.5.8,0.5.10), a PEP 440 range ('sglang>=0.5.2,<=0.5.23'), or the option repeated: "
    "one column per release.",
)
@click.option("--engine-root", type=click.Path(path_type=Path), help="The engine package folder (overrides discovery).")
@click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), help="Which engine (default: discovered from PATH).")
@config_option
@click.option("--format", "output_format", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
@click.option("--model", "model_names", multiple=True, metavar="NAME", help="Only these classes or architectures (repeatable; * and ? match any text).")
@click.option("--pre", "prereleases", is_flag=True, help="A range includes pre-releases too.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write .eagle3lint_cache/.")
@click.option("-v", "--verbose", is_flag=True, help="Table: the whole reason and every condition on a row of its own, however long.")
@launch_options
def models(
    paths: tuple[Path, ...],
    releases: tuple[str, ...],
    engine_root: Path | None,
    engine: str | None,
    config_file: Path | None,
    output_format: str,
    model_names: tuple[str, ...],
    prereleases: bool,
    no_cache: bool,
    verbose: bool,
    engine_option: tuple[str, ...],
) -> None:
    """The EAGLE-3 support matrix: every model class with its status, outcome, conditions, reason, codes and fix;
    across releases with a list or range of them."""
    from eagle3lint.config import load_settings
    from eagle3lint.release_query import parse_query

    settings = with_engine_options(load_settings(config_file), engine_option)
    queries = [parse_query(r) for r in releases]
    if len(queries) > 1 or (queries and queries[0].single is None):
        _models_history(queries, paths, engine, engine_root, settings, output_format, model_names, prereleases, no_cache, verbose)
        return
    from eagle3lint.report import matrix
    from eagle3lint.runner import run_check

    release = releases[0] if releases else None
    extra = [p for o in settings.engines.values() for p in o.extra_models]
    found, scope = resolve_engine(
        paths, engine or settings.engine, engine_root or (settings.engine_root if not paths else None), release, extra
    )
    # Each model's fix applicability comes from its findings' fixes.
    result = run_check(found, scope, settings=settings, use_cache=not no_cache, with_fixes=True)
    for error in result.errors:
        click.echo(f"{line_path(error.path)}: error: {error.message}", err=True)
    _refuse_empty_scope(result, scope if paths else [])
    unmatched = matrix.narrow(result, model_names)
    if unmatched and len(unmatched) == len(model_names):
        raise UsageError(_unmatched_names(unmatched, result.engine.label))
    if output_format == "table":
        matrix.write_table(result, sys.stdout, verbose=verbose)
    else:
        {"json": matrix.write_json, "markdown": matrix.write_markdown}[output_format](result, sys.stdout)
    if unmatched:
        click.echo(f"eagle3lint: error: {_unmatched_names(unmatched, result.engine.label)}", err=True)
    sys.exit(EXIT_ERROR if result.errors or unmatched else EXIT_CLEAN)


def _unmatched_names(names: list[str], where: str) -> str:
    listed = ", ".join(line_text(repr(n)) for n in names)
    return f"--model {listed}: no model class or architecture of that name in {line_text(where)}"


def _models_history(
    queries: list[Any],
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    settings: Settings,
    output_format: str,
    model_names: tuple[str, ...],
    prereleases: bool,
    no_cache: bool,
    verbose: bool,
) -> None:
    """``models`` over several releases: one column per release, each row's history."""
    from eagle3lint.history import run_history
    from eagle3lint.release_query import one_engine
    from eagle3lint.report import history as report

    name = one_engine(queries)
    if paths:
        raise UsageError("a history analyses whole releases: give no PATH (--model NAME narrows it to some classes)")
    if engine_root is not None:
        raise UsageError("--engine-root names one tree: a history reads published releases (--release)")
    if engine and engine != name:
        raise UsageError(f"--engine {engine} contradicts --release {queries[0].text}")
    result = run_history(queries, settings, use_cache=not no_cache, prereleases=prereleases, progress=_history_progress())
    for release, error in result.errors:
        click.echo(f"{name} {release}: {line_path(error.path)}: error: {error.message}", err=True)
    unmatched = result.narrowed(model_names)
    where = f"{name} {result.releases[0]} to {result.releases[-1]}" if result.releases else name
    if unmatched and len(unmatched) == len(model_names) and result.releases:
        raise UsageError(_unmatched_names(unmatched, where))
    if output_format == "table":
        report.write_table(result, sys.stdout, verbose=verbose)
    else:
        {"json": report.write_json, "markdown": report.write_markdown}[output_format](result, sys.stdout)
    pinned = {pin for q in queries for pin in q.pins}
    problems = [f"{name} {s.release}: {s.problem}" for s in result.skipped if s.release in pinned]
    if result.failure:
        problems.append(f"stopped after {len(result.releases)} of {len(result.planned)} releases: {result.failure}")
    if unmatched:
        problems.append(_unmatched_names(unmatched, where))
    for problem in problems:
        click.echo(f"eagle3lint: error: {line_text(problem)}", err=True)
    sys.exit(EXIT_ERROR if problems or result.errors else EXIT_CLEAN)


def _history_progress() -> Callable[[str], None] | None:
    """Which release is being analysed, on one line of a terminal (nothing elsewhere)."""
    if not sys.stderr.isatty():
        return None

    def show(text: str) -> None:
        sys.stderr.write(f"\r\x1b[Keagle3lint: analysing {line_text(text)} ..." if text else "\r\x1b[K")
        sys.stderr.flush()

    return show


@cli.command()
def rules() -> None:
    """List every rule with its code, name and summary."""
    from eagle3lint.engines import rule_registry

    for rule in rule_registry():
        default = "" if rule.default_enabled else " (off by default)"
        click.echo(f"{rule.code}  {rule.name:<28} {rule.severity:<8} fix: {rule.fix_safety:<13} {rule.summary()}{default}")


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Show one rule's documentation (by code or name)."""
    from eagle3lint.engines import rule_registry

    rule = rule_registry().by_code(code)
    if rule is None:
        raise UsageError(f"unknown rule {code!r} (see `eagle3lint rules`)")
    click.echo(rule.documentation(), nl=False)


def main(argv: list[str] | None = None) -> None:
    from eagle3lint.report.streams import finish_streams, prepare_streams

    interrupts.new_run()
    streams = prepare_streams()  # a closed stdout, a narrow encoding, names that are not UTF-8
    try:
        _run(argv)
    finally:
        # What the run built lives until the process ends; a frozen heap spares the
        # interpreter's final collection over it (a quarter of a second on vLLM's tree).
        gc.freeze()
        problem = finish_streams(streams)
        if problem is not None:
            click.echo(f"eagle3lint: error: {problem}", err=True)
            sys.exit(EXIT_ERROR)  # replaces the run's own exit: its report was lost


def _run(argv: list[str] | None) -> None:
    try:
        cli.main(args=argv, prog_name="eagle3lint", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:  # click's form of Ctrl-C
        interrupts.say_interrupted()
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_ERROR)
    except UsageError as exc:
        click.echo(f"eagle3lint: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        interrupts.say_interrupted()
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away (``| head -1``): nothing to say
        sys.exit(EXIT_ERROR)
    except Exception:  # an internal error is still exit 2, with enough to file a bug
        click.echo("eagle3lint: internal error (please report):", err=True)
        click.echo(traceback.format_exc(), err=True)
        sys.exit(EXIT_ERROR)

