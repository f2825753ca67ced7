"""``eagle3lint models``: the EAGLE-3 support matrix, one row per model class.

Each row: the status (what the class has), the outcome (what the engine does with it under the
run's launch options), the options under which that outcome changes, the reason with the
engine's evidence, the finding codes and the fix. Formats: a table that fits the terminal
(``-v`` for everything), JSON (``"version": 2``, in ``docs/json.md``), and Markdown (a page an
engine's docs can publish as it is). Verdicts ignore baselines and suppressions, so no column is
ever blanked by them.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from eagle3lint import __version__
from eagle3lint.checks.verdicts import STATUSES, outcome_counts, status_counts
from eagle3lint.common.escape import display_path, line_path, line_text
from eagle3lint.report.paths import engine_label

if TYPE_CHECKING:
    from eagle3lint.common.findings import Finding, Related
    from eagle3lint.model.models import ModelClass
    from eagle3lint.model.result import CheckResult

SCHEMA_VERSION = 2
_WEAKEST = ("display-only", "unsafe", "safe")  # a model's fix is as safe as its least safe part
BROKEN_FIRST = ("broken", "unknown", "incomplete", "supported", "not-implemented", "not-a-target")


@dataclass
class Row:
    model: ModelClass
    path: str  # as shown: relative to the working directory or the engine's source root
    codes: list[str]
    fix: str | None  # "safe" | "unsafe" | "display-only" | None (no fix)

    def to_json(self, root: Any = None) -> dict[str, Any]:
        m = self.model
        decided = m.decided
        return {
            "class": m.ref.qualname,
            "architectures": m.architectures,
            "path": self.path,
            "line": m.summary.lineno,
            "kind": m.kind,
            "variant": m.variant,
            "status": m.status,
            "outcome": m.outcome or None,
            "reason": m.status_reason,
            "evidence": _evidence_json(decided.evidence if decided else None, root),
            "conditions": [
                {**c.to_json(), "evidence": _evidence_json(c.evidence, root)} for c in m.conditions
            ],
            "codes": self.codes,
            "fix": {"applicability": self.fix} if self.fix else None,
            **({"origin": m.origin} if m.origin else {}),
        }


def _evidence_json(evidence: Related | None, root: Any) -> dict[str, Any] | None:
    if evidence is None:
        return None
    return {"path": display_path(evidence.path, fallback_root=root), "line": evidence.line, "message": evidence.message}


def model_fix(findings: list[Finding]) -> str | None:
    """The applicability of a model's fix: every finding on it must have one (all or nothing);
    the least safe part decides. None when none has a fix."""
    # A finding whose launch options are off this run neither needs nor blocks a fix.
    fixes = [f.fix for f in findings if f.applies]
    present = [fix for fix in fixes if fix is not None and fix.diff]
    if not present:
        return None
    if len(present) < len(fixes):
        return "display-only"
    return min((fix.applicability for fix in present), key=_WEAKEST.index)


def narrow(result: CheckResult, names: tuple[str, ...]) -> list[str]:
    """Keep the models whose class or architecture ``names`` name (case aside; ``*`` and ``?``
    as in a shell), for every format and count; returns the names that matched nothing."""
    import fnmatch

    if not names:
        return []
    reported = result.reported_models()

    def named(model: ModelClass, pattern: str) -> bool:
        return any(fnmatch.fnmatchcase(n.lower(), pattern.lower()) for n in (model.ref.qualname, *model.architectures))

    unmatched = [p for p in names if not any(named(m, p) for m in reported)]
    dropped = {id(m) for m in reported if not any(named(m, p) for p in names)}
    result.models = [m for m in result.models if id(m) not in dropped]
    return unmatched


def narrow_severity(result: CheckResult, level: str) -> None:
    """Keep the models with a finding at or above ``level`` (``error``: the broken ones), for
    every format and count. Suppressed and baselined findings count too: verdicts ignore them."""
    from eagle3lint.common.findings import SEVERITY_ORDER

    limit = SEVERITY_ORDER[level]
    kept = {
        (f.qualname, f.variant)
        for f in (*result.findings, *result.suppressed_findings, *result.baselined_findings)
        if f.code != "E3L900" and SEVERITY_ORDER.get(f.severity, 0) <= limit
    }
    result.models = [m for m in result.models if (f"{m.ref.module}.{m.ref.qualname}", m.variant) in kept]


def rows(result: CheckResult) -> list[Row]:
    """The checked models (those with a verdict), most urgent status first."""
    by_model: dict[tuple[str, str | None], list[Finding]] = {}
    for finding in result.findings:
        if finding.code != "E3L900":
            by_model.setdefault((finding.qualname, finding.variant), []).append(finding)
    root = result.engine.source_root
    out = []
    for model in result.reported_models():
        own = by_model.get((f"{model.ref.module}.{model.ref.qualname}", model.variant), [])
        codes = model.codes or sorted({f.code for f in own})
        out.append(Row(model, display_path(model.path, fallback_root=root), codes, model_fix(own)))
    order = {status: n for n, status in enumerate(BROKEN_FIRST)}
    out.sort(key=lambda r: (order.get(r.model.status, len(order)), r.model.ref.qualname.lower(), r.model.variant or ""))
    return out


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts.items() if n) or "none"


def summary_line(result: CheckResult, table: list[Row]) -> str:
    models = [r.model for r in table]
    total = len(table)
    label = engine_label(result.engine)
    return (
        f"{label}: {total} model class{'es' if total != 1 else ''}: {_counts(status_counts(models))}; "
        f"outcomes: {_counts(outcome_counts(models))}"
    )


def launch_lines(result: CheckResult) -> list[str]:
    """What the run assumes about the launch, and what the engine refuses under an option for
    every model (said once, not on every row)."""
    options = result.options
    lines = []
    assumed = options.label() if options is not None else ""
    lines.append(f"launch options assumed: {line_text(assumed) if assumed else 'the engine defaults'}")
    root = result.engine.source_root
    for refusal in result.contract.launch_refusals:
        spec = result.engine.pack.options.get(refusal.option)
        described = spec.described_on() if spec else refusal.option
        where = line_path(str(result.engine.absolute(refusal.path)), fallback_root=root)
        lines.append(f"with {described} this release refuses EAGLE-3 for every model ({where}:{refusal.line})")
    return lines


def _name(row: Row) -> str:
    variant = f" [{row.model.variant}]" if row.model.variant else ""
    return line_text(f"{row.model.ref.qualname}{variant}")


def _condition_text(model: ModelClass) -> str:
    return "; ".join(f"{c.outcome} with {c.described}" for c in model.conditions)


def _reason(row: Row, short: bool = False) -> str:
    """What decided the outcome first (in a line of the table, the cause alone: ``E3L001 lacks
    `get_embed_and_head```), then the launch conditions that change it. A supported model has
    no cause to tell: its conditions come first (they are what a deployer acts on)."""
    m = row.model
    decided = m.decided
    if short and decided is not None:
        why = f"{decided.code} {decided.reason}".strip()
    elif short and m.status == "supported":
        why = ""
    else:
        why = m.status_reason
    origin = f"[{m.origin}]" if m.origin else ""
    conditions = _condition_text(m)
    parts = (conditions, why, origin) if m.status == "supported" else (why, conditions, origin)
    return line_text("; ".join(p for p in parts if p)) or "-"


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, an ellipsis where it was cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def table_width() -> int:
    """The terminal's width (100 columns where there is none), never under 60."""
    return max(shutil.get_terminal_size((100, 24)).columns, 60)


def wrap_line(line: str, width: int) -> str:
    """A note under a table, wrapped to ``width`` with its continuation lines indented."""
    return textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False)


def write_table(result: CheckResult, out: TextIO, verbose: bool = False) -> None:
    """One line per model, cut to the terminal's width (100 columns when it has none); ``-v``
    shows each whole, with its file, evidence and conditions on lines of their own."""
    table = rows(result)
    width = table_width()
    # 32 columns on a 100-column terminal; a wider one gives the names half its extra width
    # (long class names with their platform variant were cut alike: two rows read the same).
    name_width = min(max([len(_name(r)) for r in table] + [5]), 32 + max(0, width - 100) // 2)
    out.write(f"{'status':<15} {'outcome':<7} {'class':<{name_width}} {'fix':<7} reason\n")
    root = result.engine.source_root
    for row in table:
        m = row.model
        fix = "display" if row.fix == "display-only" else row.fix or "-"
        head = f"{m.status:<15} {m.outcome or '-':<7} {cut(_name(row), name_width):<{name_width}} {fix:<7} "
        if not verbose:
            out.write(head + cut(_reason(row, short=True), width - len(head)) + "\n")
            continue
        out.write(head + _reason(row) + "\n")
        indent = " " * 4
        codes = f" ({', '.join(row.codes)})" if row.codes else ""
        out.write(f"{indent}at {line_path(m.path, fallback_root=root)}:{m.summary.lineno}{codes}\n")
        if m.decided is not None and m.decided.evidence is not None:
            ev = m.decided.evidence
            out.write(f"{indent}engine: {line_path(ev.path, fallback_root=root)}:{ev.line}: {line_text(ev.message)}\n")
        for cond in m.conditions:
            where = f" ({line_path(cond.evidence.path, fallback_root=root)}:{cond.evidence.line})" if cond.evidence else ""
            out.write(f"{indent}with {cond.described}: {cond.outcome}: {line_text(cond.reason)}{where}\n")
    for line in [*launch_lines(result), *fix_legend(table), summary_line(result, table)]:
        out.write(wrap_line(line, width) + "\n")


def fix_legend(table: list[Row]) -> list[str]:
    """What the fix column's words mean, where a row shows one."""
    if not any(row.fix for row in table):
        return []
    return [
        "fix: safe = `eagle3lint fix --apply` writes it; unsafe = only with `--unsafe-fixes`; "
        "display = a suggestion to apply by hand (`check --format full` shows it); - = none"
    ]


def write_json(result: CheckResult, out: TextIO) -> None:
    table = rows(result)
    models = [r.model for r in table]
    root = result.engine.source_root
    data = {
        "version": SCHEMA_VERSION,
        "engine": result.engine.to_json(),
        "options": result.options.to_json() if result.options is not None else None,
        "launch_refusals": [r.to_json() for r in result.contract.launch_refusals],
        "models": [r.to_json(root) for r in table],
        "summary": {"models": len(table), "by_status": status_counts(models), "by_outcome": outcome_counts(models)},
        "errors": [e.to_json() for e in result.errors],
    }
    out.write(json.dumps(data, indent=2))
    out.write("\n")


# Each status in words, for prose and Markdown (the history table uses them too).
STATUS_WORDS = {
    "supported": "supported",
    "broken": "broken",
    "incomplete": "incomplete",
    "not-implemented": "not implemented",
    "unknown": "not provable statically",
    "not-a-target": "not a target",
}
_FIX_WORDS = {"safe": "automatic", "unsafe": "automatic (unsafe)", "display-only": "suggested"}


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell: no pipes, no HTML, no control characters."""
    escaped = line_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("|", "\\|")


# Markdown's inline syntax (emphasis, links, images, code spans, strikethrough): a backslash
# before each makes it literal text (an autolink's ``<`` is escaped as HTML already).
_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]()!~])")


def markdown_text(text: str) -> str:
    """Text from an analysed file for a Markdown table cell, as literal text: what
    :func:`markdown_cell` does, and no emphasis, link or code span of its own."""
    return markdown_cell(_MARKDOWN_INLINE.sub(r"\\\1", text))


def _short_reason(model: ModelClass) -> str:
    """What decided the outcome, in words, with the rule's name (``lacks `get_embed_and_head`
    (missing-target-method)``); for a supported model, nothing."""
    from eagle3lint.engines import rule_registry

    decided = model.decided
    if model.status == "supported" or decided is None:
        return "" if model.status == "supported" else model.status_reason
    rule = rule_registry().by_code(decided.code) if decided.code else None
    return f"{decided.reason} ({rule.name})" if rule is not None else decided.reason


def write_markdown(result: CheckResult, out: TextIO) -> None:
    table = [r for r in rows(result) if r.model.status != "not-a-target"]
    engine = result.engine
    models = [r.model for r in table]
    out.write(f"# EAGLE-3 support in {markdown_cell(engine.label)}\n\n")
    out.write(
        f"Generated by eagle3lint {__version__} from the engine's source, without running it. "
        "*Status* is what the model has; *outcome* is what the engine does when launched with "
        "EAGLE-3 on it (works, crash, silent: it runs with acceptance near 1, refused: the "
        "engine's own clear error). Whether a drafter is accepted is for `eagle3lint verify` to "
        "measure. Draft heads and models that are not generative targets are left out.\n\n"
    )
    out.write(", ".join(f"{n} {STATUS_WORDS[s]}" for s, n in status_counts(models).items() if n and s != "not-a-target") + ".\n\n")
    for line in launch_lines(result):
        out.write(f"{markdown_cell(line[0].upper() + line[1:])}.\n\n")
    out.write("| Class | Architectures | Status | Outcome | Conditions | Reason | Fix |\n")
    out.write("| --- | --- | --- | --- | --- | --- | --- |\n")
    for row in sorted(table, key=lambda r: (STATUSES.index(r.model.status), r.model.ref.qualname.lower(), r.model.variant or "")):
        m = row.model
        variant = f" ({m.variant})" if m.variant else ""
        cells = [
            f"`{markdown_cell(m.ref.qualname)}`{markdown_cell(variant)}",
            # Every architecture the engine serves with it (SGLang's is the class's own name),
            # as literal text: the names come from analysed files.
            markdown_text(", ".join(m.architectures)),
            STATUS_WORDS[m.status],
            m.outcome or "",
            markdown_cell(_condition_text(m)),
            markdown_cell(_short_reason(m)),
            _FIX_WORDS.get(row.fix or "", ""),
        ]
        out.write("| " + " | ".join(cells) + " |\n")
