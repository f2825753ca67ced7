"""One engine run's outcome, from the probe's records of the launch with the drafter and, where
that failed, of the same launch without it.

works / crash / silent / refused are verdicts; ``setup-failed`` (the launch without the drafter
fails too: nothing to blame on EAGLE-3) and ``timeout`` are not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

VERDICTS = ("works", "crash", "silent", "refused")
SETUP_FAILED = "setup-failed"
TIMEOUT = "timeout"
# Generated, but no state equals any tensor the probe recorded: its hooks missed this decoder's
# stream, so the states cannot be judged.
UNMATCHED = "unmatched"


@dataclass
class EngineOutcome:
    outcome: str
    cause: str
    # Whether the states were matched to layers (a works or silent the matcher confirmed).
    matched: bool = False


def error_text(record: dict[str, Any]) -> str:
    """``Type: message (at file:line in function)``: the exception and its innermost frame."""
    error = record.get("error") or {}
    frames = error.get("frames") or []
    where = f" (at {frames[-1]})" if frames else ""
    message = str(error.get("message", "")).strip().splitlines()
    first = message[0] if message else ""
    return f"{error.get('type', 'error')}: {first}{where}"


def failed(record: dict[str, Any] | None) -> bool:
    return record is None or not record.get("ok")


def classify(eagle: dict[str, Any] | None, base: dict[str, Any] | None, refusals: Sequence[re.Pattern[str]]) -> EngineOutcome:
    if eagle is None:
        return EngineOutcome(TIMEOUT if base is None else SETUP_FAILED, "the probe wrote no record")
    if eagle.get("timed_out"):
        if base is not None and failed(base):
            return EngineOutcome(SETUP_FAILED, "without the drafter too: " + _failure(base))
        return EngineOutcome(TIMEOUT, f"no result within the time limit (reached: {eagle.get('phase')})")
    if not eagle.get("ok"):
        message = str((eagle.get("error") or {}).get("message", ""))
        if any(p.search(message) for p in refusals):
            return EngineOutcome("refused", error_text(eagle))
        if eagle.get("failed_in") == "setup":
            return EngineOutcome(SETUP_FAILED, "building the config: " + error_text(eagle))
        if base is not None and failed(base) and not _got_further(base, eagle):
            return EngineOutcome(SETUP_FAILED, "without the drafter too: " + _failure(base))
        return EngineOutcome("crash", error_text(eagle))
    if eagle.get("wall"):
        # An engine whose CPU build cannot generate with EAGLE-3 (SGLang): the launch got past
        # every interface call on the target and stopped at a wall common to every class.
        return EngineOutcome("works", _past_the_interface(eagle))
    return _judge_states(eagle)


def _past_the_interface(eagle: dict[str, Any]) -> str:
    calls = [c for c in eagle.get("interface_calls") or [] if c.get("ok")]
    named = ", ".join(dict.fromkeys(f"{c.get('role')}.{c.get('member')}" for c in calls)) or "none recorded"
    captures = eagle.get("captures")
    taken = f"; the target captures layers {captures}" if captures is not None else ""
    return f"interface calls passed ({named}){taken}; stopped at {eagle['wall']}"


PHASES = ("start", "setup", "import", "init", "generate", "done")


def _reached(record: dict[str, Any]) -> int:
    phase = record.get("failed_in") or record.get("phase")
    return PHASES.index(phase) if phase in PHASES else 0


def _got_further(base: dict[str, Any], eagle: dict[str, Any]) -> bool:
    """The launch without the drafter failed later than the one with it (a set-up that loads
    but cannot generate): the earlier failure is EAGLE-3's."""
    return not base.get("timed_out") and _reached(base) > _reached(eagle)


def _failure(record: dict[str, Any]) -> str:
    if record.get("timed_out"):
        return f"no result within the time limit (reached: {record.get('phase')})"
    return error_text(record)


def _tells_ids_apart(recorded: dict[str, Any], ids: list[int]) -> bool:
    """No requested id's stream equals its neighbour's: where stream k equals stream k - 1 (or
    k + 1), a state from the neighbouring layer would match id k. Equal streams elsewhere in the
    pass (a last layer adding nothing under dummy weights) do not blur the ids asked for."""
    same_as_previous = set(recorded.get("indistinct") or [])
    return not any(k in same_as_previous or k + 1 in same_as_previous for k in ids)


def _judge_states(eagle: dict[str, Any]) -> EngineOutcome:
    ids = eagle.get("ids")
    passes = [p for p in eagle.get("passes") or [] if p.get("aux_count") is not None]
    if ids is None:
        return EngineOutcome("works", "generated, but the runner set no layer ids on the target")
    if not passes:
        return EngineOutcome("works", f"generated with ids {ids}; the target's forward returned no states the probe could read")
    clear = [p for p in passes if p.get("streams_seen") and _tells_ids_apart(p, ids)]
    if not clear:
        return EngineOutcome("works", f"generated with ids {ids}; no pass told the layers apart")
    if all(not m.get("streams") and not m.get("partials") for p in clear for m in p.get("matches", [])):
        return EngineOutcome(UNMATCHED, f"generated with ids {ids}; no state equals a tensor the probe recorded ({eagle.get('layers_found')})")
    wrong = [p for p in clear if p.get("right") is False]
    if wrong:
        return EngineOutcome("silent", "; ".join(wrong[0].get("problems") or ["states differ from the ids' layers"]), matched=True)
    widths = sorted(set(w for p in clear for w in p.get("widths", [])))
    return EngineOutcome("works", f"ids {ids}: each state is the stream after its id's layers (width {', '.join(map(str, widths))})", matched=True)
