"""``eagle3lint fix``: show (default) or write the fixes the templates provide.

Exit codes: 0 nothing left to fix, 1 findings remain, 2 usage/config/internal error (or a
file that could not be analysed or written).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from eagle3lint.cli import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    _nothing_to_check,
    _split_codes,
    config_option,
    engine_options,
    exclude_options,
    say_errors,
    with_engine_options,
    with_excludes,
)
from eagle3lint.commands.verify import optional_verify_run_options
from eagle3lint.common import heap
from eagle3lint.common.errors import UsageError
from eagle3lint.common.escape import line_path, line_text
from eagle3lint.fetch.engine_scope import resolve_engine
from eagle3lint.fix.planner import finding_key

EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM during ``fix --apply``, raised where the process is, as Ctrl-C is."""


def _sigterm_ends_apply_cleanly(command: Callable[..., None]) -> Callable[..., None]:
    """With --apply, SIGTERM ends the command as Ctrl-C does (exit code 143)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        if not kwargs.get("apply_fixes"):
            command(*args, **kwargs)
            return
        try:
            with _terminate_as_interrupt():
                command(*args, **kwargs)
        except Terminated:
            click.echo("eagle3lint: terminated", err=True)
            sys.exit(EXIT_TERMINATED)

    return wrapper


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the command like Ctrl-C: the file being written is finished or its
    temporary file removed (``write_atomically``), and the workers are stopped. By default it
    would end the process on the spot, leaving ``.*.eagle3lint-tmp`` files beside the sources."""

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread (an embedding caller): leave signals to it
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@engine_options
@click.option("--apply", "apply_fixes", is_flag=True, help="Write the fixes (default: print them as a unified diff).")
@click.option("--unsafe-fixes", is_flag=True, help="Also include unsafe fixes (they change `forward` or guess a name).")
@click.option("--select", multiple=True, help="Rule codes, prefixes or names to fix (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes, prefixes or names to leave alone (comma-separated).")
@exclude_options
@config_option
@click.option("--no-baseline", is_flag=True, help="Fix every finding, whatever baseline the settings name (as `check --no-baseline` reports every one).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the check cache (show-config says where it is).")
@click.option(
    "--write-through-links", is_flag=True,
    help="With --apply, also write a file a symbolic link in the tree leads to outside the given PATHs (by default such a fix is shown, not written).",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain (2 still means an error).")
@click.option("-q", "--quiet", is_flag=True, help="No summary: the diff (dry run) and what went wrong, nothing else.")
@click.option("--verify", "then_verify", is_flag=True, help="After --apply, launch the patched engine with EAGLE-3 and report (see `eagle3lint verify`).")
@optional_verify_run_options
@_sigterm_ends_apply_cleanly
def fix(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    apply_fixes: bool,
    unsafe_fixes: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    config_file: Path | None,
    no_baseline: bool,
    no_cache: bool,
    write_through_links: bool,
    exit_zero: bool,
    quiet: bool,
    then_verify: bool,
    **verify_values: Any,
) -> None:
    """Fix findings from templates: print a unified diff (dry run), or write with --apply.

    With --apply --verify, the patched engine is then launched with EAGLE-3 (the options of
    `eagle3lint verify`), and the exit code is verify's unless fixing itself failed."""
    from eagle3lint.fetch.file_scope import engine_files, is_file_list
    from eagle3lint.run.settings_load import load as load_settings

    if then_verify and not apply_fixes:
        raise UsageError("--verify runs the patched engine: it needs --apply")
    if then_verify and not (verify_values.get("model_path") and verify_values.get("draft_model_path")):
        raise UsageError("--verify needs --model-path and --draft-model-path")
    settings = with_excludes(load_settings(config_file), exclude, extend_exclude)
    # `--engine-option` (declared with verify's options, which it feeds too): the verdicts a fix
    # must reach assume the same launch as `check` and `models`.
    settings = with_engine_options(settings, tuple(verify_values.get("engine_options") or ()))
    if no_baseline:
        settings.baseline = None
    unsafe_fixes = unsafe_fixes or settings.unsafe_fixes
    original_paths = paths
    if not release and is_file_list(paths) and not then_verify:
        # The pre-commit hook passes the changed files: only engine files are ours.
        extra = [p for o in settings.engines.values() for p in o.extra_models]
        paths = tuple(engine_files(paths, engine or settings.engine, engine_root or settings.engine_root, extra))
        # None in an engine tree: a commit's scripts and docs exit at once; a model file is said.
        paths = paths or _nothing_to_check(original_paths, engine or settings.engine, verbose=False)
    from eagle3lint.fix.diff import diff_base, diff_label, terminal_diff, unified_diff
    from eagle3lint.run.fix_session import prepare_fixes, write_changes
    from eagle3lint.run.fix_tally import not_fixed_lines, summary_lines, tally_fixes
    from eagle3lint.run.runner import run_check

    selected, ignored = _split_codes(select), _split_codes(ignore)
    extra_models = [p for o in settings.engines.values() for p in o.extra_models]
    found, scope = resolve_engine(
        paths, engine or settings.engine, engine_root or (settings.engine_root if not paths else None), release,
        extra_models,
    )
    heap.no_collection_until_exit()
    result = run_check(
        found, scope, select=selected or None, ignore=ignored or None, settings=settings, use_cache=not no_cache,
        need_index=True,
    )
    say_errors(result.errors)
    outcome = prepare_fixes(result, scope, selected or None, ignored or None, unsafe_fixes=unsafe_fixes)
    if apply_fixes and release:
        # A plugin's files are the user's to edit; the release's are a shared download.
        cached = os.path.realpath(found.root)
        if any(os.path.realpath(p).startswith(cached + os.sep) for p in outcome.changes):
            raise UsageError("--apply would edit the cached copy of the release; copy the tree and give its path instead")

    status = EXIT_ERROR if result.errors else EXIT_CLEAN
    base_note = ""
    if apply_fixes:
        from eagle3lint.fix.write import remove_stale_temp_files, write_target

        # What a fix killed outright (SIGKILL, a crash) left in the folders about to be written,
        # and in those of the files this run read: a killed run may have written everything
        # else, leaving this one nothing to write there.
        folders = {os.path.dirname(os.path.abspath(write_target(p))) for p in outcome.changes}
        if not release:  # a release's files are the cache's, never written by fix
            folders |= {os.path.dirname(os.path.abspath(m.path)) for m in result.models}
        for stale in remove_stale_temp_files(folders):
            click.echo(f"{line_path(stale)}: removed (a temporary file an interrupted fix left)", err=True)
        linked_out = {} if write_through_links else links_out_of_scope(list(outcome.changes), scope)
        kept = dataclasses.replace(outcome, changes={p: c for p, c in outcome.changes.items() if p not in linked_out})
        problems = {**write_changes(kept), **linked_out}
        for path, problem in problems.items():
            if problem:
                click.echo(f"{line_path(path)}: not written: {line_text(problem)}", err=True)
                status = EXIT_ERROR
        written = [p for p, problem in problems.items() if problem is None]
        unwritten = [p for p, problem in problems.items() if problem is not None]
        changed_files = len(written)
        if not unwritten:
            remaining = outcome.remaining
        else:
            # Some files were not written: what remains is what the written files did not fix.
            done_keys = {plan.key for plan in outcome.accepted if plan.paths <= set(written)}
            remaining = [f for f in result.findings if finding_key(f) not in done_keys]
    else:
        unwritten = []
        # A diff to apply goes out as it is (``> fix.patch``); one a person reads at a terminal
        # has the analysed files' control characters written out.
        shown = terminal_diff if sys.stdout.isatty() else str
        for path, change in sorted(outcome.changes.items()):
            sys.stdout.write(shown(unified_diff(change.source.text, change.new_text, diff_label(path, found.source_root))))
        changed_files = len(outcome.changes)
        if outcome.changes:
            bases = {diff_base(p, found.source_root) for p in outcome.changes}
            if bases != {Path.cwd().resolve()}:
                base_note = f"; paths are relative to {', '.join(line_path(str(b)) for b in sorted(bases))}"
        remaining = result.findings
    tally = tally_fixes(outcome, unsafe_fixes, unwritten)
    for line in not_fixed_lines(tally, found.source_root):  # one per finding the summary counts as not fixed
        click.echo(line, err=True)
    for line in summary_lines(tally, changed_files, applied=apply_fixes, base_note=base_note, unwritten=len(unwritten)) if not quiet else ():
        click.echo(line, err=True)
    if not tally.total and (result.suppressed or result.baselined) and not quiet:
        # A clean tree stays silent (a second run prints nothing); a tree that is clean only
        # because findings are suppressed or baselined says so.
        from eagle3lint.report.concise import hidden_counts

        click.echo(f"Nothing to fix: no findings ({hidden_counts(result).rstrip('; ')}).", err=True)
    from eagle3lint.run.runner import fails

    if fails(remaining, settings.fail_on) and not exit_zero:
        status = max(status, EXIT_FINDINGS)
    if then_verify and status != EXIT_ERROR:
        status = _verify_patched(found.name, found.root, verify_values)
    sys.exit(status)


def links_out_of_scope(paths: list[str], scope: list[Path]) -> dict[str, str]:
    """The files to write that are symbolic links leading outside the given PATHs (the README's
    promise: nothing outside them is written), each with the message naming its target. A
    repository's link may lead to any file the user can write."""
    from eagle3lint.fix.write import write_target

    roots = [os.path.realpath(str(item)) for item in scope]
    out = {}
    for path in paths:
        if not os.path.islink(path):
            continue
        real = os.path.realpath(write_target(path))
        if any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            continue
        out[path] = (
            f"a symbolic link to {line_path(real)}, outside the given paths: the fix is shown, not written "
            "(give --write-through-links, or the target's folder as a PATH, to write it)"
        )
    return out


def _verify_patched(engine: str, engine_root: Path, values: dict[str, Any]) -> int:
    """Launch the tree just patched (first on PYTHONPATH) with EAGLE-3 and report."""
    from eagle3lint.commands.verify import options_from_click
    from eagle3lint.run.verify_report import write_human
    from eagle3lint.run.verify_run import run_verify
    from eagle3lint.verify.wait import TerminalProgress

    click.echo(f"Verifying the patched {engine} tree at {line_path(str(engine_root))} ...", err=True)
    options = options_from_click(engine, engine_root, "human", **values)
    report = run_verify(options, TerminalProgress(sys.stderr))
    write_human(report, sys.stdout)
    return int(report.exit_code)
