"""The command line. Exit codes: 0 clean, 1 findings, 2 usage/config/internal error."""

from __future__ import annotations

import gc
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from eagle3lint import __version__
from eagle3lint.common import heap, interrupts
from eagle3lint.common.errors import UsageError
from eagle3lint.common.escape import line_path, line_text
from eagle3lint.common.interrupts import EXIT_INTERRUPTED
from eagle3lint.engines import ENGINE_NAMES, adapter_for
from eagle3lint.fetch.engine_scope import resolve_engine, resolve_engines
from eagle3lint.report import FORMATS

if TYPE_CHECKING:
    from eagle3lint.common.findings import FileError
    from eagle3lint.model.result import CheckResult
    from eagle3lint.settings.config import Settings

__all__ = ["cli", "main", "resolve_engine", "resolve_engines"]

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


def _split_codes(values: tuple[str, ...]) -> list[str]:
    """``--select E3L001,wrapper-delegation-gap --select E3L1``: codes, prefixes or rule names
    (comma-separated, repeatable), as codes; one that names nothing is a usage error."""
    from eagle3lint.common.rule_codes import did_you_mean, resolve_code
    from eagle3lint.engines import known_rule_codes

    known = known_rule_codes()
    out: list[str] = []
    for value in _split_list(values):
        code = resolve_code(value, known)
        if code is None:
            raise UsageError(
                f"unknown rule code {value!r}{did_you_mean(value, known)} (a code, a prefix of one, or a rule's name: see `eagle3lint rules`)"
            )
        out.append(code)
    return out


def _split_list(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def exclude_options(func: F) -> F:
    func = click.option(
        "--extend-exclude", multiple=True, metavar="PATTERN",
        help="Glob patterns of files not to report on, added to the settings' exclude (comma-separated, repeatable).",
    )(func)
    func = click.option(
        "--exclude", multiple=True, metavar="PATTERN",
        help="Glob patterns of files not to report on, replacing the settings' exclude (comma-separated, repeatable).",
    )(func)
    return func


def with_excludes(settings: Settings, exclude: tuple[str, ...], extend_exclude: tuple[str, ...]) -> Settings:
    """The settings' ``exclude`` (replaced by ``--exclude``) and ``extend-exclude`` (extended by
    ``--extend-exclude``), as ruff takes them."""
    if exclude:
        settings.exclude = _split_list(exclude)
    if extend_exclude:
        settings.extend_exclude = [*settings.extend_exclude, *_split_list(extend_exclude)]
    return settings


class _LazyGroup(click.Group):
    """Subcommands living in other modules load when named (or listed by --help): ``check``
    on every commit should not pay for importing the fixer and the GPU launcher."""

    lazy = {"fix": "eagle3lint.commands.fix:fix", "verify": "eagle3lint.commands.verify:verify", "preflight": "eagle3lint.commands.verify:preflight",
            "engine-run": "eagle3lint.commands.engine_run:engine_run"}

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
    """Static compatibility linter for EAGLE-3 speculative decoding (SGLang, vLLM, LMDeploy)."""


def config_option(func: F) -> F:
    return click.option(
        "--config", "config_file", type=click.Path(path_type=Path),
        help="Settings file (default: the nearest pyproject.toml with [tool.eagle3lint]).",
    )(func)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@engine_options
@config_option
@click.option("--format", "--output-format", "output_format", type=click.Choice(list(FORMATS)), help="Output format (default: concise, or output-format in the settings).")
@click.option("--select", multiple=True, help="Rule codes, prefixes or names to enable, replacing the defaults (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rule codes, prefixes or names to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rule codes, prefixes or names to disable (comma-separated).")
@exclude_options
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path), help="Report only findings not recorded in this baseline file.")
@click.option("--no-baseline", is_flag=True, help="Report every finding, whatever baseline the settings name.")
@click.option("--write-baseline", "write_baseline_file", type=click.Path(path_type=Path), help="Record today's findings in this file and exit 0.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the check cache (show-config says where it is).")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), help="Exit 1 for findings at or above this severity (default: warning, or fail-on in the settings).")
@click.option(
    "--min-severity", "--severity", "min_severity", type=click.Choice(["error", "warning", "info"]),
    help="Report only findings at or above this severity (`--min-severity error`: errors only); the summary counts the rest.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported (2 still means an error).")
@click.option("--statistics", is_flag=True, help="Instead of the findings, how many there are of each rule (JSON with --format json).")
@click.option("-v", "--verbose", is_flag=True, help="Also list every model class with its classification and verdict.")
@click.option("-q", "--quiet", is_flag=True, help="Only the findings: no summary, nothing at all when there are none.")
@click.option("--fix", "fix_now", is_flag=True, help="Write the fixes first (as `eagle3lint fix --apply`), then report what remains.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a unified diff instead of the findings (as `eagle3lint fix`); nothing is written.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, unsafe fixes too; marks ([*]) the findings they fix.")
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
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    baseline_file: Path | None,
    no_baseline: bool,
    write_baseline_file: Path | None,
    no_cache: bool,
    fail_on: str | None,
    min_severity: str | None,
    exit_zero: bool,
    statistics: bool,
    verbose: bool,
    quiet: bool,
    fix_now: bool,
    show_diff: bool,
    unsafe_fixes: bool,
    engine_option: tuple[str, ...],
) -> None:
    """Check model classes against the engine's EAGLE-3 contract (`--fix`: fix first, `--diff`: show the fixes)."""
    from eagle3lint.fetch.file_scope import engine_files, is_file_list
    from eagle3lint.run.settings_load import load as load_settings

    settings = with_excludes(with_engine_options(load_settings(config_file), engine_option), exclude, extend_exclude)
    if no_baseline and baseline_file is not None:
        raise UsageError("--baseline and --no-baseline contradict each other")
    if quiet and verbose:
        raise UsageError("--quiet and --verbose contradict each other")
    if write_baseline_file is not None or no_baseline:
        settings.baseline = None  # a new baseline records every finding, not only new ones
    unsafe_fixes = unsafe_fixes or settings.unsafe_fixes
    if fix_now or show_diff:
        status = _check_fixes(
            show_diff, paths=paths, engine=engine, engine_root=engine_root, release=release, config_file=config_file,
            select=select, extend_select=extend_select, ignore=ignore, exclude=exclude, extend_exclude=extend_exclude,
            baseline_file=baseline_file, no_baseline=no_baseline, write_baseline_file=write_baseline_file, no_cache=no_cache,
            statistics=statistics, exit_zero=exit_zero, quiet=quiet, unsafe_fixes=unsafe_fixes, engine_options=engine_option,
            both=fix_now and show_diff,
        )
        if show_diff or status == EXIT_ERROR:
            sys.exit(status)
    # The baseline files are checked before the run: a folder, a pipe or a device named there
    # is refused at once, not read (or waited on) after a long analysis.
    from eagle3lint.settings.baseline import baseline_target, check_baseline_file

    reading = baseline_file or settings.baseline
    if write_baseline_file is not None:
        baseline_target(write_baseline_file)
    elif reading is not None:
        check_baseline_file(reading)
    extra = {name: list(o.extra_models) for name, o in settings.engines.items()}
    chosen_format = output_format or settings.output_format or "concise"
    if not release and is_file_list(paths) and chosen_format in ("concise", "github"):
        # A hook passes the changed files: only those in an engine tree (or in the configured
        # out-of-tree model folders) are ours to report on. (Structured formats always get a
        # document, so they take the full path, where a file outside any engine is an error.)
        flat = [p for folders in extra.values() for p in folders]
        kept = tuple(engine_files(paths, engine or settings.engine, engine_root or settings.engine_root, flat))
        paths = kept or _nothing_to_check(paths, engine or settings.engine, verbose)
    from eagle3lint.report import write_reports
    from eagle3lint.run.runner import run_check

    heap.no_collection_until_exit()
    selected, extended, ignored = _split_codes(select), _split_codes(extend_select), _split_codes(ignore)
    targets = resolve_engines(
        paths, engine or settings.engine, engine_root or (settings.engine_root if not paths else None), release, extra
    )
    results: list[tuple[CheckResult, list[Path]]] = []
    for found, scope in targets:
        if is_file_list(paths):
            from eagle3lint.fetch.file_scope import widen_for_call_site_changes

            scope, widening = widen_for_call_site_changes(found, scope)
            for path in widening if not quiet else ():
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
            # The concise lines mark what `fix --apply` fixes ([*]): the fixes without their diffs.
            fix_marks=chosen_format == "concise" and write_baseline_file is None and not statistics,
        )
        result.unsafe_fixes = unsafe_fixes
        say_errors(result.errors)
        if result.baseline_skipped and reading is not None and not quiet:
            from eagle3lint.report.paths import engine_label

            click.echo(
                f"eagle3lint: warning: baseline {line_path(str(reading))} not applied to {engine_label(result.engine)}: {line_text(result.baseline_skipped)}",
                err=True,
            )
        if min_severity is not None and write_baseline_file is None:
            result.keep_severity(min_severity)
        results.append((result, scope))
    for result, scope in results:
        _refuse_empty_scope(result, scope if paths else [], bool(release))
    errors = any(result.errors for result, _ in results)
    if write_baseline_file is not None:
        from eagle3lint.report.paths import engine_label
        from eagle3lint.settings.baseline import write_baseline

        count = write_baseline(write_baseline_file, [(result.findings, result.engine) for result, _ in results])
        read = " and ".join(engine_label(result.engine) for result, _ in results)
        if not quiet:
            click.echo(
                f"eagle3lint: wrote {count} finding{'s' if count != 1 else ''} of {read} to baseline {line_path(str(write_baseline_file))}",
                err=True,
            )
        sys.exit(EXIT_ERROR if errors else EXIT_CLEAN)
    if statistics:
        from eagle3lint.report.statistics import write_statistics

        for result, _ in results:
            write_statistics(result, sys.stdout, as_json=chosen_format == "json", quiet=quiet)
    else:
        write_reports(chosen_format, [result for result, _ in results], sys.stdout, verbose, quiet=quiet)
    if errors:
        sys.exit(EXIT_ERROR)
    from eagle3lint.run.runner import fails

    threshold = fail_on or settings.fail_on
    failing = any(fails(result.findings, threshold) for result, _ in results) and not exit_zero
    sys.exit(EXIT_FINDINGS if failing else EXIT_CLEAN)


def _check_fixes(show_diff: bool, *, both: bool, select: tuple[str, ...], extend_select: tuple[str, ...], **options: Any) -> int:
    """``check --fix`` and ``check --diff``, as ruff takes them: ``fix --apply`` (the check then
    reports what remains) or ``fix``'s dry run, with the check's selection; the fix's exit status."""
    if both:
        raise UsageError("--fix writes the fixes, --diff only shows them: give one")
    flag = "--diff" if show_diff else "--fix"
    for name, option, why in (
        ("write_baseline_file", "--write-baseline", "a baseline records findings, not fixes"),
        ("statistics", "--statistics", "the counts are of findings, not fixes"),
        ("baseline_file", "--baseline", "the fixes take the settings' baseline, or none with --no-baseline"),
    ):
        if options.pop(name):
            raise UsageError(f"{flag} and {option} do not go together ({why})")
    if extend_select:
        raise UsageError(f"{flag} fixes the rules --select names (or the default ones): --extend-select does not go with it")
    ctx = click.get_current_context()
    fix_command = cli.get_command(ctx, "fix")  # loaded by name, as the group loads it
    assert fix_command is not None
    try:
        ctx.invoke(fix_command, apply_fixes=not show_diff, select=select, **options)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return EXIT_CLEAN


def say_errors(errors: list[FileError], prefix: str = "") -> None:
    """Each file a run could not read, on standard error: its name and the problem, escaped
    (``prefix``: the release it is in, for a history)."""
    for error in errors:
        click.echo(f"{prefix}{line_path(error.path)}: error: {line_text(error.message)}", err=True)


def _nothing_to_check(paths: tuple[Path, ...], engine: str | None, verbose: bool) -> tuple[Path, ...]:
    """Files passed one by one, none in an engine tree: a hook's commit that touches no engine
    file exits at once, quietly. A file among them that looks like a model file is never passed
    silently: it goes on to the check (a usage error naming it, as in every format, unless it
    is a plugin's with an engine to check it against). Returns those files."""
    from eagle3lint.fetch.file_scope import model_like_files

    _refuse_other_engine(paths, engine)
    named = model_like_files(paths)
    if named:
        return tuple(named)
    if verbose:
        click.echo("eagle3lint: no model or engine file among the given files; nothing to check", err=True)
    sys.exit(EXIT_CLEAN)


def _refuse_empty_scope(result: CheckResult, scope: list[Path], release: bool = False) -> None:
    """A folder PATH (or plugin package) holding no model class is a mistake to say, not a clean
    run: "0 model classes checked" and exit 0 reads as "all is well". Files passed one by one
    (a pre-commit hook's changed files) may hold none. A published release always holds some:
    none is a damaged copy in the cache."""
    if release and not result.models:
        click.echo(
            f"eagle3lint: error: no model classes found in {line_text(result.engine.label)} ({line_path(str(result.engine.root))}): "
            "the copy in the release cache is damaged; remove that folder to fetch the release again",
            err=True,
        )
        sys.exit(EXIT_ERROR)
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
    from eagle3lint.fetch.engine_finder import discover_engine

    for path in paths:
        try:
            other = discover_engine([path])
        except UsageError:
            continue
        if other.name != engine:
            raise UsageError(f"{line_path(str(path))}: in a {other.name} tree, not {engine} (--engine / engine =)")


@cli.command("show-config")
@config_option
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def show_config(config_file: Path | None, output_format: str) -> None:
    """Print the settings in effect: each value a run uses, marked where it is a default."""
    from eagle3lint.run.settings_load import load as load_settings
    from eagle3lint.settings.view import write_json, write_text

    (write_json if output_format == "json" else write_text)(load_settings(config_file), sys.stdout)


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@engine_options
@click.option("--format", "--output-format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def contract(path: Path | None, engine: str | None, engine_root: Path | None, release: str | None, output_format: str) -> None:
    """Print the EAGLE-3 interface as derived from the engine's own source."""
    import json

    from eagle3lint.model.contract import extract_contract
    from eagle3lint.report.contract_text import write_contract_text

    found, _ = resolve_engine((path,) if path else (), engine, engine_root, release)
    result = extract_contract(found, adapter_for(found.name).contract_extension)
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2))
        sys.stdout.write("\n")
    else:
        write_contract_text(result, sys.stdout)
    say_errors(result.errors)
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
@click.option("--format", "--output-format", "output_format", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
@exclude_options
@click.option("--model", "model_names", multiple=True, metavar="NAME", help="Only these classes or architectures (repeatable; * and ? match any text).")
@click.option(
    "--min-severity", "--severity", "min_severity", type=click.Choice(["error", "warning", "info"]),
    help="Only the classes with a finding at or above this severity (`--min-severity error`: the broken ones).",
)
@click.option("--pre", "prereleases", is_flag=True, help="A range includes pre-releases too.")
@click.option(
    "--no-baseline", is_flag=True,
    help="Accepted as `check` takes it: the matrix never reads a baseline (each row shows every cause and its fix).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the check cache (show-config says where it is).")
@click.option("-v", "--verbose", is_flag=True, help="Table: the whole reason and every condition on a row of its own, however long.")
@launch_options
def models(
    paths: tuple[Path, ...],
    releases: tuple[str, ...],
    engine_root: Path | None,
    engine: str | None,
    config_file: Path | None,
    output_format: str,
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    model_names: tuple[str, ...],
    min_severity: str | None,
    prereleases: bool,
    no_baseline: bool,
    no_cache: bool,
    verbose: bool,
    engine_option: tuple[str, ...],
) -> None:
    """The EAGLE-3 support matrix: every model class with its status, outcome, conditions, reason, codes and fix;
    across releases with a list or range of them."""
    from eagle3lint.run.settings_load import load as load_settings

    settings = with_excludes(with_engine_options(load_settings(config_file), engine_option), exclude, extend_exclude)
    # A baseline says which findings a commit answers for; the matrix shows every model's
    # standing, and a baselined finding's fix is still its row's fix.
    settings.baseline = None
    queries = []
    if releases:  # version parsing loads only where a release is named
        from eagle3lint.fetch.release_query import parse_query

        queries = [parse_query(r) for r in releases]
    if len(queries) > 1 or (queries and queries[0].single is None):
        if min_severity is not None:
            raise UsageError("--min-severity narrows one release's matrix: a history shows each class across releases (--model NAME narrows it)")
        _models_history(queries, paths, engine, engine_root, settings, output_format, model_names, prereleases, no_cache, verbose)
        return
    from eagle3lint.report import matrix
    from eagle3lint.run.runner import run_check

    release = releases[0] if releases else None
    extra = [p for o in settings.engines.values() for p in o.extra_models]
    found, scope = resolve_engine(
        paths, engine or settings.engine, engine_root or (settings.engine_root if not paths else None), release, extra
    )
    # Each model's fix applicability comes from its findings' fixes.
    heap.no_collection_until_exit()
    result = run_check(found, scope, settings=settings, use_cache=not no_cache, with_fixes=True)
    say_errors(result.errors)
    _refuse_empty_scope(result, scope if paths else [], bool(release))
    unmatched = matrix.narrow(result, model_names)
    if min_severity is not None:
        matrix.narrow_severity(result, min_severity)
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
    from eagle3lint.fetch.release_query import one_engine
    from eagle3lint.report import history as report
    from eagle3lint.run.history import run_history

    name = one_engine(queries)
    if paths:
        raise UsageError("a history analyses whole releases: give no PATH (--model NAME narrows it to some classes)")
    if engine_root is not None:
        raise UsageError("--engine-root names one tree: a history reads published releases (--release)")
    if engine and engine != name:
        raise UsageError(f"--engine {engine} contradicts --release {queries[0].text}")
    result = run_history(queries, settings, use_cache=not no_cache, prereleases=prereleases, progress=_history_progress())
    for release, error in result.errors:
        say_errors([error], prefix=f"{name} {release}: ")
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
    """List every rule with its code, name and summary (wrapped to the terminal's width)."""
    from eagle3lint.engines import rule_registry

    width = _text_width()
    for rule in rule_registry():
        default = "" if rule.default_enabled else " (off by default)"
        head = f"{rule.code}  {rule.name:<28} {rule.severity:<8} fix: {rule.fix_safety:<13} "
        for line in _hanging(head, f"{rule.summary()}{default}", width):
            click.echo(line)


def _text_width() -> int | None:
    """The terminal's width (``COLUMNS`` where set), or None off a terminal: a pipe gets whole
    lines, one per item, for ``grep``."""
    import os
    import shutil

    if not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        return None
    return max(shutil.get_terminal_size().columns, 40)


def _hanging(head: str, text: str, width: int | None) -> list[str]:
    """``head`` then ``text``, wrapped to ``width``: the text's lines under its first one, or,
    where that leaves it less than 40 columns, all under the head, indented."""
    if width is None:
        return [head + text]
    import textwrap

    if width - len(head) >= 40:
        return textwrap.wrap(text, width, initial_indent=head, subsequent_indent=" " * len(head), break_on_hyphens=False)
    return [head.rstrip(), *textwrap.wrap(text, width, initial_indent="        ", subsequent_indent="        ", break_on_hyphens=False)]


@cli.command()
@click.argument("code")
@click.option("--engine", type=click.Choice(list(ENGINE_NAMES)), help="Show that engine's part (default: the engine of --release, the configuration or the working directory; none: every engine's).")
@click.option("--release", metavar="NAME==VERSION", help="Show the part of this release's engine (nothing is downloaded).")
def explain(code: str, engine: str | None, release: str | None) -> None:
    """Show one rule's documentation (by code or name), the engine's own part where it has one."""
    from eagle3lint.engines import rule_registry

    rule = rule_registry().by_code(code)
    if rule is None:
        from eagle3lint.common.rule_codes import did_you_mean
        from eagle3lint.engines import known_rule_codes

        raise UsageError(f"unknown rule {code!r}{did_you_mean(code, known_rule_codes())} (see `eagle3lint rules`)")
    click.echo(rule.documentation(_explained_engine(engine, release)), nl=False)


def _explained_engine(engine: str | None, release: str | None) -> str | None:
    """Whose part ``explain`` shows: the one named, a release's, the configuration's, or the
    engine the working directory is in (walking up) or holds (a checkout); else None (all)."""
    from eagle3lint.fetch.engine_finder import engine_name_at
    from eagle3lint.run.settings_load import load as load_settings

    if release:
        from eagle3lint.fetch.release_query import parse_release_spec

        name, _ = parse_release_spec(release)
        if engine and engine != name:
            raise UsageError(f"--engine {engine} contradicts --release {release}")
        return name
    if engine:
        return engine
    try:
        configured = load_settings().engine
    except UsageError:
        configured = None  # a broken configuration is `check`'s to report; the docs still show
    return configured or engine_name_at(Path.cwd())


def main(argv: list[str] | None = None) -> None:
    from eagle3lint.report.streams import finish_streams, prepare_streams

    interrupts.new_run()
    streams = prepare_streams()  # a closed stdout, a narrow encoding, names that are not UTF-8
    collecting = gc.isenabled()
    try:
        _run(argv)
    finally:
        heap.command_done(collecting)
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
    except UsageError as exc:  # messages name files and settings the user may not have written
        click.echo(f"eagle3lint: error: {line_text(str(exc))}", err=True)
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

