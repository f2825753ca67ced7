"""Engine runs as a table (terminal, Markdown) or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from eagle3lint.common.escape import line_text
from eagle3lint.enginerun.outcome import VERDICTS
from eagle3lint.enginerun.sweep import ClassRun, EngineEnv


def summary(runs: Sequence[ClassRun]) -> dict[str, Any]:
    verdicts = [r for r in runs if r.outcome.outcome in VERDICTS]
    compared = [r for r in runs if r.agree is not None]
    agreed = [r for r in compared if r.agree]
    return {
        "runs": len(runs),
        "set_up": len(verdicts),
        "compared": len(compared),
        "agree": len(agreed),
        "agreement": round(len(agreed) / len(compared), 3) if compared else None,
    }


def _agree_word(run: ClassRun) -> str:
    return {True: "yes", False: "NO", None: "-"}[run.agree]


def _predicted(run: ClassRun) -> str:
    return (run.prediction.outcome or run.prediction.status or "-") if run.prediction else "not a target"


def to_json(env: EngineEnv, runs: Sequence[ClassRun]) -> dict[str, Any]:
    return {
        "version": 1,
        "engine": env.spec.engine,
        "engine_version": env.version,
        "runner": env.spec.runner,
        "limits": list(env.spec.limits),
        "summary": summary(runs),
        "runs": [
            {
                "architecture": r.architecture,
                "predicted": None if r.prediction is None else {
                    "class": r.prediction.qualname, "status": r.prediction.status, "outcome": r.prediction.outcome,
                    "reason": r.prediction.reason, "codes": list(r.prediction.codes),
                },
                "outcome": r.outcome.outcome,
                "cause": r.outcome.cause,
                "states_matched": r.outcome.matched,
                "agree": r.agree,
                "seconds": r.seconds,
                "setup_seconds": r.setup_seconds,
                "launch_seconds": r.launch_seconds,
                "ids": (r.eagle or {}).get("ids"),
                "aux_states": [p.get("aux_count") for p in (r.eagle or {}).get("passes", [])][:1] or None,
                "target_class": (r.eagle or {}).get("target_class"),
                "interface_calls": (r.eagle or {}).get("interface_calls"),
                "captures": (r.eagle or {}).get("captures"),
                "frames": ((r.eagle or {}).get("error") or {}).get("frames"),
                "config": (r.eagle or {}).get("setup"),
                "language_model_only": bool((r.eagle or {}).get("language_model_only")),
                "notes": r.notes,
                "base_run": None if r.base is None else {"ok": bool(r.base.get("ok")), "error": r.base.get("error")},
            }
            for r in runs
        ],
    }


def write_json(env: EngineEnv, runs: Sequence[ClassRun], out: TextIO) -> None:
    json.dump(to_json(env, runs), out, indent=2)
    out.write("\n")


def progress_line(done: int, total: int, run: ClassRun) -> str:
    predicted = _predicted(run)
    mark = {True: "agrees", False: "DISAGREES", None: "no comparison"}[run.agree]
    return line_text(f"[{done}/{total}] {run.architecture}: {run.outcome.outcome} (predicted {predicted}, {mark}) in {run.seconds:.0f} s")


def write_human(env: EngineEnv, runs: Sequence[ClassRun], out: TextIO) -> None:
    out.write(line_text(f"{env.spec.engine} {env.version or '?'} on the CPU ({env.spec.runner})") + "\n")
    for limit in env.spec.limits:
        out.write(line_text(f"note: {limit}") + "\n")
    width = max([len(r.architecture) for r in runs] + [5])
    out.write(f"{'class':<{width}}  {'predicted':<12} {'engine':<13} agree  cause\n")
    for r in runs:
        out.write(line_text(f"{r.architecture:<{width}}  {_predicted(r):<12} {r.outcome.outcome:<13} {_agree_word(r):<6} {r.outcome.cause}") + "\n")
    s = summary(runs)
    pct = f" ({s['agreement']:.0%})" if s["agreement"] is not None else ""
    out.write(f"\n{s['runs']} runs, {s['set_up']} set up, {s['agree']} of {s['compared']} compared agree{pct}\n")


def _cell(text: str) -> str:
    return line_text(text).replace("|", "\\|")


def write_markdown(env: EngineEnv, runs: Sequence[ClassRun], out: TextIO, notes: dict[str, str] | None = None) -> None:
    s = summary(runs)
    out.write(f"Engine: {env.spec.engine} {env.version or '?'}, {env.spec.runner}.\n\n")
    if env.spec.limits:
        out.write("What a run on this engine's CPU build cannot show:\n\n" + "".join(f"- {_cell(limit)}\n" for limit in env.spec.limits) + "\n")
    pct = f" ({s['agreement']:.0%})" if s["agreement"] is not None else ""
    out.write(f"{s['runs']} classes run, {s['set_up']} set up, {s['agree']} of {s['compared']} compared agree{pct}.\n\n")
    out.write("| class | predicted | engine | agree | seconds | cause |\n| --- | --- | --- | --- | --- | --- |\n")
    for r in runs:
        cause = r.outcome.cause
        if notes and r.architecture in notes:
            cause += f" — why: {notes[r.architecture]}"
        out.write(f"| {_cell(r.architecture)} | {_predicted(r)} | {r.outcome.outcome} | {_agree_word(r)} | {r.seconds:.0f} | {_cell(cause)} |\n")
