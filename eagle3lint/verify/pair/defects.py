"""Known EAGLE-3 defects of engine releases that depend on the pair or the launch, as rule-pack
data (``[[defect]]`` in ``rules/<engine>.toml``): the releases it is known in, the public
reference, the trigger (``when``), the outcome, and a source pattern that confirms it in the
release read (``file``, ``present``, and ``fixed`` for the fix's shape), so that the list never
stands in for the code: a release whose source lacks the pattern does not have the defect,
whatever its version says. Where the file is missing, the version range is all there is, and
the item says so (unknown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.configs import (
    ACCEPTANCE,
    CRASH,
    NOTE,
    OK,
    PROBLEM,
    REFUSED,
    UNKNOWN,
    PreflightResult,
)
from eagle3lint.verify.pair.context import PairContext
from eagle3lint.verify.pair.source import ReleaseCode

CHECK = "defect"
_IMPACTS = {"silent": ACCEPTANCE, "crash": CRASH, "refused": REFUSED}
# What a ``when`` table may test.
WHEN_KEYS = ("target_file", "drafter_ids", "cuda_graph", "option", "drafter_key")


@dataclass(frozen=True)
class Defect:
    id: str
    summary: str
    reference: str
    releases: str  # ">=0.5.5, <0.5.16": where it is known (the source pattern decides)
    file: str
    present: re.Pattern[str]
    fixed: re.Pattern[str] | None
    when: tuple[tuple[str, Any], ...]
    outcome: str  # silent | crash | refused | layer-ids (the layer-id derivation computes it)


def parse_defects(path: Path, entries: Any) -> tuple[Defect, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{path}: [[defect]] must be a list of tables")
    out = []
    for entry in entries:
        ident = entry.get("id")
        if not isinstance(ident, str) or not ident:
            raise UsageError(f"{path}: a [[defect]] lacks an 'id'")
        for key in ("summary", "reference", "releases", "file", "present"):
            if not isinstance(entry.get(key), str) or not entry.get(key):
                raise UsageError(f"{path}: defect {ident}: '{key}' must be a non-empty string")
        outcome = entry.get("outcome")
        if outcome not in (*_IMPACTS, "layer-ids"):
            raise UsageError(f"{path}: defect {ident}: outcome must be silent, crash, refused or layer-ids")
        when = entry.get("when", {})
        if not isinstance(when, dict) or any(k not in WHEN_KEYS for k in when):
            raise UsageError(f"{path}: defect {ident}: 'when' may test {', '.join(WHEN_KEYS)}")
        try:
            present = re.compile(entry["present"])
            fixed = re.compile(entry["fixed"]) if entry.get("fixed") else None
        except re.error as exc:
            raise UsageError(f"{path}: defect {ident}: a pattern is not a valid regular expression: {exc}") from exc
        out.append(Defect(ident, entry["summary"], entry["reference"], entry["releases"], entry["file"], present, fixed, tuple(sorted(when.items())), outcome))
    return tuple(out)


def _key(text: str) -> tuple[int, ...] | None:
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:\.?post(\d+))?", text)
    return tuple(int(g) if g else 0 for g in match.groups()) if match else None


def in_range(version: str, spec: str) -> bool | None:
    """Whether ``version`` is inside ``>=a, <b`` (None when a version cannot be compared)."""
    have = _key(version)
    if have is None:
        return None
    verdict = True
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        match = re.match(r"^(>=|<=|<|>|==)\s*(\S+)$", part)
        bound = _key(match.group(2)) if match else None
        if match is None or bound is None:
            return None
        op = match.group(1)
        verdict = verdict and {">=": have >= bound, "<": have < bound, "<=": have <= bound, ">": have > bound, "==": have == bound}[op]
    return verdict


@dataclass(frozen=True)
class Confirmation:
    state: str  # "present" | "fixed" | "absent" | "unread"
    path: str = ""
    line: int = 0


def confirm(code: ReleaseCode, defect: Defect) -> Confirmation:
    """Whether the release's source has the defect's pattern (or its fix's)."""
    files = code.files(defect.file)
    if not files:
        return Confirmation("unread")
    for path in files:
        text = code.text(path)
        if text is None:
            return Confirmation("unread", str(path))
        if defect.fixed is not None:
            match = defect.fixed.search(text)
            if match is not None:
                return Confirmation("fixed", str(path), text.count("\n", 0, match.start()) + 1)
        match = defect.present.search(text)
        if match is not None:
            return Confirmation("present", str(path), text.count("\n", 0, match.start()) + 1)
    return Confirmation("absent", str(files[0]))


def triggered(ctx: PairContext, defect: Defect) -> tuple[bool | None, list[str]]:
    """Whether the pair and the launch meet the defect's ``when`` (None: not decidable), and the
    conditions in words."""
    said: list[str] = []
    verdict: bool | None = True
    for key, wanted in defect.when:
        if key == "target_file":
            path = ctx.target_class.path if ctx.target_class else ""
            ok: bool | None = path.replace("\\", "/").endswith(str(wanted))
            said.append(f"the target class is in {wanted}")
        elif key == "drafter_ids":
            explicit = ctx.extra.get("ids_passed")
            custom = ctx.extra.get("ids_custom")
            ok = explicit if wanted == "explicit" else custom
            said.append("the drafter names layer ids the release reads" + (" other than its default" if wanted == "custom" else ""))
        elif key == "cuda_graph":
            off = any(ctx.launch.flag_value(flag) is not None for flag in ctx.facts.no_cuda_graph_flags)
            ok = (not off) if wanted == "on" else off
            said.append("CUDA graphs are on" if wanted == "on" else "CUDA graphs are off")
        elif key == "option":
            ok = all(ctx.launch.options.get(name, "") == value for name, value in dict(wanted).items())
            said.append(" and ".join(f"{name}={value}" for name, value in dict(wanted).items()))
        else:  # drafter_key
            drafter = ctx.drafter
            ok = drafter is not None and all(drafter.get(name) == value for name, value in dict(wanted).items())
            said.append(" and ".join(f"the drafter's `{name}` is {value!r}" for name, value in dict(wanted).items()))
        if ok is None:
            verdict = None if verdict is not False else False
        elif not ok:
            verdict = False
    return verdict, said


def check_defects(ctx: PairContext, result: PreflightResult, defects: tuple[Defect, ...]) -> None:
    version = ctx.engine.version
    for defect in defects:
        found = confirm(ctx.code, defect)
        acts, conditions = triggered(ctx, defect)
        when = "; it acts when " + ", ".join(conditions) if conditions else ""
        ref = {"kind": "reference", "where": defect.reference, "line": None}
        if found.state in ("absent", "fixed"):
            if acts:
                source = {"kind": "release", "where": ctx.rel(found.path), "line": found.line or None, "what": "has the fix" if found.state == "fixed" else "lacks the defect's pattern"}
                result.add(CHECK, OK, f"{defect.summary} ({defect.reference}): {ctx.where} does not have it ({ctx.rel(found.path)}{':' + str(found.line) if found.line else ''})", evidence=[source, ref])
            continue
        if found.state == "unread":
            known = in_range(version, defect.releases)
            if known and acts is not False:
                result.add(CHECK, UNKNOWN, f"{defect.summary} ({defect.reference}) is known in {defect.releases}, which includes {version}, but {defect.file} could not be read to confirm it{when}", decides=f"the source of {defect.file} in this release", evidence=[ref])
            continue
        source = {"kind": "release", "where": ctx.rel(found.path), "line": found.line, "what": "the defect's pattern"}
        if defect.outcome == "layer-ids":
            if acts is False:
                continue  # its effect is the layer map's, and this pair does not meet it
            result.add(CHECK, NOTE, f"{defect.summary} ({defect.reference}) is in {ctx.where} ({ctx.rel(found.path)}:{found.line}){when}: its effect on this pair is in the layer-ids item", evidence=[source, ref])
        elif acts:
            result.add(CHECK, PROBLEM, f"{defect.summary} ({defect.reference}): {ctx.where} has it ({ctx.rel(found.path)}:{found.line}), and this launch meets it: {', '.join(conditions)}", _IMPACTS[defect.outcome], evidence=[source, ref])
        elif acts is None:
            result.add(CHECK, UNKNOWN, f"{defect.summary} ({defect.reference}): {ctx.where} has it ({ctx.rel(found.path)}:{found.line}){when}", decides=", ".join(conditions), evidence=[source, ref])
        else:
            result.add(CHECK, NOTE, f"{defect.summary} ({defect.reference}): {ctx.where} has it ({ctx.rel(found.path)}:{found.line}){when}; this launch does not", evidence=[source, ref])
