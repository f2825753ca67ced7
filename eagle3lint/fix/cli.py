"""``eagle3lint fix``: show (default) or write the fixes the templates provide.

Exit codes: 0 nothing left to fix, 1 findings remain, 2 usage/config/internal error (or a
file that could not be analysed or written).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click

from eagle3lint.cli import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    _split_codes,
    engine_options,
    resolve_engine,
)
from eagle3lint.errors import UsageError
from eagle3lint.report.paths import display_path

if TYPE_CHECKING:
    from eagle3lint.fix.planner import PlannedFix


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}{'es' if word.endswith(('x', 's')) else 's'}"


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@engine_options
@click.option("--apply", "apply_fixes", is_flag=True, help="Write the fixes (default: print them as a unified diff).")
@click.option("--unsafe-fixes", is_flag=True, help="Also include unsafe fixes (they change `forward` or guess a name).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to fix (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to leave alone (comma-separated).")
def fix(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    apply_fixes: bool,
    unsafe_fixes: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
) -> None:
    """Fix findings from templates: print a unified diff (dry run), or write with --apply."""
    from eagle3lint.checks import REGISTRY
    from eagle3lint.fix.diff import diff_base, diff_label, unified_diff
    from eagle3lint.fix.planner import DISPLAY_ONLY, UNSAFE
    from eagle3lint.fix.session import prepare_fixes, write_changes
    from eagle3lint.runner import run_check

    selected, ignored = _split_codes(select), _split_codes(ignore)
    for code in [*selected, *ignored]:
        if code != "ALL" and not any(r.code.startswith(code) for r in REGISTRY):
            raise UsageError(f"unknown rule code {code!r} (see `eagle3lint rules`)")
    if apply_fixes and release:
        raise UsageError("--apply would edit the cached copy of the release; copy the tree and give its path instead")
    found, scope = resolve_engine(paths, engine, engine_root, release)
    result = run_check(found, scope, select=selected or None, ignore=ignored or None)
    for error in result.errors:
        click.echo(f"{display_path(error.path)}: error: {error.message}", err=True)
    outcome = prepare_fixes(result, scope, selected or None, ignored or None, unsafe_fixes=unsafe_fixes)

    status = EXIT_ERROR if result.errors else EXIT_CLEAN
    for rejection in outcome.rejections:
        f = rejection.fix.finding
        click.echo(f"{display_path(f.path)}:{f.line}: {f.code} `{f.class_name}.{f.method}` not fixed: {rejection.reason}", err=True)
    fixed = len(outcome.accepted)
    files = _plural(len(outcome.changes), "file")
    if apply_fixes:
        problems = write_changes(outcome)
        for path, problem in problems.items():
            if problem:
                click.echo(f"{display_path(path)}: not written: {problem}", err=True)
                status = EXIT_ERROR
        written = [p for p, problem in problems.items() if problem is None]
        if written:
            fixed = sum(1 for plan in outcome.accepted if plan.paths <= set(written))
            click.echo(f"Fixed {_plural(fixed, 'finding')} in {_plural(len(written), 'file')}.", err=True)
        remaining = outcome.remaining if all(p is None for p in problems.values()) else result.findings
    else:
        for path, change in sorted(outcome.changes.items()):
            sys.stdout.write(unified_diff(change.source.text, change.new_text, diff_label(path, found.source_root)))
        if outcome.changes:
            bases = {diff_base(p, found.source_root) for p in outcome.changes}
            where = "" if bases == {Path.cwd().resolve()} else f"; paths are relative to {', '.join(str(b) for b in sorted(bases))}"
            click.echo(f"Would fix {_plural(fixed, 'finding')} in {files} (dry run: --apply writes them{where}).", err=True)
        remaining = result.findings
    _summarise_rest(outcome.plans, outcome.accepted, unsafe_fixes, UNSAFE, DISPLAY_ONLY, "applied" if apply_fixes else "shown")
    if remaining:
        click.echo(f"{_plural(len(remaining), 'finding')} remain{'s' if len(remaining) == 1 else ''}.", err=True)
        status = max(status, EXIT_FINDINGS)
    sys.exit(status)


def _summarise_rest(plans: list[PlannedFix], accepted: list[PlannedFix], unsafe_fixes: bool, unsafe: str, display_only: str, verb: str) -> None:
    taken = {id(p) for p in accepted}
    counts = Counter(p.applicability for p in plans if id(p) not in taken)
    if counts[unsafe] and not unsafe_fixes:
        click.echo(f"{_plural(counts[unsafe], 'unsafe fix')} not {verb} (add --unsafe-fixes).", err=True)
    if counts[display_only]:
        count = counts[display_only]
        has = "has only a suggestion" if count == 1 else "have only suggestions"
        click.echo(f"{_plural(count, 'finding')} {has} to apply by hand (see `eagle3lint check --format json`).", err=True)
