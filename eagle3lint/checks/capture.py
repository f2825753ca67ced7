"""Capture data-flow rules: the target has the interface, but does the drafter get the states?

They follow what the engine's setter writes to where the decoder's ``forward`` reads it
(``eagle3lint.model.capture``), and where the causal LM's ``forward`` sends what it captured. Which
names are capture state, the setter, the flag and the hand-off are rule-pack data
(``[capture]`` in ``rules/<engine>.toml``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import CRASH, SILENT, STAGE_FORWARD, Effect
from eagle3lint.model.capture import CaptureAnalysis, Method, Reads, Write
from eagle3lint.model.models import TARGET, ModelClass
from eagle3lint.source.capture_facts import CaptureSpec
from eagle3lint.source.index import ClassRef


def capture_analysis(ctx: CheckContext) -> CaptureAnalysis:
    """One analysis per run, shared by the core's and the engines' capture rules."""
    spec = ctx.pack.capture or CaptureSpec(functions=frozenset(), setters=frozenset())
    return ctx.shared("capture", lambda: CaptureAnalysis(ctx.index, spec))


_analysis = capture_analysis


def _setter(ctx: CheckContext, model: ModelClass) -> Method | None:
    spec = ctx.pack.capture
    if spec is None or not spec.eagle3_setter or model.kind != TARGET:
        return None
    method = _analysis(ctx).method(model.ref, spec.eagle3_setter)
    if method is None or method.function.is_stub:
        return None
    return method


def _setter_writes(ctx: CheckContext) -> Iterator[tuple[ModelClass, Method, list[Write]]]:
    """Each target with its own EAGLE-3 setter, and what that setter writes (followed through
    delegation and inheritance)."""
    spec = ctx.pack.capture
    if spec is None:
        return
    for model in ctx.models:
        setter = _setter(ctx, model)
        if setter is not None:
            yield model, setter, _analysis(ctx).writes(model.ref, spec.eagle3_setter)[0]


def _where(ctx: CheckContext, ref: ClassRef, line: int, message: str) -> list[Related]:
    module = ctx.index.module(ref.module)
    return [Related(module.path, line, message)] if module is not None and line else []


def _forward_line(ctx: CheckContext, ref: ClassRef) -> tuple[ClassRef, int] | None:
    lookup = ctx.index.lookup(ref, "forward")
    if lookup.owner is None or lookup.function is None:
        return None
    return lookup.owner, lookup.function.lineno


class CaptureStateNeverRead(Rule):
    """
    ## What it does
    Follows what a target's EAGLE-3 setter (`set_eagle3_layers_to_capture`) writes, through
    delegation, `super()` and inheritance, to the objects it lands on (the decoder in
    `self.model`, an inner language model), and reports a target none of whose writes reach what
    that object's `forward` reads: the setter records a list of layer ids (`layers_to_capture`)
    while the decoder captures the layers whose per-layer marker (`_is_layer_to_capture`) is
    set, which only another algorithm's setter sets; or the decoder's loop captures nothing at
    all. Dead writes beside one that is read are not findings.

    ## Why is this bad?
    The server starts and EAGLE-3 is on, yet no hidden state is captured: the target's forward
    then unpacks `(hidden_states, aux_hidden_states)` from a plain tensor (an opaque unpack
    error at CUDA-graph capture), or the drafter runs on nothing. This is sglang#25408: the
    Qwen3.5 VL wrappers inherited a setter that only assigned `layers_to_capture`.

    ## Example
    ```python
    class FooForConditionalGeneration(BaseVL):   # setter: self.model.layers_to_capture = ids
        ...
    class FooForCausalLM(nn.Module):             # self.model
        def forward(self, ...):
            for layer in self.layers:
                out = layer(..., capture=aux if getattr(layer, "_is_layer_to_capture", False) else None)
    ```
    Use instead: delegate to the inner model's own setter,
    `self.model.set_eagle3_layers_to_capture(layer_ids)`, which sets the markers it reads.

    ## Fix safety
    Safe where the inner model's own setter is proven to set what the inner `forward` reads: an
    inherited setter gets an override that runs the base's (it sets the wrapper's own flag) and
    then the inner model's; the class's own setter gets the call at its end. Display-only when
    the inner model has no such setter, its decoder captures nothing, or the setter returns
    early.

    ## References
    sglang#25408; sglang#38307.
    """

    code = "E3L101"
    name = "capture-state-never-read"
    family = "capture"
    fix_safety = "safe"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        spec = ctx.pack.capture
        if spec is None:
            return
        analysis = _analysis(ctx)
        for model, setter, writes in _setter_writes(ctx):
            by_holder: dict[ClassRef, list[Write]] = {}
            for write in writes:
                by_holder.setdefault(write.holder, []).append(write)
            for holder, holder_writes in by_holder.items():
                reads = analysis.reads(holder)
                problem = unread_problem(holder_writes, reads)
                if problem is None or not reads.found or (problem == "nothing" and not spec.report_uncollected):
                    continue
                yield self._finding(ctx, model, setter, holder, holder_writes, reads, problem)
                break

    def _finding(self, ctx: CheckContext, model: ModelClass, setter: Method, holder: ClassRef, writes: list[Write], reads: Reads, problem: str) -> Finding:
        spec = ctx.pack.capture
        assert spec is not None
        written = ", ".join(dict.fromkeys(w.describe() for w in writes))
        via = writes[0].path
        where = "self" + "".join(f".{p}" for p in via)
        if problem == "mismatch":
            wanted = sorted(reads.markers) or sorted(reads.attributes)
            kind = "the per-layer marker" if reads.markers else "the attribute"
            own = _own_writer(ctx, holder, set(wanted))
            others = _other_writers(ctx, holder, model.ref, set(wanted))
            if own:
                by = f", which `{own}` sets, but the target's setter never calls it"
            elif others:
                by = f", which only {others} sets"
            else:
                by = ", which nothing in the tree sets for EAGLE-3"
            reads_text = f"captures the layers by {kind} {', '.join(f'`{w}`' for w in wanted)}{by}"
        else:
            reads_text = "captures no hidden state in its decoder loop"
        message = (
            f"`{model.summary.name}`'s EAGLE-3 setter (`{setter.owner.qualname}.{spec.eagle3_setter}`) writes {written}, "
            f"but `{reads.where}` (`{where}`: `{holder.qualname}`) {reads_text}: with EAGLE-3 on nothing is captured, "
            "and the first forward fails unpacking `(hidden_states, aux_hidden_states)` from a bare tensor (or packing "
            "an empty list of aux states)"
        )
        related = _where(ctx, setter.owner, setter.function.lineno, f"{setter.owner.qualname}.{spec.eagle3_setter}: the writes")
        forward = _forward_line(ctx, holder)
        if forward is not None:
            related += _where(ctx, forward[0], forward[1], f"{reads.where}: what the capture reads")
        evidence = related[-1] if forward is not None and related else None
        finding = ctx.finding(
            CaptureStateNeverRead, model, spec.eagle3_setter, message, [],
            effect=Effect(CRASH, STAGE_FORWARD, evidence, reason=f"`{holder.qualname}` never captures what the setter asks for", code=self.code),
            data={
                "holder": str(holder), "holder_ref": [holder.module, holder.qualname], "path": list(via), "problem": problem,
                "writes": [w.name for w in writes], "reads": sorted(reads.markers | reads.attributes),
            },
        )
        finding.related = related
        return finding


def unread_problem(writes: list[Write], reads: Reads) -> str | None:
    """"mismatch" when the object reads capture state none of the writes sets, "nothing" when
    attributes are written to a decoder whose loop reads none; None when a write is read (or
    nothing can be said: markers may be read by the layers themselves)."""
    if any((w.marker and w.name in reads.markers) or (not w.marker and w.name in reads.attributes) for w in writes):
        return None
    if reads.captures:
        return "mismatch"
    if all(not w.marker for w in writes) and reads.loops:
        return "nothing"
    return None


def _own_writer(ctx: CheckContext, holder: ClassRef, names: set[str]) -> str | None:
    """The holder's own EAGLE-3 setter, when it sets ``names`` on the holder itself."""
    spec = ctx.pack.capture
    assert spec is not None
    writes, _ = _analysis(ctx).writes(holder, spec.eagle3_setter)
    return next((w.setter for w in writes if w.holder == holder and w.name in names), None)


def _other_writers(ctx: CheckContext, holder: ClassRef, model: ClassRef, names: set[str]) -> str:
    """The other setters (another algorithm's) whose writes set ``names`` on ``holder``."""
    spec = ctx.pack.capture
    assert spec is not None
    analysis = _analysis(ctx)
    found: list[str] = []
    for setter in sorted(spec.setters - {spec.eagle3_setter}):
        for ref in (model, holder):
            writes, _ = analysis.writes(ref, setter)
            for write in writes:
                if write.holder == holder and write.name in names and write.setter not in found:
                    found.append(write.setter)
    return " and ".join(f"`{name}`" for name in found)


class AuxNotHandedOff(Rule):
    """
    ## What it does
    Reports a target whose `forward` unpacks the aux hidden states from its decoder
    (`hidden_states, aux_hidden_states = hidden_states`) but never passes them to the logits
    processor (`self.logits_processor(..., aux_hidden_states)`), the hand-off the engine reads
    them from on the last pipeline rank.

    ## Why is this bad?
    No error anywhere: the logits processor falls back to the final hidden state, the EAGLE-3
    head skips its `fc` because the widths happen to match, and acceptance sits at about one
    token per step. Qwen2.5-VL shipped this in SGLang 0.5.5.post3 (fixed by sglang#13904).

    ## Example
    ```python
    if self.capture_aux_hidden_states:
        hidden_states, aux_hidden_states = hidden_states
    return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch)
    ```
    Use instead: `self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch,
    aux_hidden_states)`.

    ## Fix safety
    Unsafe: `aux_hidden_states=` is added to each call (it changes `forward`), where the
    unpacked name is bound on every path to the call and the processor's `forward` takes the
    keyword. Display-only otherwise.

    ## References
    sglang#13904; SpecForge#310.
    """

    code = "E3L102"
    name = "aux-not-handed-off"
    family = "capture"
    fix_safety = "unsafe"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        spec = ctx.pack.capture
        if spec is None or not spec.logits_call:
            return
        for model in ctx.models:
            if _setter(ctx, model) is None:
                continue
            forward = _analysis(ctx).method(model.ref, "forward")
            if forward is None or not forward.facts.aux_unpacks or not forward.facts.logits_calls:
                continue
            if any(passed for _, passed in forward.facts.logits_calls):
                continue
            name, unpacked = forward.facts.aux_unpacks[0]
            lines = [line for line, _ in forward.facts.logits_calls]
            module = ctx.index.module(forward.owner.module)
            own = forward.owner == model.ref
            # An inherited forward: the finding is the subclass's (at its class), pointing at the
            # forward, so that each broken class reads as one line of its own.
            runs = "" if own else f"`{model.summary.name}` runs `{forward.owner.qualname}.forward`, which "
            subject = f"`{forward.owner.qualname}.forward` " if own else ""
            finding = ctx.finding(
                AuxNotHandedOff, model, "forward",
                f"{runs}{subject}unpacks `{name}` (line {unpacked}) but never passes it to "
                f"`{spec.logits_call}` (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}): the logits "
                "processor falls back to the final hidden state and acceptance collapses to about 1, with no error",
                [],
                path=module.path if module and own else None,
                line=forward.function.lineno if own else None,
                column=forward.function.col + 1 if own else None,
                data={"owner": str(forward.owner), "owner_ref": [forward.owner.module, forward.owner.qualname], "aux": name, "calls": lines},
                effect=Effect(
                    SILENT, STAGE_FORWARD, next(iter(_where(ctx, forward.owner, lines[0], f"`{spec.logits_call}` without the aux states")), None),
                    reason=f"`{forward.owner.qualname}.forward` drops the aux hidden states", code=self.code,
                ),
            )
            if not own:
                finding.related = _where(ctx, forward.owner, forward.function.lineno, f"`{forward.owner.qualname}.forward`")
            yield finding


class CaptureFlagNotInitialised(Rule):
    """
    ## What it does
    Reports capture state (`capture_aux_hidden_states`, `layers_to_capture`) that a `forward`
    reads but that only the EAGLE-3 setter assigns: no `__init__` that runs for the class (along
    its MRO, through `super().__init__`, minus one `super(X, self).__init__()` skips) and no
    class attribute sets it.

    ## Why is this bad?
    Without EAGLE-3 the setter never runs, so the model's plain `forward` raises
    `AttributeError` on its first step: turning speculative decoding off breaks the model
    (caught in review in sglang#8434).

    ## Example
    ```python
    def __init__(self, config):
        ...                                     # no self.capture_aux_hidden_states
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
    def forward(self, ...):
        if self.capture_aux_hidden_states: ...
    ```
    Use instead: `self.capture_aux_hidden_states = False` in `__init__`.

    ## Fix safety
    Safe: the initial value (rule pack `[capture.initial]`) is assigned at the end of the
    class's own `__init__`.

    ## References
    sglang#8434; sglang#9216.
    """

    code = "E3L103"
    name = "capture-flag-not-initialised"
    # Without EAGLE-3 the model fails; with it the setter runs first on current engines, so it
    # is no EAGLE-3 outcome: a warning.
    severity = "warning"
    family = "capture"
    fix_safety = "safe"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        analysis = _analysis(ctx)
        for model, setter, writes in _setter_writes(ctx):
            reported: set[tuple[ClassRef, str]] = set()
            for write in writes:
                if write.marker or (write.holder, write.name) in reported:
                    continue
                holder_reads = analysis.reads(write.holder)
                if write.name not in holder_reads.attributes or write.name in holder_reads.defaulted:
                    continue
                if analysis.set_in_init(write.holder, write.name) is not False:
                    continue
                reported.add((write.holder, write.name))
                where = "self" + "".join(f".{p}" for p in write.path)
                reads = analysis.reads(write.holder)
                skipped = analysis.init_setting(write.holder, write.name)
                why = (
                    f"`{skipped.qualname}.__init__` sets it, but it never runs for `{write.holder.qualname}` (a `super()` call skips it)"
                    if skipped is not None
                    else f"no `__init__` of `{write.holder.qualname}` does"
                )
                finding = ctx.finding(
                    CaptureFlagNotInitialised, model, write.name,
                    f"`{reads.where}` reads `{where}.{write.name}`, which only `{write.setter}` assigns "
                    f"({why}): without EAGLE-3 the forward raises AttributeError",
                    [],
                    data={"holder": str(write.holder), "holder_ref": [write.holder.module, write.holder.qualname], "attribute": write.name},
                )
                finding.related = _where(ctx, setter.owner, write.line, f"{write.setter}: the only assignment")
                yield finding


class CaptureOffsetMismatch(Rule):
    """
    ## What it does
    Reports a setter whose offset on the requested layer ids disagrees with where its decoder
    captures: ids name a layer's output (SGLang) or input (vLLM); a decoder that captures
    *before* layer `i` holds layer `i - 1`'s output, one that captures *after* it layer `i`'s.
    The setter's `[v + k for v in layer_ids]`, the decoder's index (`idx + 1` in a collect
    call) and the capture's place must add up; a decoder that captures inside the layer call
    (a `capture_output=` argument) says nothing and is not judged. The rule pack says which
    convention the engine's ids follow.

    ## Why is this bad?
    Every requested layer is one layer off: the drafter gets hidden states it was not trained
    on, and acceptance drops with no error.

    ## Example
    ```python
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.model.layers_to_capture = [v + 1 for v in layer_ids]   # for a capture before layer i
    # ... but the decoder appends after the layer:
    for i in range(self.start_layer, self.end_layer):
        hidden_states, residual = layer(...)
        if i in self.layers_to_capture:
            aux.append(hidden_states + residual)
    ```

    ## Fix safety
    Display-only: which side is wrong is the author's call.

    ## References
    sglang#32334 (GPT-OSS: ids shifted past the last captured layer).
    """

    code = "E3L104"
    name = "capture-offset-mismatch"
    severity = "warning"
    family = "capture"

    _EXPECTED = {("output", "before"): 1, ("output", "after"): 0, ("input", "before"): 0, ("input", "after"): -1}

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        spec = ctx.pack.capture
        for model in ctx.models:
            setter = _setter(ctx, model)
            if setter is None or spec is None or setter.facts.delegations or len(setter.facts.offsets) > 1:
                continue
            offset = next(iter(setter.facts.offsets), None)
            if offset is None:
                continue
            writes, _ = _analysis(ctx).writes(model.ref, spec.eagle3_setter)
            for holder in dict.fromkeys(w.holder for w in writes if not w.marker):
                reads = _analysis(ctx).reads(holder)
                loops = [loop for loop in reads.loops if loop.capture_position and loop.capture_uses]
                if len(loops) != 1:
                    continue
                loop = loops[0]
                assert loop.capture_position is not None
                expected = self._EXPECTED[(spec.ids, loop.capture_position)]
                if offset - loop.capture_offset == expected:
                    continue
                yield ctx.finding(
                    CaptureOffsetMismatch, model, spec.eagle3_setter,
                    f"`{setter.owner.qualname}.{spec.eagle3_setter}` shifts the requested ids by {offset:+d}, but "
                    f"`{reads.where}` captures {loop.capture_position} each layer (line {loop.line}"
                    f"{f', index {loop.capture_offset:+d}' if loop.capture_offset else ''}): every requested layer "
                    f"is one off (requested ids name a layer's {spec.ids}), so the drafter gets states it was not trained on",
                    [],
                    data={"holder": str(holder), "offset": offset, "position": loop.capture_position},
                )
                break


class CaptureSkippedUnderOption(Rule):
    """
    ## What it does
    Reports a target whose decoder captures the EAGLE-3 hidden states in a loop that a launch
    option's branch skips or cuts short: `if forward_batch.can_run_tbo:` running the layers
    another way (`model_forward_stages(...)`) with the capture loop in the other branch, or
    rebinding the loop's range (`normal_end_layer = self.first_k_dense_replace`) so that only
    the first layers run through it. Which options a forward tests, and how, is rule-pack data
    (`[[option]] tests`); a test that also checks the capture state (`... and not
    self.layers_to_capture`, set by the EAGLE-3 setter) turns the branch off and is fine.

    ## Why is this bad?
    The option is allowed with EAGLE-3, and the server starts. On the first batch that takes
    the option's branch the decoder captures fewer states than requested, or none: the causal
    LM's forward fails unpacking `(hidden_states, aux_hidden_states)` from a bare tensor, or
    the packer raises `captured k of 3 aux hidden states`. It holds only with the option on:
    information otherwise, naming it; an error under `--engine-option <name>` (or `all`).

    ## Example
    ```python
    if forward_batch.can_run_tbo:
        hidden_states = model_forward_stages(layers=self.layers, enable_tbo=True, ...)
    else:
        for i in range(self.start_layer, self.end_layer):
            hidden_states = layer(..., captured_last_layer_outputs=aux if i in self.layers_to_capture else None)
    ```
    Use instead: take the option's branch only when nothing is captured
    (`if forward_batch.can_run_tbo and not self.layers_to_capture:`), as SGLang's MiMo-V2 does.

    ## Fix safety
    Display-only: which path to keep is the author's call.
    """

    code = "E3L107"
    name = "capture-skipped-under-option"
    family = "capture"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        specs = ctx.pack.options
        analysis = _analysis(ctx)
        for model, _setter, writes in _setter_writes(ctx):
            written: dict[ClassRef, set[str]] = {}
            for write in writes:
                written.setdefault(write.holder, set()).add(write.name)
            reported: set[str] = set()
            for holder, names in written.items():
                reads = analysis.reads(holder)
                for loop in reads.loops:
                    if not loop.captures:
                        continue
                    for option, exempt, line in loop.option_skips:
                        spec = specs.get(option)
                        if spec is None or option in reported or set(exempt) & names:
                            continue
                        reported.add(option)
                        yield self._finding(ctx, model, holder, reads.where, loop.line, line, spec.name, spec.described_on(), spec.on_value())

    def _finding(self, ctx: CheckContext, model: ModelClass, holder: ClassRef, where: str, loop_line: int, test_line: int, option: str, described: str, value: str) -> Finding:
        spec = ctx.pack.capture
        assert spec is not None
        forward = _forward_line(ctx, holder)
        evidence = next(iter(_where(ctx, forward[0], test_line, f"the {option} branch of `{where}`")), None) if forward else None
        finding = ctx.finding(
            CaptureSkippedUnderOption, model, "forward",
            f"with {described}, `{where}` (`{holder.qualname}`) runs the layers outside its capture loop (line {loop_line}) "
            f"on the batches that take the branch at line {test_line}: it captures fewer aux hidden states than requested "
            "(or none), and the forward fails unpacking or packing them",
            [],
            effect=Effect(CRASH, STAGE_FORWARD, evidence, ((option, value),), f"`{holder.qualname}` skips its capture with {described}", self.code),
            data={"holder": str(holder), "option": option, "test_line": test_line, "loop_line": loop_line},
        )
        finding.related = [evidence] if evidence is not None else []
        return finding


CAPTURE_RULES: tuple[type[Rule], ...] = (
    CaptureStateNeverRead,
    AuxNotHandedOff,
    CaptureFlagNotInitialised,
    CaptureOffsetMismatch,
    CaptureSkippedUnderOption,
)
