"""The engine sweep: `eagle3lint engine-run --all` on the installed CPU engine, written up as
docs/engine-runs.md (class, predicted, engine, agree, cause) with the benchmark figures: how many
text-only classes set up, each run's set-up and total time, and the agreement.

    python bench/engine_sweep.py [--jobs 2] [--from-json SWEEP.json] [--out docs/engine-runs.md]

--from-json renders sweeps already run (`engine-run --all --format json`, then reruns of some
classes: the later run of a class counts). Disagreements that
the engine's code explains are noted in bench/engine_sweep_notes.toml (architecture = "why"), or
the file --notes names (SGLang's: bench/engine_sweep_notes_sglang.toml). --section renders one
release's figures and table as a section of a document with its own introduction (one per
release: docs/engine-runs-sglang.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's eagle3lint, whichever one is installed
NOTES = Path(__file__).with_name("engine_sweep_notes.toml")
VERDICTS = ("works", "crash", "silent", "refused")
# The time one launch may take on 2 cores, by engine (the engine-run issues' goals).
RUN_GOAL_S = {"vllm": 60, "sglang": 30}


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render(data: dict[str, Any], notes: dict[str, str], text_only_names: frozenset[str], section: bool = False) -> str:
    runs = data["runs"]
    if text_only_names:
        text_only = [r for r in runs if r["architecture"] in text_only_names]
    else:  # no engine here to read the registry: the probe's own word
        text_only = [r for r in runs if not r.get("language_model_only")]
    multimodal = [r for r in runs if r not in text_only]
    set_up = [r for r in runs if r["outcome"] in VERDICTS]
    text_set_up = [r for r in text_only if r["outcome"] in VERDICTS]
    compared = [r for r in runs if r["agree"] is not None]
    agree = [r for r in compared if r["agree"]]
    seconds = [r["seconds"] for r in runs]
    setup_s = [r["setup_seconds"] for r in runs if r.get("setup_seconds")]
    launch_s = [s for r in runs for s in r.get("launch_seconds") or ()]
    goal_s = RUN_GOAL_S.get(data["engine"], 60)
    head = [
        f"## {data['engine']} {data['engine_version']}",
        "",
        f"{data['runner']}; {len(runs)} classes run.",
        "",
    ] if section else [
        "# Engine runs: the verdicts against a running engine",
        "",
        f"`python bench/engine_sweep.py` ({data['engine']} {data['engine_version']}, {data['runner']}): every target class of the",
        "installed tree launched with a shrunken config, a one-layer EAGLE-3 drafter and dummy weights",
        "(`eagle3lint engine-run --all`), against `eagle3lint models` on the same files.",
        *_provenance(runs),
        "",
    ]
    lines = [
        *head,
        "| figure | value | goal |",
        "| --- | --- | --- |",
        f"| classes run | {len(runs)} ({len(text_only)} text-only, {len(multimodal)} multimodal) | |",
        f"| set up (a verdict) | {len(set_up)} of {len(runs)} | |",
        f"| text-only classes set up | {len(text_set_up)} of {len(text_only)} ({len(text_set_up) / max(1, len(text_only)):.0%}) | at least 60% |",
        f"| agreement, runs that set up and have a prediction | {len(agree)} of {len(compared)} ({len(agree) / max(1, len(compared)):.0%}) | at least 95% |",
        f"| time per launch (one engine start: with the drafter, without it, a retry), median / max | {statistics.median(launch_s):.0f} s / {max(launch_s):.0f} s ({sum(s <= goal_s for s in launch_s)} of {len(launch_s)} within {goal_s} s) | a run at most {goal_s} s |" if launch_s else "| time per launch | - | |",
        f"| time per class (every launch it took), median / max | {statistics.median(seconds):.0f} s / {max(seconds):.0f} s | |" if seconds else "| time per class | - | |",
        f"| engine set-up (import to engine ready), median | {statistics.median(setup_s):.0f} s | |" if setup_s else "| engine set-up | - | |",
        "",
        *(["What a run on this engine's CPU build cannot show:", "", *(f"- {_cell(limit)}" for limit in data["limits"]), ""] if data.get("limits") else []),
        "Outcomes: works / crash / silent / refused are verdicts; setup-failed means the launch without",
        "the drafter failed too (the cause is that launch's), timeout that no record came in the limit.",
        "",
        "| class | predicted | engine | agree | seconds | cause |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        predicted = (r.get("predicted") or {}).get("outcome") or "-"
        agree_word = {True: "yes", False: "**no**", None: "-"}[r["agree"]]
        cause = r["cause"]
        if r["architecture"] in notes:
            cause += f" — why: {notes[r['architecture']]}"
        unseen = not_shown(data, r)
        if unseen:
            cause += f" — not shown on CPU: {unseen}"
        lines.append(f"| {r['architecture']} | {predicted} | {r['outcome']} | {agree_word} | {r['seconds']:.0f} | {_cell(cause)} |")
    return "\n".join(lines) + "\n"


def _is_mla(run: dict[str, Any]) -> bool:
    """Whether the launched config is a DeepSeek-style MLA one (a latent KV rank)."""
    config = run.get("config") or {}
    return any("kv_lora_rank" in str(change) for change in config.get("changes") or ())


def not_shown(data: dict[str, Any], run: dict[str, Any]) -> str:
    """What this class's `works` does not prove, on an engine whose CPU build cannot show all of
    a launch (the record's ``limits``): a crash is seen whatever the limits; a pass is not."""
    if not data.get("limits") or run.get("outcome") != "works":
        return ""
    parts = ["a generation (a silent capture)", "the CUDA-graph path's second setter call"]
    if _is_mla(run):
        parts.append("the MLA forward")
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _provenance(runs: list[dict[str, Any]]) -> list[str]:
    """Rows taken from an earlier sweep's table (its records were not kept) are said to be."""
    restored = [r for r in runs if r.get("restored_from")]
    if not restored:
        return []
    sources = ", ".join(sorted({str(r["restored_from"]) for r in restored}))
    rerun = len(runs) - len(restored)
    return [
        f"{len(restored)} rows are the engine outcomes {sources} recorded (outcome, cause, seconds; the records",
        f"themselves were not kept), compared with today's predictions (`--repredict`); {rerun} were run again.",
        "The time per launch is measured on the runs made again only.",
    ]


def _engine(data: dict[str, Any]) -> Any:
    from eagle3lint.common.errors import UsageError
    from eagle3lint.enginerun.sweep import find_engine
    from eagle3lint.engines import engine_run_for

    spec = engine_run_for(data["engine"])
    try:  # the environment of the release the sweep ran on, where one is installed per release
        return find_engine(spec, None, data.get("engine_version"))
    except UsageError:
        env = find_engine(spec, None)
    if data.get("engine_version") and env.version != data["engine_version"]:
        # Another release's tree would predict (and list text-only classes) for the wrong files.
        raise UsageError(
            f"the sweep ran on {data['engine']} {data['engine_version']}, the engine found is {env.version}: "
            f"install the release's environment ({spec.install_hint})"
        )
    return env


def text_only_names(data: dict[str, Any]) -> frozenset[str]:
    """The architectures the installed engine registers as text-only generators."""
    try:
        env = _engine(data)
    except Exception as exc:  # no engine installed: render from the records alone, and say so
        print(f"engine_sweep: {exc}; the text-only classes are taken from the records", file=sys.stderr)
        return frozenset()
    return env.spec.text_only(env.package_root) if env.package_root is not None else frozenset()


def repredict(data: dict[str, Any]) -> None:
    from eagle3lint.enginerun.sweep import predictions

    env = _engine(data)
    assert env.package_root is not None
    found = predictions(env.package_root, env.spec)
    for run in data["runs"]:
        p = found.get(run["architecture"])
        if run.get("predicted", {}) and (run["predicted"] or {}).get("status") == "pre-flight":
            continue
        run["predicted"] = None if p is None else {"class": p.qualname, "status": p.status, "outcome": p.outcome, "reason": p.reason, "codes": list(p.codes)}
        verdict = run["outcome"] in VERDICTS and p is not None and p.outcome in VERDICTS
        run["agree"] = (p.outcome == run["outcome"]) if verdict and p is not None else None
    data["summary"] = None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--from-json", type=Path, nargs="+", help="Sweeps already run; a later file's run of a class replaces an earlier one's.")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "engine-runs.md")
    parser.add_argument("--save-json", type=Path, help="Keep the sweep's records (to render again with --from-json --repredict).")
    parser.add_argument("--notes", type=Path, default=NOTES, help="Why runs disagree, by architecture (default: bench/engine_sweep_notes.toml).")
    parser.add_argument("--section", action="store_true", help="A section (## ENGINE VERSION) to put under a document's own introduction, not a whole document.")
    parser.add_argument(
        "--repredict", action="store_true",
        help="Compare the engine's outcomes with this tree's predictions (the analysis changed since the sweep ran; the engine's files did not).",
    )
    args = parser.parse_args()
    if args.from_json:
        data = json.loads(args.from_json[0].read_text(encoding="utf-8"))
        order = [r["architecture"] for r in data["runs"]]
        by_name = {r["architecture"]: r for r in data["runs"]}
        for later in args.from_json[1:]:
            for run in json.loads(later.read_text(encoding="utf-8"))["runs"]:
                if run["architecture"] not in by_name:
                    order.append(run["architecture"])
                by_name[run["architecture"]] = run
        data["runs"] = [by_name[name] for name in order]
    else:
        done = subprocess.run(
            [sys.executable, "-m", "eagle3lint", "engine-run", "--all", "--jobs", str(args.jobs), "--timeout", str(args.timeout), "--format", "json"],
            stdout=subprocess.PIPE, text=True, check=False,
        )
        if done.returncode not in (0, 1):
            return done.returncode
        data = json.loads(done.stdout)
        if args.save_json:
            args.save_json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if args.repredict:
        repredict(data)
    raw = tomllib.loads(args.notes.read_text(encoding="utf-8")) if args.notes.exists() else {}
    # architecture = "why", or a table of them for one release (["0.5.23"]) where releases differ.
    notes = {k: str(v) for k, v in raw.items() if not isinstance(v, dict)}
    release = raw.get(str(data.get("engine_version")))
    if isinstance(release, dict):
        notes.update({k: str(v) for k, v in release.items()})
    args.out.write_text(render(data, notes, text_only_names(data), args.section), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
