"""The verify report: its data, the verdict, and its human and JSON renderings."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from eagle3lint.common.escape import line_text
from eagle3lint.run.preflight import ACCEPTANCE, CRASH, PROBLEM, REFUSED, PreflightResult
from eagle3lint.verify.classify import CrashCause
from eagle3lint.verify.configs import PreflightItem
from eagle3lint.verify.measure import MeasureResult
from eagle3lint.verify.teardown import TeardownResult

GOOD_ACCEPTANCE = 2.3
BROKEN_ACCEPTANCE = 1.5

# Verdicts; only "good" (and a clean --preflight-only) exit 0.
GOOD, MARGINAL, NO_BENEFIT, BROKEN = "good", "marginal", "no-benefit", "broken"
CRASHED, TIMED_OUT, PREFLIGHT_FAILED, PREFLIGHT_OK = "crash", "timeout", "preflight-failed", "preflight-ok"
INTERRUPTED, NOT_MEASURED = "interrupted", "not-measured"
EXIT_OK, EXIT_NOT_GOOD, EXIT_ERROR = 0, 1, 2
# The JSON documents' version: 2 added the pre-flight's outcome and its items' outcome,
# evidence, decides and layers (verify), and the `preflight` command's document.
JSON_VERSION = 2


@dataclass
class LaunchRecord:
    label: str  # eagle3 | baseline
    command: list[str]
    log_path: str
    port: int
    gpus: list[int] | None
    outcome: str  # ready | crash | timeout | interrupted | warmup-failed
    seconds_to_ready: float | None = None
    elapsed_s: float = 0.0
    exit_code: int | None = None
    crash: CrashCause | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "command": self.command,
            "log": self.log_path,
            "port": self.port,
            "gpus": self.gpus,
            "outcome": self.outcome,
            "seconds_to_ready": round(self.seconds_to_ready, 2) if self.seconds_to_ready is not None else None,
            "elapsed_s": round(self.elapsed_s, 2),
            "exit_code": self.exit_code,
            "crash": self.crash.to_json() if self.crash else None,
            "detail": self.detail,
        }


@dataclass
class Verdict:
    status: str
    message: str

    @property
    def exit_code(self) -> int:
        if self.status in (GOOD, PREFLIGHT_OK):
            return EXIT_OK
        if self.status == INTERRUPTED:
            return EXIT_ERROR
        return EXIT_NOT_GOOD


@dataclass
class VerifyReport:
    engine: dict[str, object] | None
    preflight: PreflightResult
    launches: list[LaunchRecord] = field(default_factory=list)
    metrics: dict[str, MeasureResult] = field(default_factory=dict)
    teardowns: list[TeardownResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    verdict: Verdict = field(default_factory=lambda: Verdict(NOT_MEASURED, "nothing measured"))

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def launch(self, label: str) -> LaunchRecord | None:
        return next((r for r in self.launches if r.label == label), None)

    def speedup(self, concurrency: int) -> float | None:
        spec, base = self.metrics.get("eagle3"), self.metrics.get("baseline")
        if spec is None or base is None:
            return None
        a, b = spec.at(concurrency), base.at(concurrency)
        if a is None or b is None or a.tokens_per_s is None or b.tokens_per_s is None:
            return None
        return a.tokens_per_s / b.tokens_per_s

    def to_json(self) -> dict[str, Any]:
        levels = sorted({r.concurrency for m in self.metrics.values() for r in m.results})
        pre = self.preflight
        return {
            "version": JSON_VERSION,
            "engine": self.engine,
            "target": pre.target.to_json() if pre.target else None,
            "drafter": pre.drafter.to_json() if pre.drafter else None,
            "aux_layer_ids": pre.aux_layer_ids,
            "outcome": pre.outcome,
            "preflight": [item.to_json() for item in pre.items],
            "launches": [r.to_json() for r in self.launches],
            "metrics": {label: m.to_json() for label, m in self.metrics.items()},
            "speedup": {str(c): _round(self.speedup(c)) for c in levels},
            "teardown": [t.to_json() for t in self.teardowns],
            "notes": self.notes,
            "verdict": {"status": self.verdict.status, "message": self.verdict.message},
            "exit_code": self.exit_code,
        }


def _round(value: float | None, digits: int = 3) -> float | None:
    return round(value, digits) if value is not None else None


def decide(report: VerifyReport, preflight_only: bool) -> Verdict:
    """The verdict from what ran: pre-flight, launch outcomes, then acceptance and speedup."""
    pre = report.preflight
    if preflight_only:
        outcome = pre.outcome
        if outcome == "works":
            return Verdict(PREFLIGHT_OK, "pre-flight found no problem: the outcome is works (nothing was launched)")
        if outcome == "unknown":
            return Verdict(PREFLIGHT_FAILED, f"the pre-flight cannot decide the outcome: {pre.outcome_reason}")
        crash = "will not serve EAGLE-3 (a crash or the engine's refusal)" if pre.predicts_crash else "will lower acceptance"
        return Verdict(PREFLIGHT_FAILED, f"outcome {outcome}: {len(pre.problems)} pre-flight problem(s); the run {crash}")
    if report.interrupted:
        return Verdict(INTERRUPTED, "interrupted; every server this run started was torn down")
    spec_launch = report.launch("eagle3")
    if spec_launch is None:
        if pre.predicts_crash:
            return Verdict(PREFLIGHT_FAILED, "the pre-flight predicts a crash; nothing was launched (--ignore-preflight launches anyway)")
        return Verdict(NOT_MEASURED, "nothing was launched")
    if spec_launch.outcome == TIMED_OUT:
        return Verdict(TIMED_OUT, f"the EAGLE-3 server was not ready within {spec_launch.elapsed_s:.0f} s (raise --timeout for big models)")
    if spec_launch.crash is not None:
        rules = ", ".join(str(r) for r in spec_launch.crash.rules)
        return Verdict(CRASHED, f"the EAGLE-3 server crashed: {spec_launch.crash.cause}" + (f" [{rules}]" if rules else ""))
    if spec_launch.outcome != "ready":
        return Verdict(NOT_MEASURED, f"the EAGLE-3 server {spec_launch.outcome}: {spec_launch.detail}")
    spec = report.metrics.get("eagle3")
    if spec is None or not spec.results or spec.error:
        return Verdict(NOT_MEASURED, f"measuring failed: {spec.error if spec else 'no metrics'}")
    first = min(spec.results, key=lambda r: r.concurrency)  # speculation pays off first at low load
    acceptance = first.acceptance_length
    speedup = report.speedup(first.concurrency)
    base_launch = report.launch("baseline")
    if speedup is not None:
        speed = f"{speedup:.2f}x the baseline's tokens/s at concurrency {first.concurrency}"
    elif base_launch is not None:
        speed = f"no speedup figure: the baseline run ended in {base_launch.outcome} (see its log)"
    else:
        speed = "no baseline"
    if acceptance is None:
        return Verdict(NOT_MEASURED, f"the server reported no acceptance figures ({speed})")
    if acceptance < BROKEN_ACCEPTANCE:
        return Verdict(
            BROKEN,
            f"acceptance length {acceptance:.2f} < {BROKEN_ACCEPTANCE}: the drafter's guesses are almost all rejected — "
            "aux hidden states are not captured as trained (run `eagle3lint check` for the capture rules) or the "
            "drafter does not fit the target (see the pre-flight)",
        )
    if speedup is not None and speedup <= 1.0:
        return Verdict(NO_BENEFIT, f"acceptance length {acceptance:.2f} but {speed}: speculation does not pay off here")
    if acceptance >= GOOD_ACCEPTANCE:
        return Verdict(GOOD, f"acceptance length {acceptance:.2f} >= {GOOD_ACCEPTANCE}; {speed}")
    return Verdict(MARGINAL, f"acceptance length {acceptance:.2f} is below {GOOD_ACCEPTANCE}; {speed}")


# ---- rendering ---------------------------------------------------------------------------------

_STATUS_WORD = {"ok": "ok", "problem": "PROBLEM", "note": "note", "skipped": "skipped", "unknown": "UNKNOWN"}
_IMPACT_WORD = {CRASH: "will crash", ACCEPTANCE: "lowers acceptance silently", REFUSED: "the engine refuses it"}


def write_json(report: VerifyReport, out: TextIO) -> None:
    out.write(json.dumps(report.to_json(), indent=2))
    out.write("\n")


def write_human(report: VerifyReport, out: TextIO) -> None:
    """The report for a terminal. Its text comes in part from untrusted sources (a checkpoint's
    architecture and tensor names, config values, the server's log): each line is written
    through ``line_text``, so no control character reaches the terminal as is."""

    def emit(text: str = "") -> None:
        out.write(line_text(text) + "\n")

    pre = report.preflight
    engine = report.engine
    head = f"{engine['name']} {engine['version']} ({engine['root']})" if engine else "engine tree not found"
    emit(f"eagle3lint verify: {head}")
    for line in _checkpoint_lines(pre.target, pre.drafter):
        emit(line)
    emit()
    emit(f"Pre-flight (outcome: {pre.outcome})")
    for item in pre.items:
        _write_item(item, emit, evidence=False)
    for record in report.launches:
        _write_launch(record, emit)
    if report.metrics:
        _write_metrics(report, emit)
    if report.teardowns:
        emit()
        emit("Teardown")
        for td in report.teardowns:
            emit(f"  {td.label}: {_teardown_line(td)}")
    for note in report.notes:
        emit()
        emit(f"note: {note}")
    emit()
    emit(f"Verdict: {report.verdict.status} — {report.verdict.message}")


def _write_launch(record: LaunchRecord, emit: Callable[[str], None]) -> None:
    name = "EAGLE-3" if record.label == "eagle3" else "baseline (no speculation)"
    gpus = f", GPUs {','.join(map(str, record.gpus))}" if record.gpus else ""
    emit("")
    emit(f"Launch: {name}{gpus}")
    emit(f"  log: {record.log_path}")
    if record.outcome == "ready":
        emit(f"  ready after {record.seconds_to_ready or 0:.1f} s")
    else:
        code = f", exit code {record.exit_code}" if record.exit_code is not None else ""
        emit(f"  {record.outcome} after {record.elapsed_s:.1f} s{code}")
    if record.detail:
        emit(f"  {record.detail}")
    crash = record.crash
    if crash is not None:
        emit(f"  cause ({crash.kind}): {crash.cause}")
        if crash.rules:
            emit(f"  rule: {', '.join(str(r) for r in crash.rules)}")
        if crash.excerpt:
            emit("  log excerpt:")
            for line in crash.excerpt:
                emit(f"    | {line}")
        if crash.next_step:
            emit(f"  next: {crash.next_step}")


def _fmt(value: float | None, spec: str) -> str:
    return format(value, spec) if value is not None else "-"


def _write_metrics(report: VerifyReport, emit: Callable[[str], None]) -> None:
    levels = sorted({r.concurrency for m in report.metrics.values() for r in m.results})
    emit("")
    emit("Measurements (output tokens/s; acceptance length = tokens per verify step)")
    header = "  " + f"{'':<10}" + "".join(f"{f'tok/s c={c}':>14}{f'accept c={c}':>14}" for c in levels)
    emit(header)
    for label in ("baseline", "eagle3"):
        measured = report.metrics.get(label)
        if measured is None:
            continue
        row = f"  {('EAGLE-3' if label == 'eagle3' else 'baseline'):<10}"
        for c in levels:
            res = measured.at(c)
            row += f"{_fmt(res.tokens_per_s if res else None, '.1f'):>14}{_fmt(res.acceptance_length if res else None, '.2f'):>14}"
        emit(row)
        if measured.error:
            emit(f"    error: {measured.error}")
    if "baseline" in report.metrics:
        row = f"  {'speedup':<10}" + "".join(f"{_fmt(report.speedup(c), '.2f') + 'x':>14}{'':>14}" for c in levels)
        emit(row)
    formats = {m.prompt_format for m in report.metrics.values()}
    if "plain" in formats:
        emit("  (prompts sent as plain text: no chat template could be applied, so acceptance may read low)")


def _teardown_line(td: TeardownResult) -> str:
    parts = ["had already exited" if td.ended_by == "already exited" else f"ended by {td.ended_by}"]
    if td.swept_pids:
        parts.append(f"swept {len(td.swept_pids)} process(es) outside the group ({', '.join(map(str, td.swept_pids))})")
    if td.left_running:
        parts.append(f"STILL RUNNING: {', '.join(map(str, td.left_running))}")
    parts.append("port closed" if td.port_closed else "PORT STILL OPEN")
    if td.gpu_released is True:
        parts.append("GPU memory released" + _gpu_figures(td))
    elif td.gpu_released is False:
        parts.append("GPU MEMORY STILL HELD" + _gpu_figures(td))
    else:
        parts.append("GPU memory not observable (no nvidia-smi/NVML)")
    return ", ".join(parts)


def _gpu_figures(td: TeardownResult) -> str:
    if not td.gpu_used_before or td.gpu_used_after is None:
        return ""
    during = td.gpu_used_during or {}
    figures = [
        f"GPU {i}: {before} -> {during.get(i, '?')} -> {td.gpu_used_after.get(i, '?')} MiB"
        for i, before in td.gpu_used_before.items()
    ]
    return " (" + "; ".join(figures) + ")"


def _write_item(item: PreflightItem, emit: Callable[[str], None], evidence: bool) -> None:
    word = _STATUS_WORD.get(item.status, item.status)
    impact = f" [{_IMPACT_WORD[item.impact]}]" if item.status == PROBLEM and item.impact else ""
    rule = f" {item.rule}" if item.rule else ""
    where = f" ({item.path}:{item.line})" if item.path and item.line else ""
    emit(f"  {word:<8} {item.check}{rule}{impact}: {item.message}{where}")
    if item.decides:
        emit(f"           decided by: {item.decides}")
    if evidence:
        for source in item.evidence:
            line = f":{source['line']}" if source.get("line") else ""
            what = f" ({source['what']})" if source.get("what") else ""
            emit(f"           {source.get('kind', '')}: {source.get('where', '')}{line}{what}")


# ---- `eagle3lint preflight` ----------------------------------------------------------------------


@dataclass
class PreflightReport:
    """The pair pre-flight alone: one outcome and every item behind it."""

    engine: dict[str, object] | None
    release: str | None
    result: PreflightResult

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.result.outcome == "works" else EXIT_NOT_GOOD

    def to_json(self) -> dict[str, Any]:
        pre = self.result
        layers = next((i.layers for i in pre.items if i.layers is not None), None)
        return {
            "version": JSON_VERSION,
            "outcome": pre.outcome,
            "reason": pre.outcome_reason,
            "items": [item.to_json() for item in pre.items],
            "engine": self.engine,
            "release": self.release,
            "launch": pre.launch,
            "target": pre.target.to_json() if pre.target else None,
            "drafter": pre.drafter.to_json() if pre.drafter else None,
            "aux_layer_ids": pre.aux_layer_ids,
            "layers": layers,
            "exit_code": self.exit_code,
        }


def write_preflight_json(report: PreflightReport, out: TextIO) -> None:
    out.write(json.dumps(report.to_json(), indent=2))
    out.write("\n")


def write_preflight_human(report: PreflightReport, out: TextIO, explain: bool = False) -> None:
    """Text from the checkpoints and the release's source reaches the terminal escaped;
    ``explain``: per drafter id, what the engine captures (the release's lines that say so) and
    what the drafter was trained on (the evidence that decided it)."""

    def emit(text: str = "") -> None:
        out.write(line_text(text) + "\n")

    pre = report.result
    engine = report.engine
    head = f"{engine['name']} {engine['version']} ({engine['root']})" if engine else "no engine tree read"
    emit(f"eagle3lint preflight: {head}")
    for line in _checkpoint_lines(pre.target, pre.drafter):
        emit(line)
    launch = pre.launch
    if launch:
        given = [f"--tp {launch.get('tp')}", f"--pp {launch.get('pp')}", *(launch.get("engine_args") or [])]
        options = (launch.get("options") or {}).get("values") or {}
        chosen = ", ".join(f"{k}={v}" for k, v in sorted(options.items()) if v)
        emit(f"  launch: {' '.join(str(g) for g in given)}" + (f" ({chosen})" if chosen else ""))
    emit()
    emit(f"Outcome: {pre.outcome} — {pre.outcome_reason}")
    emit()
    for item in pre.items:
        _write_item(item, emit, evidence=item.status in (PROBLEM, "unknown") or item.check == "layer-ids")
    layers = next((i.layers for i in pre.items if i.layers), None)
    if layers:
        emit()
        emit("Drafter inputs (in the order its fusion layer takes them)")
        for row in layers:
            ident = f"id {row['drafter_id']}" if row.get("drafter_id") is not None else f"input {row['position']}"
            trained = row.get("trained_on") or "not recorded"
            emit(f"  {ident:<10} trained on {trained:<24} reads {row.get('reads') or 'nothing'}")
        if explain:
            emit()
            emit("Why (per drafter input)")
            for row in layers:
                ident = f"drafter id {row['drafter_id']}" if row.get("drafter_id") is not None else f"drafter input {row['position']}"
                where = ", ".join(row.get("captured_by") or []) or "the release's capture, not located"
                captured = row.get("reads") or "nothing (no state left for it)"
                emit(f"  {ident} → the engine captures {captured} ({where});")
                if row.get("trained_on"):
                    emit(f"      the drafter was trained on {row['trained_on']} ({row.get('trained_because') or 'its config'})")
                else:
                    emit("      the drafter's config does not record what it was trained on")


def _checkpoint_lines(target: Any, drafter: Any) -> list[str]:
    """The two checkpoints a report opens with: each folder and the class its config names."""
    return [
        f"  {label}: {config.path} ({config.architecture or 'no architectures'})"
        for label, config in (("target", target), ("drafter", drafter))
        if config is not None
    ]
