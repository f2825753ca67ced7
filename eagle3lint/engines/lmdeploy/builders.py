"""LMDeploy's config builders, and what each does for the target of an EAGLE-3 launch.

``ModelConfig.from_hf_config`` hands the checkpoint's HF config to the first registered builder
whose ``condition(hf_config)`` holds (``model_type in [...]``, ``architectures[0] in [...]``), else
to ``DefaultModelConfigBuilder``, with ``spec_method='eagle3'`` and ``is_draft_model=False``. What
the builder's ``build`` then does decides the launch:

* it refuses the method: ``assert spec_method == 'deepseek_mtp'`` (an ``AssertionError``: a crash)
  or ``raise ValueError('Unsupported speculative method ...')`` (the engine's own refusal);
* it opts the target into speculative decoding (``cfg.model_paradigm = 'ar_spec'``), or not;
* it names the layers to capture (``hf_config.aux_hidden_state_layers = (2, n // 2, n - 3)``).

Builders delegate (``super().build(...)``, ``DefaultModelConfigBuilder.build(...)``,
``KimiK2ModelConfigBuilder.build(text_config, ...)``); the arguments are followed through the call,
``spec_method=None`` and ``**kwargs`` included. Everything is read with ``ast`` from the release's
``configurations/`` folder; registration order is the order the engine imports the modules in
(alphabetical, a module's own imports of its siblings first).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from eagle3lint.engines.lmdeploy.evaluate import UNKNOWN, exception_name, literal, message_of, truth

SET, MAYBE, NEVER = "set", "maybe", "never"
# What a model type or an architecture looks like (docstrings and messages are not names).
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_MAX_DEPTH = 6


@dataclass(frozen=True)
class Place:
    """A line of the engine (path relative to the package root)."""

    path: str
    line: int


@dataclass(frozen=True)
class Condition:
    kind: str  # "architectures" | "types" | "always" | "unknown"
    names: tuple[str, ...] = ()
    # A plain membership or equality test: it holds exactly for these names.
    exact: bool = True
    text: str = ""


@dataclass(frozen=True)
class Refusal:
    kind: str  # "assert" | "raise"
    place: Place
    message: str
    exception: str = "AssertionError"
    builder: str = ""  # the builder whose body holds it


@dataclass(frozen=True)
class BuilderFacts:
    name: str
    place: Place
    condition: Condition
    refusal: Refusal | None = None
    paradigm: str = NEVER  # SET | MAYBE | NEVER
    paradigm_place: Place | None = None
    layers: str = NEVER
    layers_place: Place | None = None
    # The config the layers are named on, from the checkpoint's config: () itself,
    # ("text_config",) its text sub-config.
    layers_path: tuple[str, ...] = ()
    # What the reading could not settle ("raises when `cfg.num_layers < 5`").
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        bits = []
        if self.refusal is not None:
            how = "asserts" if self.refusal.kind == "assert" else f"raises {self.refusal.exception}"
            bits.append(f"{how} ({self.refusal.place.path}:{self.refusal.place.line}: {self.refusal.message})")
        else:
            bits.append({SET: "opts in", MAYBE: "may opt in", NEVER: "never opts in"}[self.paradigm])
            path = ".".join((*self.layers_path, "aux_hidden_state_layers")) if self.layers != NEVER else ""
            bits.append({SET: f"sets {path}", MAYBE: f"may set {path}", NEVER: "names no capture layers"}[self.layers])
        return ", ".join(bits)


@dataclass
class _Class:
    name: str
    module: str  # file name without .py
    path: str  # relative to the package root
    node: ast.ClassDef
    bases: tuple[str, ...]


@dataclass
class _Facts:
    refusal: Refusal | None = None
    paradigm: str = NEVER
    paradigm_place: Place | None = None
    layers: str = NEVER
    layers_place: Place | None = None
    layers_path: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _upgrade(current: str, definite: bool) -> str:
    if definite:
        return SET
    return current if current == SET else MAYBE


class BuilderReader:
    """The builders of one ``configurations/`` folder (files: module name -> (rel path, tree))."""

    def __init__(self, files: dict[str, tuple[str, ast.Module]], base: str, default: str, method: str, paradigm: tuple[str, str], layers_attribute: str) -> None:
        self.files = files
        self.base = base
        self.default = default
        self.method = method
        self.paradigm_attribute, self.paradigm_value = paradigm
        self.layers_attribute = layers_attribute
        self.classes: dict[str, _Class] = {}
        self.functions: dict[tuple[str, str], ast.FunctionDef] = {}
        for module, (path, tree) in sorted(files.items()):
            for stmt in tree.body:
                if isinstance(stmt, ast.ClassDef):
                    bases = tuple(ast.unparse(b).rsplit(".", 1)[-1] for b in stmt.bases)
                    self.classes.setdefault(stmt.name, _Class(stmt.name, module, path, stmt, bases))
                elif isinstance(stmt, ast.FunctionDef):
                    self.functions[(module, stmt.name)] = stmt

    # ---- which builders, in which order -----------------------------------------------------
    def is_builder(self, name: str, depth: int = 0) -> bool:
        cls = self.classes.get(name)
        if cls is None or depth > 10:
            return False
        return any(b == self.base or self.is_builder(b, depth + 1) for b in cls.bases)

    def order(self) -> list[str]:
        """The builders in the order the engine registers them (``__init_subclass__`` at class
        creation; the package imports its modules alphabetically, each module's sibling
        imports first)."""
        visited: set[str] = set()
        ordered: list[str] = []

        def visit(module: str) -> None:
            if module in visited or module not in self.files:
                return
            visited.add(module)
            _, tree = self.files[module]
            for stmt in tree.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.level == 1 and stmt.module:
                    visit(stmt.module.split(".")[0])
                elif isinstance(stmt, ast.ClassDef) and self.is_builder(stmt.name) and stmt.name not in ordered:
                    ordered.append(stmt.name)

        for module in sorted(self.files):
            visit(module)
        return ordered

    # ---- conditions -------------------------------------------------------------------------
    def _method(self, name: str, method: str, depth: int = 0) -> tuple[_Class, ast.FunctionDef] | None:
        cls = self.classes.get(name)
        if cls is None or depth > 10:
            return None
        for stmt in cls.node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == method:
                return cls, stmt  # type: ignore[return-value]
        for base in cls.bases:
            found = self._method(base, method, depth + 1)
            if found is not None:
                return found
        return None

    def condition(self, name: str) -> Condition:
        found = self._method(name, "condition")
        if found is None:
            return Condition("unknown", exact=False, text="no condition")
        cls, fn = found
        if cls.name == self.base:
            return Condition("unknown", exact=False, text="the base's condition")
        returned = next((n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None), None)
        if returned is None:
            return Condition("unknown", exact=False)
        aliases = _aliases(fn)
        plain = _plain_condition(returned, aliases)
        if plain is not None:
            return plain
        # Anything else: every name it (or a helper of its module it calls) mentions may match.
        nodes: list[ast.AST] = [returned]
        for call in (n for n in ast.walk(returned) if isinstance(n, ast.Call)):
            helper = self.functions.get((cls.module, call.func.id)) if isinstance(call.func, ast.Name) else None
            if helper is not None:
                nodes.append(helper)
        names = sorted({n.value for node in nodes for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAME.fullmatch(n.value)})
        return Condition("unknown", tuple(names), exact=False, text=ast.unparse(returned))

    # ---- what build does for the target of an EAGLE-3 launch ---------------------------------
    def facts(self, name: str, arguments: dict[str, Any], condition: Condition | None = None) -> BuilderFacts:
        cls = self.classes[name]
        facts = _Facts()
        self._call(name, (("config", ()), ("value", UNKNOWN)), dict(arguments), {}, facts, True, 0, skip_to=None)
        return BuilderFacts(
            name=name,
            place=Place(cls.path, cls.node.lineno),
            condition=condition or self.condition(name),
            refusal=facts.refusal,
            paradigm=facts.paradigm,
            paradigm_place=facts.paradigm_place,
            layers=facts.layers,
            layers_place=facts.layers_place,
            layers_path=facts.layers_path,
            notes=tuple(facts.notes),
        )

    def _call(
        self,
        name: str,
        positional: tuple[tuple[str, Any], ...],
        keywords: dict[str, Any],
        configs: dict[str, tuple[str, ...]],
        facts: _Facts,
        definite: bool,
        depth: int,
        skip_to: str | None,
    ) -> None:
        """Run ``<name>.build`` (or, with ``skip_to``, the next ``build`` after that class along
        ``name``'s bases: ``super()``) with these arguments. ``positional`` holds ("config", path)
        or ("value", literal) pairs; ``keywords`` literals (a config keyword is not followed)."""
        if depth > _MAX_DEPTH:
            facts.note(f"builders delegate deeper than {_MAX_DEPTH} calls")
            return
        found = self._super_method(name, skip_to) if skip_to else self._method(name, self.method)
        if found is None:
            return
        cls, fn = found
        if cls.name == self.base:
            return  # the dispatcher: it only picks a builder
        env: dict[str, Any] = {}
        paths: dict[str, tuple[str, ...]] = {}
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]  # after cls
        defaults = [None] * (len(params) - len(fn.args.defaults)) + list(fn.args.defaults)
        remaining = dict(keywords)
        for i, param in enumerate(params):
            if i < len(positional):
                kind, value = positional[i]
                if kind == "config":
                    paths[param] = value
                else:
                    env[param] = value
            elif param in remaining:
                env[param] = remaining.pop(param)
            else:
                env[param] = literal(defaults[i], {}) if defaults[i] is not None else UNKNOWN
        for kw, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
            env[kw.arg] = remaining.pop(kw.arg) if kw.arg in remaining else literal(default, {}) if default is not None else UNKNOWN
        kwargs_name = fn.args.kwarg.arg if fn.args.kwarg else None
        state = _Frame(cls, env, paths, remaining if kwargs_name else {}, kwargs_name)
        self._block(fn.body, state, facts, definite, depth)

    def _super_method(self, name: str, after: str) -> tuple[_Class, ast.FunctionDef] | None:
        """The ``build`` ``super()`` in ``after``'s method reaches, along ``name``'s bases."""
        mro = self._mro(name)
        if after not in mro:
            return None
        for current in mro[mro.index(after) + 1 :]:
            cls = self.classes.get(current)
            if cls is None:
                continue
            for stmt in cls.node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == self.method:
                    return cls, stmt
        return None

    def _mro(self, name: str, depth: int = 0) -> list[str]:
        cls = self.classes.get(name)
        if cls is None or depth > 10:
            return [name]
        out = [name]
        for base in cls.bases:
            for item in self._mro(base, depth + 1):
                if item not in out:
                    out.append(item)
        return out

    # ---- statements ---------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt], frame: _Frame, facts: _Facts, definite: bool, depth: int) -> str:
        """How the block ends the call: "stop" (a return is surely reached once the block runs),
        "raise" (a raise is), "maybe" (it may return), or "go". ``definite``: the block surely
        runs. A branch that may raise on a value the reading cannot know is an input check
        (``if cfg.num_layers < 5: raise``): the checkpoints it is for pass it, so what follows
        still surely runs."""
        maybe = False
        for stmt in body:
            outcome = self._statement(stmt, frame, facts, definite and not maybe, depth)
            if outcome in ("stop", "raise"):
                return "maybe" if maybe else outcome
            maybe = maybe or outcome == "maybe"
        return "maybe" if maybe else "go"

    def _statement(self, stmt: ast.stmt, frame: _Frame, facts: _Facts, definite: bool, depth: int) -> str:
        if isinstance(stmt, ast.If):
            test = truth(stmt.test, frame.env)
            if test is True:
                return self._block(stmt.body, frame, facts, definite, depth)
            if test is False:
                return self._block(stmt.orelse, frame, facts, definite, depth)
            body = self._block(stmt.body, frame, facts, False, depth)
            other = self._block(stmt.orelse, frame, facts, False, depth)
            if body == other and body in ("stop", "raise"):
                return body
            return "maybe" if "stop" in (body, other) or "maybe" in (body, other) else "go"
        if isinstance(stmt, ast.Assert):
            test = truth(stmt.test, frame.env)
            if test is False:
                if definite and facts.refusal is None:
                    message = message_of(stmt.msg) if stmt.msg is not None else f"assert {ast.unparse(stmt.test)}"
                    facts.refusal = Refusal("assert", Place(frame.cls.path, stmt.lineno), message, "AssertionError", frame.cls.name)
                elif not definite:
                    facts.note(f"may fail `assert {ast.unparse(stmt.test)}` ({frame.cls.path}:{stmt.lineno})")
                return "raise"
            return "go"
        if isinstance(stmt, ast.Raise):
            if definite and facts.refusal is None:
                facts.refusal = Refusal("raise", Place(frame.cls.path, stmt.lineno), message_of(stmt.exc), exception_name(stmt.exc) or "an exception", frame.cls.name)
            elif not definite:
                facts.note(f"may raise {exception_name(stmt.exc) or 'an exception'} ({frame.cls.path}:{stmt.lineno}: {message_of(stmt.exc)})")
            return "raise"
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self._calls(stmt.value, frame, facts, definite, depth)
            return "stop"
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            value = stmt.value
            if value is not None:
                self._calls(value, frame, facts, definite, depth)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                self._assign(target, value, stmt.lineno, frame, facts, definite)
            return "go"
        if isinstance(stmt, ast.Expr):
            self._calls(stmt.value, frame, facts, definite, depth)
            return "go"
        if isinstance(stmt, (ast.For, ast.While, ast.AsyncFor)):
            body = self._block(stmt.body, frame, facts, False, depth)
            other = self._block(stmt.orelse, frame, facts, False, depth)
            return "maybe" if "stop" in (body, other) or "maybe" in (body, other) else "go"
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            return self._block(stmt.body, frame, facts, definite, depth)
        if isinstance(stmt, ast.Try):
            outcome = self._block(stmt.body, frame, facts, definite, depth)
            for handler in stmt.handlers:
                self._block(handler.body, frame, facts, False, depth)
            self._block(stmt.orelse, frame, facts, False, depth)
            self._block(stmt.finalbody, frame, facts, definite, depth)
            return "maybe" if outcome in ("stop", "raise") and stmt.handlers else outcome
        return "go"

    def _assign(self, target: ast.expr, value: ast.expr | None, line: int, frame: _Frame, facts: _Facts, definite: bool) -> None:
        place = Place(frame.cls.path, line)
        if isinstance(target, ast.Name):
            frame.env[target.id] = literal(value, frame.env)
            config = frame.config_path(value)
            if config is not None:
                frame.paths[target.id] = config
            else:
                frame.paths.pop(target.id, None)
            if target.id == self.paradigm_attribute and frame.env[target.id] == self.paradigm_value:
                facts.paradigm, facts.paradigm_place = _upgrade(facts.paradigm, definite), facts.paradigm_place or place
            return
        if isinstance(target, ast.Attribute):
            if target.attr == self.paradigm_attribute and literal(value, frame.env) == self.paradigm_value:
                facts.paradigm = _upgrade(facts.paradigm, definite)
                if facts.paradigm_place is None or definite:
                    facts.paradigm_place = place
            elif target.attr == self.layers_attribute:
                path = frame.config_path(target.value)
                facts.layers = _upgrade(facts.layers, definite)
                if facts.layers_place is None or definite:
                    facts.layers_place, facts.layers_path = place, path if path is not None else ()
                if path is None:
                    facts.note(f"names the capture layers on `{ast.unparse(target.value)}`, which is not a config eagle3lint can follow ({place.path}:{line})")

    def _calls(self, node: ast.expr, frame: _Frame, facts: _Facts, definite: bool, depth: int) -> None:
        """Delegations to another builder's ``build`` inside an expression."""
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == self.method):
                continue
            owner = func.value
            positional = tuple(frame.argument(a) for a in call.args if not isinstance(a, ast.Starred))
            keywords: dict[str, Any] = {}
            for kw in call.keywords:
                if kw.arg is None:
                    if isinstance(kw.value, ast.Name) and kw.value.id == frame.kwargs_name:
                        keywords.update(frame.kwargs)
                    continue
                keywords[kw.arg] = literal(kw.value, frame.env)
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                self._call(frame.cls.name, positional, keywords, {}, facts, definite, depth + 1, skip_to=frame.cls.name)
            elif isinstance(owner, ast.Name) and owner.id in self.classes and self.is_builder(owner.id):
                self._call(owner.id, positional, keywords, {}, facts, definite, depth + 1, skip_to=None)


@dataclass
class _Frame:
    cls: _Class
    env: dict[str, Any]
    paths: dict[str, tuple[str, ...]]  # names bound to the checkpoint's config or a sub-config
    kwargs: dict[str, Any]
    kwargs_name: str | None

    def config_path(self, node: ast.expr | None) -> tuple[str, ...] | None:
        """``hf_config`` -> its path; ``hf_config.text_config`` -> path + ("text_config",)."""
        if isinstance(node, ast.Name):
            return self.paths.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.config_path(node.value)
            return (*base, node.attr) if base is not None and node.attr.endswith("config") else None
        return None

    def argument(self, node: ast.expr) -> tuple[str, Any]:
        path = self.config_path(node)
        return ("config", path) if path is not None else ("value", literal(node, self.env))


def _aliases(fn: ast.FunctionDef) -> dict[str, str]:
    """``model_arch = hf_config.architectures[0]`` -> {"model_arch": "architectures[0]"}."""
    out: dict[str, str] = {}
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            kind = _subject(stmt.value, {})
            if kind is not None:
                out[stmt.targets[0].id] = kind
    return out


def _subject(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """"types" for ``hf_config.model_type`` / ``getattr(hf_config, 'model_type', ...)``,
    "architectures" for ``hf_config.architectures[0]``; None for anything else."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.IfExp):
        # ``hf_config.architectures[0] if hf_config.architectures else None``
        return _subject(node.body, aliases) if isinstance(node.orelse, ast.Constant) and node.orelse.value is None else None
    text = ast.unparse(node)
    if re.fullmatch(r"\w+\.model_type", text) or re.fullmatch(r"getattr\(\w+, ['\"]model_type['\"](, .*)?\)", text):
        return "types"
    if re.fullmatch(r"\w+\.architectures\[0\]", text):
        return "architectures"
    return None


def _plain_condition(node: ast.expr, aliases: dict[str, str]) -> Condition | None:
    if isinstance(node, ast.Constant) and node.value is True:
        return Condition("always", text="True")
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    subject = _subject(node.left, aliases)
    if subject is None:
        return None
    value = literal(node.comparators[0], {})
    op = node.ops[0]
    if isinstance(op, ast.Eq) and isinstance(value, str):
        names: tuple[str, ...] = (value,)
    elif isinstance(op, ast.In) and isinstance(value, (tuple, frozenset)) and all(isinstance(v, str) for v in value):
        names = tuple(sorted(value))
    else:
        return None
    return Condition(subject, names, exact=True, text=ast.unparse(node))


def read_builders(reader: BuilderReader, arguments: dict[str, Any]) -> tuple[list[BuilderFacts], list[str]]:
    """Every builder in registration order, the default last, with its EAGLE-3 facts; and the
    files of builders nested too deeply to read (their facts are unknown)."""
    unreadable: list[str] = []

    def facts(name: str, condition: Condition | None = None) -> BuilderFacts:
        try:
            return reader.facts(name, arguments, condition)
        except RecursionError:
            cls = reader.classes[name]
            unreadable.append(cls.path)
            return BuilderFacts(name, Place(cls.path, cls.node.lineno), Condition("unknown", exact=False, text="unreadable"), paradigm=MAYBE, layers=MAYBE, notes=("nested too deeply to read",))

    out = [facts(name) for name in reader.order() if name != reader.default]
    if reader.default in reader.classes:
        out.append(facts(reader.default, Condition("always", text="the default")))
    return out, unreadable


def run_function(reader: BuilderReader, cls: str, fn: ast.FunctionDef, path: str, arguments: dict[str, Any]) -> BuilderFacts:
    """Facts of an engine function outside the builders (``ModelConfig.from_hf_config``) run
    with ``arguments``: what it does to every config after the builder."""
    owner = _Class(cls, "", path, ast.ClassDef(name=cls, bases=[], keywords=[], body=[fn], decorator_list=[]), ())
    facts = _Facts()
    env: dict[str, Any] = {}
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)][1:]
    for param in params:
        env[param] = arguments.get(param, UNKNOWN)
    frame = _Frame(owner, env, {}, {}, None)
    reader._block(fn.body, frame, facts, True, 0)
    return BuilderFacts(cls, Place(path, fn.lineno), Condition("always"), facts.refusal, facts.paradigm, facts.paradigm_place, facts.layers, facts.layers_place, facts.layers_path, tuple(facts.notes))
