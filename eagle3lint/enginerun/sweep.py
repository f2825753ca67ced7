"""Run the engine's probe on model classes, one process per launch with a time limit, and set each
outcome beside the static prediction for the same tree."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.enginerun import matcher, shrink
from eagle3lint.enginerun.outcome import UNMATCHED, VERDICTS, EngineOutcome, classify
from eagle3lint.enginerun.spec import EngineRunSpec
from eagle3lint.enginerun.stubs import write_stubs


@dataclass(frozen=True)
class Prediction:
    """What ``models`` says of a class on the same tree."""

    qualname: str
    status: str | None
    outcome: str | None
    reason: str | None
    codes: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()


@dataclass
class ClassRun:
    architecture: str
    prediction: Prediction | None
    outcome: EngineOutcome
    eagle: dict[str, Any] | None
    base: dict[str, Any] | None
    seconds: float
    setup_seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    # Each engine start's wall time (the launch with the drafter, the one without, retries).
    launch_seconds: list[float] = field(default_factory=list)

    @property
    def agree(self) -> bool | None:
        """None where there is nothing to compare: no verdict from the engine, or none predicted."""
        if self.outcome.outcome not in VERDICTS or self.prediction is None or self.prediction.outcome not in VERDICTS:
            return None
        return self.prediction.outcome == self.outcome.outcome


@dataclass(frozen=True)
class Launch:
    """One launch to make: an architecture (its config built from its config class) or a folder,
    with the drafter the linter wrote for it (else the probe writes one)."""

    architecture: str
    model_path: Path | None = None
    drafter_path: Path | None = None


@dataclass
class EngineEnv:
    spec: EngineRunSpec
    python: Path
    version: str | None
    package_root: Path | None


def find_engine(spec: EngineRunSpec, python: Path | None, release: str | None = None) -> EngineEnv:
    """The engine's interpreter, checked to hold the engine (without importing it: a find_spec);
    with ``release``, the default environment made for that version (``<engine>-cpu-VERSION``)."""
    candidates = [python] if python is not None else spec.default_pythons()
    if release is not None and python is None:
        candidates = [p for p in candidates if p.parent.parent.name.endswith(f"-{release}")]
    if not candidates:
        wanted = f" {release}" if release is not None else ""
        raise UsageError(f"engine-run: no {spec.engine}{wanted} CPU engine found; install one: {spec.install_hint}")
    chosen = candidates[0]
    if not chosen.exists():
        raise UsageError(f"engine-run: {chosen}: no such interpreter; install the engine: {spec.install_hint}")
    code = (
        "import importlib.util, importlib.metadata, json, sys\n"
        f"s = importlib.util.find_spec({spec.engine!r})\n"
        "if s is None: sys.exit(3)\n"
        "v = None\n"
        f"for d in {tuple(spec.distributions or (spec.engine,))!r}:\n"
        "    try: v = importlib.metadata.version(d); break\n"
        "    except importlib.metadata.PackageNotFoundError: pass\n"
        "print(json.dumps({'root': list(s.submodule_search_locations or [])[0], 'version': v}))\n"
    )
    try:
        done = subprocess.run([str(chosen), "-c", code], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"engine-run: {chosen}: cannot run it ({exc})") from exc
    if done.returncode == 3:
        raise UsageError(f"engine-run: {chosen} has no {spec.engine} installed; install it: {spec.install_hint}")
    if done.returncode != 0:
        raise UsageError(f"engine-run: {chosen}: {done.stderr.strip().splitlines()[-1:] or 'failed'}")
    found = json.loads(done.stdout)
    if release is not None and found.get("version") != release:
        raise UsageError(f"engine-run: {chosen} holds {spec.engine} {found.get('version')}, not {release}; install it: {spec.install_hint}")
    return EngineEnv(spec, chosen, found.get("version"), Path(found["root"]) if found.get("root") else None)


def _options(spec: EngineRunSpec) -> list[str]:
    return [arg for option in spec.launch_options for arg in ("--engine-option", option)]


def predictions(package_root: Path, spec: EngineRunSpec) -> dict[str, Prediction]:
    """``models --format json`` of the engine's own installed tree, under the launch options of
    its CPU build (its runner), by architecture and class."""
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "models", "--engine", spec.engine, "--engine-root", str(package_root), *_options(spec), "--format", "json"],
        capture_output=True, text=True, check=False,
    )
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise UsageError(f"engine-run: the static prediction of {package_root} failed: {done.stderr.strip()[-400:]}") from exc
    return target_predictions(data)


def target_predictions(models_json: dict[str, Any]) -> dict[str, Prediction]:
    """``models --format json``'s targets, by class and by each architecture it registers."""
    found: dict[str, Prediction] = {}
    for model in models_json.get("models", []):
        if model.get("kind") != "target":
            continue
        prediction = Prediction(
            model["class"], model.get("status"), model.get("outcome"), model.get("reason"), tuple(model.get("codes") or ()),
            tuple(model.get("architectures") or ()),
        )
        for name in [model["class"], *(model.get("architectures") or [])]:
            found.setdefault(name, prediction)
    return found


def pair_prediction(package_root: Path, spec: EngineRunSpec, launch: Launch) -> Prediction | None:
    """The pair pre-flight's outcome for a launch of a model folder with its drafter: what the
    static analysis says of this very pair (its config decides the layer ids), not of the class."""
    if launch.model_path is None or launch.drafter_path is None:
        return None
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "preflight", "--engine", spec.engine, "--engine-root", str(package_root),
         "--model-path", str(launch.model_path), "--draft-model-path", str(launch.drafter_path), *_options(spec), "--format", "json"],
        capture_output=True, text=True, check=False,
    )
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        return None
    problems = [i for i in data.get("items", []) if i.get("status") == "problem"]
    reason = problems[0].get("message") if problems else data.get("reason")
    return Prediction(f"pre-flight of {launch.architecture}", "pre-flight", data.get("outcome"), reason, (), (launch.architecture,))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


# The probes' shared module (eagle3lint_probe, standard library only): first on a launch's
# PYTHONPATH, as the engine's interpreter has no eagle3lint to import it from.
PROBE_PATH = Path(__file__).with_name("probe_path")

# How a launch names a config attribute the class default lacks: transformers' AttributeError, or
# a model's own check of a getattr(config, NAME, None) (Afmoe: "AfmoeConfig must define `num_experts`.").
MISSING_ATTRIBUTE = (
    re.compile(r"^'(\w*Config)' object has no attribute '(\w+)'$"),
    re.compile(r"^(\w*Config) must define `(\w+)`"),
)
# How many attributes a class default's config may gain, one per try.
ATTRIBUTE_TRIES = 8


def probe_once(
    env: EngineEnv, launch: Launch, mode: str, workdir: Path, timeout_s: float, slot: int, jobs: int, added: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """One launch in its own process group, killed at the time limit; its record (None: none written)."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"{mode}.json"
    spec = {
        "architecture": launch.architecture,
        "model_path": str(launch.model_path) if launch.model_path else None,
        "drafter_path": str(launch.drafter_path) if launch.drafter_path else None,
        "mode": mode,
        "workdir": str(workdir),
        "out": str(out),
        "layers": shrink.TEXT_LAYERS,
        "shrink_path": shrink.__file__,
        "matcher_path": matcher.__file__,
        "config_added": added or {},
    }
    spec_path = workdir / f"{mode}-spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    environment = {**os.environ, **env.spec.env, **env.spec.slot_env(slot, jobs)}
    stubs = write_stubs(workdir.parent / "stubs")
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROBE_PATH), *map(str, env.spec.pythonpath), str(stubs), environment.get("PYTHONPATH", "")) if p
    )
    # vLLM caches each architecture's inspection under its cache root: one per engine interpreter,
    # so no other installation's entries are read.
    environment.setdefault("VLLM_CACHE_ROOT", str(env.python.parent.parent / "eagle3lint-vllm-cache"))
    with open(workdir / f"{mode}.log", "wb") as log:
        process = subprocess.Popen(
            [str(env.python), str(env.spec.probe), str(spec_path)], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=environment, start_new_session=True, cwd=workdir,
        )
        timed_out = False
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
    try:
        record: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {"ok": False, "phase": "start", "timed_out": True} if timed_out else None
    if timed_out:
        record["timed_out"] = True
        record["ok"] = False
    return record


def run_class(env: EngineEnv, launch: Launch, prediction: Prediction | None, workdir: Path, timeout_s: float, slot: int = 0, jobs: int = 1) -> ClassRun:
    """The launch with the drafter; where it fails short of the engine's refusal, the same launch
    without it, so that a failing set-up is never blamed on EAGLE-3. Where the launch *without*
    the drafter reads a config attribute the class default lacks (checkpoints carry it), it runs
    again with a value for it, one attribute at a time, then the launch with the drafter once more
    with all of them: only what the drafter's launch alone reads can be EAGLE-3's crash (a
    multimodal id the drafter load copies is never added)."""
    start = time.monotonic()
    added: dict[str, Any] = {}
    unguessed: str | None = None
    launches: list[float] = []

    def timed(mode: str) -> dict[str, Any] | None:
        began = time.monotonic()
        record = probe_once(env, launch, mode, workdir, timeout_s, slot, jobs, added)
        launches.append(round(time.monotonic() - began, 1))
        return record

    eagle = timed("eagle")
    base = None
    first = classify(eagle, None, env.spec.refusals)
    if first.outcome not in ("works", "silent", "refused", UNMATCHED) and (eagle or {}).get("failed_in") != "setup":
        base = timed("base")
        while launch.model_path is None and len(added) < ATTRIBUTE_TRIES:
            name = missing_attribute(str(((base or {}).get("error") or {}).get("message", "")))
            if name is None or name in added:
                break
            guess = shrink.guess_missing(name)
            if guess is None:
                # No value to give (a nested config, a list of block settings): another launch
                # would fail alike.
                unguessed = name
                break
            added[name] = guess
            base = timed("base")
        if added:
            eagle = timed("eagle")
    outcome = classify(eagle, base, env.spec.refusals)
    timings = (eagle or {}).get("timings") or {}
    run = ClassRun(launch.architecture, prediction, outcome, eagle, base, round(time.monotonic() - start, 1), timings.get("init"), launch_seconds=launches)
    if added:
        run.notes.append("config attributes the class default lacks, added: " + ", ".join(f"{k}={v!r}" for k, v in added.items()))
    if unguessed:
        run.notes.append(f"config attribute the class default lacks, no value to guess (not retried): {unguessed}")
    return run


def missing_attribute(message: str) -> str | None:
    """The config attribute a failed launch says the config lacks, if it says so."""
    for pattern in MISSING_ATTRIBUTE:
        found = pattern.match(message)
        if found is not None:
            return found.group(2)
    return None


def run_many(
    env: EngineEnv,
    launches: Sequence[Launch],
    found: dict[str, Prediction],
    timeout_s: float,
    jobs: int = 1,
    workdir: Path | None = None,
    progress: Callable[[int, int, ClassRun], None] | None = None,
) -> list[ClassRun]:
    """Every launch, ``jobs`` at a time, in the order given."""
    root = workdir or Path(tempfile.mkdtemp(prefix="eagle3lint-engine-run-"))
    results: list[ClassRun | None] = [None] * len(launches)
    done = 0

    def one(n: int) -> None:
        nonlocal done
        launch = launches[n]
        run = run_class(env, launch, found.get(launch.architecture), root / _safe(launch.architecture), timeout_s, n % jobs, jobs)
        results[n] = run
        done += 1
        if progress is not None:
            progress(done, len(launches), run)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, range(len(launches))))
    return [r for r in results if r is not None]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:100] or "model"


def select(found: dict[str, Prediction], names: Iterable[str], every: bool) -> list[Launch]:
    """The launches for the named classes or architectures, or one per target class (its first
    registered architecture)."""
    if not every:
        return [Launch(name) for name in names]
    unique = {id(p): p for p in found.values()}
    return [Launch((p.architectures or (p.qualname,))[0]) for p in sorted(unique.values(), key=lambda p: p.qualname)]
