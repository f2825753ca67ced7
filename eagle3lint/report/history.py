"""``eagle3lint models --release RANGE``: one row per model class, one column per release.

Formats: a table that fits the terminal (releases in which no row shown changed collapse into one
column; columns that still do not fit go on in a further block), Markdown (a page an engine's
docs can publish as it is) and JSON (``"kind": "history"``, in ``docs/json.md``). Each row also
says where the class is first supported, where it was last broken (with the codes), and, in
JSON, every change.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from eagle3lint import __version__
from eagle3lint.common.escape import display_path, line_text
from eagle3lint.report.matrix import (
    SCHEMA_VERSION,
    STATUS_WORDS,
    cut,
    markdown_cell,
    markdown_text,
    table_width,
    wrap_line,
)

if TYPE_CHECKING:
    from eagle3lint.model.history_result import Cell, History, ModelHistory

_SHORT = {"supported": "ok", "incomplete": "refused", "not-implemented": "no", "unknown": "?", "not-a-target": "-"}
LEGEND = (
    "ok supported; crash, silent: broken (a crash at start-up, or the drafter gets the wrong hidden "
    "states); refused: incomplete (the engine refuses it clearly); no: no EAGLE-3 code (no/crash: and "
    "the engine crashes on it); ?: not provable statically; -: not a target; blank: not in that release"
)


def short(cell: Cell | None) -> str:
    """A cell of the table: the status, in the outcome's word where that says more."""
    if cell is None:
        return ""
    if cell.status == "broken":
        return cell.outcome if cell.outcome in ("crash", "silent") else "broken"
    if cell.status == "not-implemented" and cell.outcome == "crash":
        return "no/crash"
    return _SHORT.get(cell.status, cell.status)


def words(cell: Cell | None) -> str:
    """A cell of the Markdown page."""
    if cell is None:
        return ""
    text = STATUS_WORDS.get(cell.status, cell.status)
    if (cell.outcome and cell.status in ("broken", "incomplete")) or (cell.status == "not-implemented" and cell.outcome == "crash"):
        text += f" ({cell.outcome})"
    return text


def shown_models(history: History) -> list[ModelHistory]:
    """The rows a table or page shows: not those that are no target in any release."""
    return [m for m in history.models if any(c.status != "not-a-target" for c in m.cells.values())]


def groups(history: History, models: list[ModelHistory]) -> list[list[str]]:
    """Runs of releases in which no row shown changes, oldest first."""
    out: list[list[str]] = []
    for release in history.releases:
        if out:
            previous = out[-1][-1]
            if all(_shown(m, previous) == _shown(m, release) for m in models):
                out[-1].append(release)
                continue
        out.append([release])
    return out


def _shown(model: ModelHistory, release: str) -> tuple[str, str | None] | None:
    cell = model.cells.get(release)
    return cell.shown if cell is not None else None


def _label(model: ModelHistory, clash: set[str]) -> str:
    """The class, with its architectures where another row has the same class name."""
    text = model.label()
    if model.label() in clash and model.architectures:
        text += f" ({', '.join(model.architectures)})"
    return line_text(text)


def _clashes(models: list[ModelHistory]) -> set[str]:
    seen: dict[str, int] = {}
    for m in models:
        seen[m.label()] = seen.get(m.label(), 0) + 1
    return {k for k, v in seen.items() if v > 1}


def first_ok_text(history: History, model: ModelHistory) -> str | None:
    """``0.5.10``, or ``≤ 0.5.20`` where it may have been supported before the releases analysed."""
    found = history.first_ok(model)
    if found is None:
        return None
    release, or_earlier = found
    return f"≤ {release}" if or_earlier else release


def _last_broken(model: ModelHistory, releases: list[str]) -> str:
    found = model.last_broken(releases)
    if found is None:
        return "-"
    release, codes = found
    return f"{release} {','.join(codes)}".strip()


def write_table(history: History, out: TextIO, verbose: bool = False) -> None:
    models = shown_models(history)
    columns = groups(history, models)
    width = table_width()
    clash = _clashes(models)
    names = [_label(m, clash) for m in models]
    heads = [(g[0], f"..{g[-1]}" if len(g) > 1 else "") for g in columns]
    cells = [[short(m.cells.get(g[0])) for g in columns] for m in models]
    col_widths = [max(len(a), len(b), *(len(row[i]) for row in cells), 2) for i, (a, b) in enumerate(heads)]
    tails = [(first_ok_text(history, m) or "-", _last_broken(m, history.releases)) for m in models]
    first_w = max([len("first ok"), *(len(t[0]) for t in tails)])
    last_w = max([len("last broken"), *(len(t[1]) for t in tails)])
    # The platform packages a class is registered in (vLLM 0.34.0's amd, nvidia): a column of
    # their own beside the class, where any row has them.
    platforms = [line_text(m.platforms(history.releases)) for m in models]
    platform_w = max(len("variants"), *(len(p) for p in platforms)) if any(platforms) else 0
    lead = 2 + platform_w if platform_w else 0
    # The class column takes what the release columns leave (whole names with -v).
    longest = max([len(n) for n in names] + [5])
    room = width - lead - sum(2 + w for w in col_widths) - (2 + first_w + 2 + last_w)
    name_width = longest if verbose else min(longest, max(room, 34))
    # Blocks of release columns that fit beside the class column (the last one with the tails).
    blocks: list[list[int]] = [[]]
    used = name_width + lead
    for i, w in enumerate(col_widths):
        if blocks[-1] and used + 2 + w > width:
            blocks.append([])
            used = name_width + lead
        blocks[-1].append(i)
        used += 2 + w
    # The last block carries the tails too: where they do not fit, its last column moves on.
    if used + 2 + first_w + 2 + last_w > width and len(blocks[-1]) > 1:
        blocks.append([blocks[-1].pop()])

    def left(name: str, platform: str) -> str:
        text = f"{cut(name, name_width):<{name_width}}"
        return text + (f"  {platform:<{platform_w}}" if platform_w else "")

    for b, block in enumerate(blocks):
        last = b == len(blocks) - 1
        if b:
            out.write("\n")
        line1 = left("class", "variants") + "".join(f"  {heads[i][0]:<{col_widths[i]}}" for i in block)
        line2 = left("", "") + "".join(f"  {heads[i][1]:<{col_widths[i]}}" for i in block)
        if last:
            line1 += f"  {'first ok':<{first_w}}  last broken"
        out.write(line1.rstrip() + "\n")
        if line2.strip():
            out.write(line2.rstrip() + "\n")
        for name, platform, row, tail in zip(names, platforms, cells, tails, strict=True):
            text = left(name, platform) + "".join(f"  {row[i]:<{col_widths[i]}}" for i in block)
            if last:
                text += f"  {tail[0]:<{first_w}}  {tail[1]}"
            out.write(text.rstrip() + "\n")
    for line in footer(history, models):
        out.write(wrap_line(line, width) + "\n")


def footer(history: History, models: list[ModelHistory]) -> list[str]:
    """What the matrix assumes and leaves out, and how the history ended."""
    lines = [LEGEND]
    options = history.options or {}
    chosen = options.get("chosen") or []
    lines.append(f"launch options assumed: {line_text(', '.join(chosen)) if chosen else 'the engine defaults'}")
    refusing: dict[str, list[str]] = {}
    for release in history.releases:
        for option in history.refusals.get(release, []):
            refusing.setdefault(option, []).append(release)
    for option, releases in sorted(refusing.items()):
        lines.append(f"with {line_text(option)}, EAGLE-3 is refused for every model in {_span(releases, history.releases)}")
    changed = sum(1 for m in models if m.changes(history.releases))
    hidden = len(history.models) - len(models)
    left = f"; {hidden} that are not targets in any release left out (--format json lists them)" if hidden else ""
    analysed = f"{history.engine} {history.releases[0]} to {history.releases[-1]}" if history.releases else "no release"
    lines.append(
        f"{analysed}: {len(history.releases)} release{'s' if len(history.releases) != 1 else ''}, "
        f"{len(models)} model classes, {changed} changed{left}"
    )
    for skipped in history.skipped:
        lines.append(f"{history.engine} {skipped.release} left out: {line_text(skipped.problem)}")
    if history.failure:
        lines.append(f"error: stopped: {line_text(history.failure)}")
        if history.not_reached:
            lines.append(f"not analysed: {', '.join(history.not_reached)}")
    return lines


def _span(some: list[str], every: list[str]) -> str:
    """``0.5.9 to 0.5.23`` for a run of consecutive releases, else the list."""
    if len(some) > 1 and every[every.index(some[0]) : every.index(some[-1]) + 1] == some:
        return f"{some[0]} to {some[-1]}"
    return ", ".join(some)


def write_markdown(history: History, out: TextIO) -> None:
    models = shown_models(history)
    columns = groups(history, models)
    engine = history.engine
    span = f"{history.releases[0]} to {history.releases[-1]}" if history.releases else "no release"
    out.write(f"# EAGLE-3 support across {markdown_cell(engine)} {markdown_cell(span)}\n\n")
    out.write(
        f"Generated by eagle3lint {__version__} from each release's source, without running it. "
        "A cell is the model's *status* (what the class has) and, where it says more, its *outcome* "
        "(what the engine does when launched with EAGLE-3 on it: a crash, a silent failure with "
        "acceptance near 1, or the engine's own refusal). Releases in which nothing in the table "
        "changed share a column; a blank cell means the class is not in that release. Draft heads "
        "and models that are not generative targets are left out.\n\n"
    )
    heads = [g[0] if len(g) == 1 else f"{g[0]} to {g[-1]}" for g in columns]
    platforms = [m.platforms(history.releases) for m in models]
    variants_head = " Variants |" if any(platforms) else ""
    out.write(f"| Class | Architectures |{variants_head} " + " | ".join(markdown_cell(h) for h in heads) + " | First supported | Last broken |\n")
    out.write("| --- | --- | " + ("--- | " if variants_head else "") + " | ".join("---" for _ in heads) + " | --- | --- |\n")
    for m, platform in zip(models, platforms, strict=True):
        variant = f" ({m.variant})" if m.variant else ""
        broken = m.last_broken(history.releases)
        cells = [
            f"`{markdown_cell(m.name)}`{markdown_cell(variant)}",
            markdown_text(", ".join(m.architectures)),  # names from analysed files: literal text
            *([markdown_cell(platform)] if variants_head else []),
            *(markdown_cell(words(m.cells.get(g[0]))) for g in columns),
            markdown_cell(first_ok_text(history, m) or ""),
            markdown_cell(f"{broken[0]} ({', '.join(broken[1])})" if broken and broken[1] else broken[0] if broken else ""),
        ]
        out.write("| " + " | ".join(cells) + " |\n")
    # The legend is the table's own words here; the rest as the table's footer says it (a line
    # that starts with the engine's name keeps its case).
    notes = [n if n.startswith(engine) else n[0].upper() + n[1:] for n in footer(history, models)[1:]]
    out.write("\n" + "\n\n".join(markdown_cell(n) + "." for n in notes) + "\n")


def _cell_json(cell: Cell | None) -> dict[str, Any] | None:
    return cell.to_json() if cell is not None else None


def model_json(model: ModelHistory, history: History) -> dict[str, Any]:
    releases = history.releases
    broken = model.last_broken(releases)
    first = history.first_ok(model)
    return {
        "class": model.name,
        "variant": model.variant,
        "variants": {r: model.variants[r] for r in releases if r in model.variants},
        "architectures": model.architectures,
        "history": {r: _cell_json(model.cells.get(r)) for r in releases},
        "first_supported": model.first_supported(releases),
        "first_supported_or_earlier": first[1] if first is not None else False,
        "supported_since": model.supported_since(releases),
        "last_broken": {"release": broken[0], "codes": list(broken[1])} if broken else None,
        "changes": [{"release": r, "from": _cell_json(a), "to": _cell_json(b)} for r, a, b in model.changes(releases)],
    }


def write_json(history: History, out: TextIO) -> None:
    data = {
        "version": SCHEMA_VERSION,
        "kind": "history",
        "engine": history.engine,
        "asked": history.queries,
        "options": history.options,
        "releases": history.releases,
        "skipped": [{"release": s.release, "problem": s.problem} for s in history.skipped],
        "failure": history.failure,
        "not_reached": history.not_reached if history.failure else [],
        "launch_refusals": {r: options for r, options in history.refusals.items() if options},
        "models": [model_json(m, history) for m in history.models],
        "errors": [{"release": r, "path": display_path(e.path), "message": e.message} for r, e in history.errors],
    }
    out.write(json.dumps(data, indent=2))
    out.write("\n")
