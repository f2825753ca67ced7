"""Which decoder layer's residual stream does each captured state equal?

The probe records, in one forward pass, the residual stream entering every decoder layer (as the
layer's first norm sees it: a fused add-and-norm returns the stream it formed, a plain norm reads
it) and the stream after the last layer (as the final norm sees it), plus the layers' raw outputs.
An EAGLE-3 id k means "the stream after k layers" (vLLM's convention: the state entering layer
k); a state equal to none of the streams but to a layer's partial output (the block's output
without its residual) is the wrong tensor, and the drafter is silently fed it.

Generic over the tensor type (``same`` compares two); standard library only, so the engine probe
imports it inside the engine's interpreter and the tests use plain lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class StateMatch:
    """What one captured state equals: ``streams`` the k of every "stream after k layers" it equals,
    ``partials`` the names of other tensors it equals (e.g. "layer 3's output without residual")."""

    index: int
    streams: list[int] = field(default_factory=list)
    partials: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.streams:
            return "the stream after " + " = ".join(str(k) for k in self.streams) + " layers"
        if self.partials:
            return ", ".join(self.partials)
        return "no recorded tensor"


@dataclass
class Recording(Generic[T]):
    """One forward pass: ``streams[k]`` the stream after k layers (0: the embeddings, entering
    layer 0; the last: after the final layer), ``partials`` other named tensors of the pass."""

    streams: Sequence[T | None]
    partials: Mapping[str, T]


def match_states(states: Sequence[T], recording: Recording[T], same: Callable[[T, T], bool]) -> list[StateMatch]:
    """For each captured state, every recorded stream and partial tensor it equals."""
    matches = []
    for i, state in enumerate(states):
        match = StateMatch(i)
        for k, stream in enumerate(recording.streams):
            if stream is not None and same(state, stream):
                match.streams.append(k)
        if not match.streams:
            match.partials = [name for name, tensor in recording.partials.items() if same(state, tensor)]
        matches.append(match)
    return matches


def indistinct_streams(recording: Recording[T], same: Callable[[T, T], bool]) -> list[int]:
    """The k whose stream equals the stream after k - 1 layers: there a match cannot tell which
    layer a state came from (a pass over empty or constant inputs)."""
    streams = recording.streams
    return [k for k in range(1, len(streams)) if streams[k] is not None and streams[k - 1] is not None and same(streams[k], streams[k - 1])]  # type: ignore[arg-type]


@dataclass
class CaptureJudgement:
    """Whether the states a forward returned are the ones the requested ids name."""

    right: bool
    problems: list[str]


def judge_capture(ids: Sequence[int], matches: Sequence[StateMatch]) -> CaptureJudgement:
    """The states, in order, must be the streams after each distinct requested id's layers (the
    engine captures each layer once, in layer order)."""
    wanted = sorted(set(ids))
    problems: list[str] = []
    if len(matches) != len(wanted):
        problems.append(f"{len(matches)} states returned for {len(wanted)} distinct ids {wanted}")
    for k, match in zip(wanted, matches, strict=False):
        if k not in match.streams:
            problems.append(f"state {match.index} (id {k}) is {match.describe()}, not the stream after {k} layers")
    return CaptureJudgement(not problems, problems)
