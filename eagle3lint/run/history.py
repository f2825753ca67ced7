"""Each model's EAGLE-3 status across engine releases (``models --release 'sglang>=0.5.2,<=0.5.23'``).

The releases a query names (``release_query``; a range is matched against the package index's
list) are fetched and analysed one after the other, oldest first, in this process: each with the
run's settings and launch options, as ``models --release`` would one release. Summaries are
shared across trees in the cache, so a release costs little more than the files that changed
since the one before. What is kept of each is one cell per model: its status, outcome and codes.

A row is a model class as the engine registers it: the same class name in two releases is one
row where the architectures registered for it overlap (vLLM registers some class names twice,
in different packages, for different architectures: two rows), and a class absent from a release
has no cell there. Platform packages are no new class: where a release registers the class in
several (vLLM 0.34.0's ``[amd]``, ``[nvidia]``), or moves it into them, the row says in which
(``variants``, per release), and the class splits into a row per platform only where the
platforms disagree on its status or outcome.

"First supported" is the first release analysed where the class is supported; it is marked
"or earlier" (``≤ 0.5.20``) where a release before it that the package index lists was not
analysed (a range that starts after the engine's first release), or, without the index's list,
where it is the first release analysed.

A release that is published without a wheel is noted and skipped; a failure to fetch one (the
network, a damaged wheel) ends the history there: what was analysed so far is still reported.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from eagle3lint.common.errors import ReleaseFetchError, UsageError
from eagle3lint.fetch.release_query import ReleaseQuery, one_engine, select
from eagle3lint.model.history_result import Cell, History, ModelHistory, Skipped
from eagle3lint.settings.config import Settings

Fetch = Callable[[str, int], Any]  # (NAME==VERSION, releases to keep) -> the package folder


def plan(queries: list[ReleaseQuery], prereleases: bool) -> tuple[str, list[str]]:
    """The engine and the releases the queries select, oldest first. A range asks the package
    index for its releases; a list of exact releases does not."""
    from eagle3lint.fetch import pip_index

    engine = one_engine(queries)
    ranged = [q for q in queries if q.specifier is not None]
    published: list[str] = []
    if ranged:
        pre = prereleases or any(q.wants_prereleases() for q in ranged)
        published = pip_index.listing(engine, pre=pre).versions
    chosen = select(queries, published, prereleases)
    if not chosen:
        asked = " ".join(q.text for q in queries)
        latest = f" (the latest published is {engine} {published[0]})" if published else ""
        hint = "" if prereleases else "; pre-releases are left out unless --pre asks for them"
        raise UsageError(f"--release {asked}: no published {engine} release matches{latest}{hint}")
    return engine, chosen


def run_history(
    queries: list[ReleaseQuery],
    settings: Settings,
    use_cache: bool = True,
    prereleases: bool = False,
    fetch: Fetch | None = None,
    progress: Callable[[str], None] | None = None,
) -> History:
    """Analyse each release the queries select and lay the models side by side. ``progress``
    is told which release is analysed (and "" when it is done)."""
    from eagle3lint.fetch import pip_index
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.fetch.libraries import attach_libraries
    from eagle3lint.fetch.releases import fetch_release
    from eagle3lint.report.matrix import rows
    from eagle3lint.run.runner import run_check

    engine, chosen = plan(queries, prereleases)
    history = History(engine, [q.text for q in queries], chosen)
    fetch = fetch or (lambda spec, keep: fetch_release(spec, keep=keep))
    for n, release in enumerate(chosen, 1):
        try:
            root = fetch(f"{engine}=={release}", len(chosen))
        except pip_index.NoWheel as exc:
            history.skipped.append(Skipped(release, str(exc)))
            continue
        except ReleaseFetchError as exc:
            history.failure = str(exc)
            break
        if progress is not None:
            progress(f"{engine} {release} ({n} of {len(chosen)})")
        found = attach_libraries(discover_engine([], engine=engine, engine_root=root))
        result = run_check(found, [root], settings=settings, use_cache=use_cache)
        if progress is not None:
            progress("")  # the line is clear for what the next fetch says
        history.releases.append(release)
        history.errors.extend((release, e) for e in result.errors)
        if history.options is None and result.options is not None:
            history.options = result.options.to_json()
        history.refusals[release] = sorted({_described(found, r.option) for r in result.contract.launch_refusals})
        for row in rows(result):
            m = row.model
            history.add(release, m.ref.qualname, m.variant, list(m.architectures), Cell(m.status, m.outcome or None, tuple(row.codes)))
        # Each release's index and results are garbage once its cells are kept.
        del result, found
        gc.collect()
    history.finish()
    # The index's list where this run asked for it (a range; a release fetched now): none is
    # asked for here.
    listed = pip_index.cached_listing(engine)
    history.published = list(listed.versions) if listed is not None and listed.versions else None
    _order(history)
    return history


def _described(engine: Any, option: str) -> str:
    """A launch option as a user gives it (``--pp-size > 1``)."""
    spec = engine.pack.options.get(option)
    return str(spec.described_on()) if spec is not None else option


def _order(history: History) -> None:
    """Most urgent first, as in the last release each row is in (the order ``models`` lists
    one release in): then by name."""
    from eagle3lint.report.matrix import BROKEN_FIRST as _URGENT

    def key(model: ModelHistory) -> tuple[int, str, str]:
        last = next((model.cells[r] for r in reversed(history.releases) if r in model.cells), None)
        rank = _URGENT.index(last.status) if last is not None and last.status in _URGENT else len(_URGENT)
        return rank, model.name.lower(), model.variant or ""

    history.models.sort(key=key)
