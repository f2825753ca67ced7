"""What a setter or a ``forward`` does with the EAGLE-3 capture state, reduced to plain data.

The capture analysis (``eagle3lint.model.capture``) follows data, not names: what the setter writes
(``self.model.layers_to_capture = ...``, a per-layer marker set with ``setattr``, a call into an
inner model's setter), what the decoder's ``forward`` reads (``i in self.layers_to_capture``,
``getattr(layer, "_is_layer_to_capture", False)``), how its decoder loop numbers the layers, and
where the causal LM's ``forward`` sends the aux hidden states. These facts are collected while
the file is summarised (in the parse workers, cached with the summary), so the analysis reads no
source of its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property

from eagle3lint.source.ast_names import call_name, dotted_name

Path_ = tuple[str, ...]


@dataclass
class LoopFact:
    """One ``for`` loop over the decoder layers."""

    line: int
    # "enumerate" (of a slice or islice of the layers), "islice-enumerate" (global indices by
    # construction), "range" (``range(self.start_layer, ...)``), "other"
    shape: str
    index: str | None  # the loop's index variable
    sliced: bool  # the layers are cut to this rank's share (``start_layer``)
    start_given: bool  # ``enumerate(..., start=...)``
    capture_uses: int = 0  # the index in a capture test or collect call
    other_uses: int = 0  # any other use of the index in the body
    # "before" / "after" the layer call, for a capture that is its own statement in the body
    capture_position: str | None = None
    capture_offset: int = 0  # ``idx + 1`` in a collect call: 1
    # The body reads capture state (an index tested against it, a collect call, a layer marker).
    captures: bool = False
    # Launch options under which the loop is skipped or cut short: (option, the ``self``
    # attributes whose truth turns the option's branch off, the line of the option's test). An
    # ``if forward_batch.can_run_tbo:`` whose other branch holds the loop, or whose branch
    # rebinds a name the loop's range reads (the layers run another way on such batches).
    option_skips: list[tuple[str, tuple[str, ...], int]] = field(default_factory=list)


@dataclass
class CaptureFacts:
    # ``self.a.b = ...``: the attribute path written, and its line.
    writes: list[tuple[Path_, int]] = field(default_factory=list)
    # A per-layer marker set on the layers of ``self.<path>``: (path of the layer list, marker, line).
    marker_writes: list[tuple[Path_, str, int]] = field(default_factory=list)
    # ``self.a.<setter>(...)``: a call into another object's method: (path, method, line).
    delegations: list[tuple[Path_, str, int]] = field(default_factory=list)
    super_calls: list[str] = field(default_factory=list)  # ``super().<name>(...)``
    # ``self.<attr>`` read, for attributes named like the capture state.
    reads: list[str] = field(default_factory=list)
    # Per-layer markers read: ``getattr(layer, "<name>", ...)`` / ``layer.<name>``.
    marker_reads: list[str] = field(default_factory=list)
    # ``getattr(self, "<attr>", default)``: read, but never an AttributeError when unset.
    defaulted_reads: list[str] = field(default_factory=list)
    loops: list[LoopFact] = field(default_factory=list)
    # Names bound by unpacking aux hidden states (``hidden_states, aux = ...``), and the line.
    aux_unpacks: list[tuple[str, int]] = field(default_factory=list)
    # Calls of the logits hand-off: (line, whether an aux name or keyword is passed).
    logits_calls: list[tuple[int, bool]] = field(default_factory=list)
    # ``[v + k for v in <ids>]`` in a setter: each k (the explicit ids' offsets).
    offsets: set[int] = field(default_factory=set)
    returns_intermediate: bool = False  # returns ``IntermediateTensors(...)`` on some path
    calls: set[str] = field(default_factory=set)  # names called (``f(...)``, ``x.f(...)``)


def _assigned_names(body: list[ast.stmt]) -> set[str]:
    """The plain names a block assigns (``normal_end_layer = ...``, ``a, *b = ...``), at any
    depth; never the names inside an attribute or subscript target (``self.x = ...`` rebinds
    no ``self``, ``a[i] = ...`` no ``i``)."""
    names: set[str] = set()
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            pending: list[ast.expr] = list(node.targets) if isinstance(node, ast.Assign) else [node.target]
            while pending:
                target = pending.pop()
                if isinstance(target, ast.Name):
                    names.add(target.id)
                elif isinstance(target, (ast.Tuple, ast.List)):
                    pending.extend(target.elts)
                elif isinstance(target, ast.Starred):
                    pending.append(target.value)
    return names


def _loops_in(stmt: ast.stmt) -> list[ast.For | ast.AsyncFor]:
    """The ``for`` statements in ``stmt``, at any depth of ``if``/``with``/``try``/loop bodies
    (a decoder loop under ``if decode is None:`` is still the decoder loop), outside nested
    function and class scopes."""
    found: list[ast.For | ast.AsyncFor] = []
    pending: list[ast.stmt] = [stmt]
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(current, (ast.For, ast.AsyncFor)):
            found.append(current)
        for block in ("body", "orelse", "finalbody"):
            pending.extend(getattr(current, block, ()) or ())
        for handler in getattr(current, "handlers", ()) or ():
            pending.extend(handler.body)
        for case in getattr(current, "cases", ()) or ():
            pending.extend(case.body)
    return sorted(found, key=lambda loop: loop.lineno)


def _self_path(node: ast.AST, self_name: str) -> Path_ | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == self_name and parts:
        return tuple(reversed(parts))
    return None


def _layers_path(node: ast.AST, self_name: str) -> Path_ | None:
    """``self.model.layers[i]`` / ``self.model.layers`` -> ("model", "layers")."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return _self_path(node, self_name)


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


class _Extractor:
    def __init__(
        self,
        self_name: str,
        capture_words: tuple[str, ...],
        collect_calls: frozenset[str],
        logits_call: str,
        logits_keyword: str,
        setter_names: frozenset[str],
        option_tests: tuple[tuple[str, tuple[str, ...]], ...] = (),
    ) -> None:
        self.self_name = self_name
        self.option_tests = option_tests
        # Loop statement id -> the options that skip it (filled before the loops are read).
        self.skips: dict[int, list[tuple[str, tuple[str, ...], int]]] = {}
        self.words = capture_words
        self.collect_calls = collect_calls
        self.logits_call = logits_call
        self.logits_keyword = logits_keyword
        self.setter_names = setter_names
        self.facts = CaptureFacts()
        self.handoffs: list[ast.Call] = []
        # Loop variables bound to a layer of ``self.<path>`` (``for layer in self.model.layers``).
        self.layer_vars: dict[str, Path_] = {}

    def captures(self, name: str) -> bool:
        return any(word in name for word in self.words)

    # ---- the walk ----------------------------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> CaptureFacts:
        if self.option_tests:
            self._option_branches(body, [])
        for stmt in body:
            self.statement(stmt)
        # Whether a hand-off passes the aux states is known once every unpack has been seen.
        aux = {name for name, _ in self.facts.aux_unpacks}
        for node in self.handoffs:
            passed = (
                any(_name(a) in aux for a in node.args)
                or any(k.arg == self.logits_keyword or (k.value is not None and _name(k.value) in aux) for k in node.keywords)
                # ``*args`` / ``**kwargs`` may carry them: not provably dropped.
                or any(isinstance(a, ast.Starred) for a in node.args)
                or any(k.arg is None for k in node.keywords)
            )
            self.facts.logits_calls.append((node.lineno, passed))
        return self.facts

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # nested scopes have their own ``self``
        for loop in _loops_in(stmt):
            self._loop(loop)
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                self._assign(node)
            elif isinstance(node, ast.Call):
                self._call(node)
                if self.logits_call and dotted_name(node.func) == self.logits_call:
                    self.handoffs.append(node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                path = _self_path(node, self.self_name)
                if path is not None and len(path) == 1 and self.captures(path[0]):
                    self.facts.reads.append(path[0])
                owner = _name(node.value)
                if owner in self.layer_vars and self.captures(node.attr):
                    self.facts.marker_reads.append(node.attr)
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and call_name(node.value) == "IntermediateTensors":
                self.facts.returns_intermediate = True
            elif isinstance(node, ast.ListComp):
                self._offset(node)

    # ---- launch options ------------------------------------------------------------------------
    def _option_of(self, test: ast.expr) -> tuple[str, bool, tuple[str, ...]] | None:
        """The option an ``if`` test checks: (name, whether the body is the option's branch, the
        ``self`` attributes a ``... and not self.<attr>`` adds, which turn the branch off)."""
        text = ast.unparse(test)
        name = next((option for option, needles in self.option_tests if any(n in text for n in needles)), None)
        if name is None:
            return None
        positive = not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not))
        exempt: list[str] = []
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for value in test.values:
                if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
                    path = _self_path(value.operand, self.self_name)
                    if path is not None and len(path) == 1:
                        exempt.append(path[0])
        return name, positive, tuple(exempt)

    def _option_branches(self, body: list[ast.stmt], within: list[tuple[str, tuple[str, ...], int]]) -> None:
        """Mark the loops a launch option's branch skips: those in the other branch of its
        ``if``, and those after it whose range reads a name its branch rebinds."""
        rebound: list[tuple[str, tuple[str, ...], int, set[str]]] = []
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                reads = {n.id for n in ast.walk(stmt.iter) if isinstance(n, ast.Name)}
                skips = list(within) + [(o, e, line) for o, e, line, names in rebound if names & reads]
                if skips:
                    self.skips[id(stmt)] = skips
            if isinstance(stmt, ast.If):
                option = self._option_of(stmt.test)
                if option is not None:
                    name, positive, exempt = option
                    branch, other = (stmt.body, stmt.orelse) if positive else (stmt.orelse, stmt.body)
                    self._option_branches(branch, within)
                    self._option_branches(other, [*within, (name, exempt, stmt.lineno)])
                    names = _assigned_names(branch)
                    if names:
                        rebound.append((name, exempt, stmt.lineno, names))
                    continue
            for block in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, block, None)
                if inner:
                    self._option_branches(inner, within)
            for handler in getattr(stmt, "handlers", ()) or ():
                self._option_branches(handler.body, within)

    def _assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(node, ast.Assign):
                names = [e.id for e in target.elts if isinstance(e, ast.Name)]
                if len(names) == len(target.elts) == 2 and "aux" in names[1]:
                    self.facts.aux_unpacks.append((names[1], node.lineno))
                continue
            if not isinstance(target, ast.Attribute):
                continue
            path = _self_path(target, self.self_name)
            if path is not None:
                self.facts.writes.append((path, node.lineno))
                continue
            layers = _layers_path(target.value, self.self_name)
            owner = _name(target.value)
            if layers is not None and layers[-1:] and isinstance(target.value, ast.Subscript):
                self.facts.marker_writes.append((layers, target.attr, node.lineno))
            elif owner in self.layer_vars:
                self.facts.marker_writes.append((self.layer_vars[owner], target.attr, node.lineno))

    def _call(self, node: ast.Call) -> None:
        name = call_name(node)
        func = node.func
        if name:
            self.facts.calls.add(name)
        if name == "setattr" and isinstance(func, ast.Name) and len(node.args) >= 2:
            marker = _literal(node.args[1])
            layers = _layers_path(node.args[0], self.self_name)
            owner = _name(node.args[0])
            if marker is not None and layers is not None and isinstance(node.args[0], ast.Subscript):
                self.facts.marker_writes.append((layers, marker, node.lineno))
            elif marker is not None and owner in self.layer_vars:
                self.facts.marker_writes.append((self.layer_vars[owner], marker, node.lineno))
            return
        if name == "getattr" and isinstance(func, ast.Name) and len(node.args) >= 2:
            marker = _literal(node.args[1])
            if marker is None or not self.captures(marker):
                return
            if _name(node.args[0]) == self.self_name:
                # The object's own state, not a layer's marker.
                has_default = len(node.args) >= 3 or any(k.arg == "default" for k in node.keywords)
                (self.facts.defaulted_reads if has_default else self.facts.reads).append(marker)
            else:
                self.facts.marker_reads.append(marker)
            return
        if isinstance(func, ast.Attribute):
            base = func.value
            if isinstance(base, ast.Call) and call_name(base) == "super":
                self.facts.super_calls.append(func.attr)
                return
            path = _self_path(base, self.self_name)
            if path is not None and func.attr in self.setter_names:
                self.facts.delegations.append((path, func.attr, node.lineno))

    def _offset(self, node: ast.ListComp) -> None:
        """``[val + 1 for val in layer_ids]`` -> 1."""
        if len(node.generators) != 1:
            return
        target = _name(node.generators[0].target)
        element = node.elt
        if target is None:
            return
        if isinstance(element, ast.Name) and element.id == target:
            self.facts.offsets.add(0)
        elif (
            isinstance(element, ast.BinOp)
            and isinstance(element.op, (ast.Add, ast.Sub))
            and _name(element.left) == target
            and isinstance(element.right, ast.Constant)
            and isinstance(element.right.value, int)
        ):
            value = element.right.value
            self.facts.offsets.add(value if isinstance(element.op, ast.Add) else -value)

    # ---- the decoder loop --------------------------------------------------------------------
    def _loop(self, loop: ast.For | ast.AsyncFor) -> None:
        shape, index, layers, sliced, start_given = self._loop_shape(loop)
        if layers is None:
            return
        if isinstance(loop.target, ast.Name):
            self.layer_vars[loop.target.id] = layers
        elif isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 and isinstance(loop.target.elts[1], ast.Name):
            self.layer_vars[loop.target.elts[1].id] = layers
        fact = LoopFact(loop.lineno, shape, index, sliced, start_given)
        if index is not None:
            self._index_uses(loop, fact)
        self._position(loop, fact)
        fact.captures = fact.capture_uses > 0 or self._reads_markers(loop)
        fact.option_skips = self.skips.get(id(loop), [])
        self.facts.loops.append(fact)

    def _reads_markers(self, loop: ast.For | ast.AsyncFor) -> bool:
        """A per-layer capture marker read in the body (``getattr(layer, "_is_layer_to_capture")``)
        or a collect call: the loop captures, whatever its index does."""
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Call) and call_name(node) in self.collect_calls:
                return True
            if isinstance(node, ast.Call) and call_name(node) == "getattr" and len(node.args) >= 2:
                marker = _literal(node.args[1])
                if marker is not None and self.captures(marker) and _name(node.args[0]) != self.self_name:
                    return True
        return False

    def _loop_shape(self, loop: ast.For | ast.AsyncFor) -> tuple[str, str | None, Path_ | None, bool, bool]:
        it = loop.iter
        target = loop.target
        index = target.elts[0].id if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name) else None
        if isinstance(it, ast.Call) and call_name(it) == "enumerate" and it.args:
            inner = it.args[0]
            start_given = len(it.args) > 1 or any(k.arg == "start" for k in it.keywords)
            layers, sliced = self._layers_of(inner)
            return "enumerate", index, layers, sliced, start_given
        if isinstance(it, ast.Call) and call_name(it) == "islice" and it.args:
            first = it.args[0]
            if isinstance(first, ast.Call) and call_name(first) == "enumerate" and first.args:
                layers, _ = self._layers_of(first.args[0])
                return "islice-enumerate", index, layers, True, True
            layers, _ = self._layers_of(it)
            return "other", None, layers, True, False
        if isinstance(it, ast.Call) and call_name(it) == "range":
            index = target.id if isinstance(target, ast.Name) else None
            text = ast.unparse(it)
            layers = ("layers",) if "start_layer" in text or "layers" in text or "num_hidden_layers" in text else None
            return "range", index, layers, "start_layer" in text, "start_layer" in text
        layers, sliced = self._layers_of(it)
        return "other", None, layers, sliced, False

    def _layers_of(self, node: ast.AST) -> tuple[Path_ | None, bool]:
        """The ``self.<...>layers`` a loop iterates, and whether it is cut to ``start_layer``."""
        if isinstance(node, ast.Call) and call_name(node) == "islice" and node.args:
            path, _ = self._layers_of(node.args[0])
            return path, "start_layer" in ast.unparse(node)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            path = _self_path(node.value, self.self_name)
            return path, "start_layer" in ast.unparse(node.slice)
        path = _self_path(node, self.self_name)
        if path is not None and path[-1].endswith("layers"):
            return path, False
        return None, False

    def _index_uses(self, loop: ast.For | ast.AsyncFor, fact: LoopFact) -> None:
        index = fact.index
        captured: set[int] = set()
        # ``self.start_layer + idx``: made global by hand, neither a local capture nor another use.
        globalized = {
            id(n)
            for stmt in loop.body
            for node in ast.walk(stmt)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and "start_layer" in ast.unparse(node)
            for n in (node.left, node.right)
            if _name(n) == index
        }
        for node in (n for stmt in loop.body for n in ast.walk(stmt)):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
                right = _self_path(node.comparators[0], self.self_name)
                if _name(node.left) == index and right is not None and self.captures(right[-1]):
                    captured.add(id(node.left))
            elif isinstance(node, ast.Call) and call_name(node) in self.collect_calls:
                for arg in node.args:
                    if _name(arg) == index:
                        captured.add(id(arg))
                    elif isinstance(arg, ast.BinOp) and _name(arg.left) == index and isinstance(arg.right, ast.Constant):
                        captured.add(id(arg.left))
                        if isinstance(arg.right.value, int) and isinstance(arg.op, ast.Add):
                            fact.capture_offset = arg.right.value
        uses = [
            n for stmt in loop.body for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and n.id == index and isinstance(n.ctx, ast.Load) and id(n) not in globalized
        ]
        fact.capture_uses = sum(1 for n in uses if id(n) in captured)
        fact.other_uses = len(uses) - fact.capture_uses

    def _position(self, loop: ast.For | ast.AsyncFor, fact: LoopFact) -> None:
        """Whether the capture runs before or after the layer call: both must be statements of
        the loop body of their own (a capture passed into the layer call says nothing)."""
        layer_at = capture_at = None
        for n, stmt in enumerate(loop.body):
            text_calls = [c for c in ast.walk(stmt) if isinstance(c, ast.Call)]
            is_layer = any(_layers_path(c.func, self.self_name) is not None or _name(c.func) in self.layer_vars for c in text_calls)
            is_capture = isinstance(stmt, ast.If) and any(
                isinstance(c, ast.Compare) and any(isinstance(op, ast.In) for op in c.ops) for c in ast.walk(stmt.test)
            ) and not is_layer
            is_capture = is_capture or (any(call_name(c) in self.collect_calls for c in text_calls) and not is_layer)
            if is_layer and layer_at is None:
                layer_at = n
            elif is_capture and capture_at is None:
                capture_at = n
        if layer_at is not None and capture_at is not None:
            fact.capture_position = "before" if capture_at < layer_at else "after"


def capture_facts(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    self_name: str,
    capture_words: tuple[str, ...],
    collect_calls: frozenset[str],
    logits_call: str,
    logits_keyword: str,
    setter_names: frozenset[str],
    option_tests: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> CaptureFacts:
    return _Extractor(self_name, capture_words, collect_calls, logits_call, logits_keyword, setter_names, option_tests).run(node.body)


@dataclass(frozen=True)
class CaptureSpec:
    """What to collect, from the rule pack's ``[capture]`` table."""

    functions: frozenset[str]  # the methods whose capture facts are collected (forward, setters)
    setters: frozenset[str]  # methods whose call on an inner object is a delegation of the setter
    eagle3_setter: str = ""  # the one the engine calls for EAGLE-3
    flag: str = ""  # the target's own "return the aux hidden states" flag
    initial: tuple[tuple[str, str], ...] = ()  # attribute -> the value ``__init__`` should give it
    ids: str = "output"  # what a requested layer id names: a layer's "output" or its "input"
    # Whether the core reports a decoder whose loop captures nothing; False where an engine
    # rule of its own already does (vLLM's forward-never-collects).
    report_uncollected: bool = True
    # What the engine does with a target whose setter captures nothing (a stub setter): "silent"
    # where the drafter then reads the final hidden state, "crash" where the runner unpacks the
    # aux states it expects.
    uncaptured: str = "silent"
    words: tuple[str, ...] = ("capture", "aux_hidden_state")  # what names the capture state
    collect_calls: frozenset[str] = frozenset()  # helpers a decoder collects with
    collect_reads: frozenset[str] = frozenset()  # the capture state those helpers read
    logits_call: str = ""  # the hand-off: ``self.logits_processor``
    logits_keyword: str = ""
    # Launch options a forward tests (option name, the text of its test), from ``[[option]]``.
    option_tests: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @cached_property
    def needles(self) -> tuple[str, ...]:
        """Text every fact is made of: capture words, the layer lists loops walk, aux unpacks,
        the hand-off, collectors, setters (their own ``def`` line), inter-rank tensors and
        ``super()`` calls. A function whose text holds none of them has no facts."""
        logits = self.logits_call.rsplit(".", 1)[-1]
        fixed = ("layers", "aux", "IntermediateTensors", "super(")
        return tuple(dict.fromkeys([*self.words, *fixed, *self.setters, *self.collect_calls, *([logits] if logits else [])]))

    def may_matter(self, text: str) -> bool:
        return any(needle in text for needle in self.needles)

    def facts(self, node: ast.FunctionDef | ast.AsyncFunctionDef, self_name: str) -> CaptureFacts:
        return capture_facts(node, self_name, self.words, self.collect_calls, self.logits_call, self.logits_keyword, self.setters, self.option_tests)
