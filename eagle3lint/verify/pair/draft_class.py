"""What the release's EAGLE-3 draft class accepts, read from its code: its ``__init__`` run on
the drafter's config (the engine classes it builds followed, up to a depth), which gives the
guards it reaches (``if config.num_hidden_layers != 1: raise ValueError(...)``), the width of its
fusion layer (``fc``: how many aux states it takes), and the config keys it reads; the width
guard its forward applies before the fusion layer; and the tensor-parallel checks of the
attention it builds.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.source.ast_strings import message_text
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.verify.pair.evaluate import (
    OPAQUE,
    Budget,
    ConfigView,
    Evaluator,
    Exhausted,
    Unresolved,
    end_body,
)
from eagle3lint.verify.pair.facts import PairFacts
from eagle3lint.verify.pair.setter import bind
from eagle3lint.verify.pair.source import Method, ReleaseCode

_MAX_DEPTH = 3


@dataclass(frozen=True)
class Guard:
    message: str
    path: str
    line: int
    certain: bool  # reached on every path the evaluation could decide
    kind: str  # "raise" | "assert" | "error" (an operation Python refuses: ``4096 // 0``)


@dataclass
class DraftInit:
    guards: list[Guard] = field(default_factory=list)
    fc_width: int | None = None
    fc_where: tuple[str, int] | None = None
    keys_read: set[str] = field(default_factory=set)
    # Keys the construction reads without a default that config.json lacks: key -> (file, line).
    missing: dict[str, tuple[str, int]] = field(default_factory=dict)
    stopped: str = ""  # why the run stopped early, if it did
    # Where the evaluation's budget ran out (reason, file, line): what it did not reach is unknown.
    exhausted: tuple[str, str, int] | None = None


@dataclass
class _Instance:
    cls: ClassRef
    attrs: dict[str, Any] = field(default_factory=dict)
    # The arguments it was built with (a fusion layer's width is its first).
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Param:
    """A name the draft class reaches that is not its config (an argument, a module): a path
    of attributes, which may lead to the config (``vllm_config.speculative_config...``)."""

    path: str


class _InitRun(Evaluator):
    def __init__(self, shared: _Shared, method: Method, instance: _Instance, env: dict[str, Any], depth: int) -> None:
        super().__init__(env, lenient=True, budget=shared.budget)  # one budget for the whole construction
        self.source = method.path
        self.shared = shared
        self.method = method
        self.instance = instance
        self.depth = depth

    def name(self, name: str, node: ast.AST) -> Any:
        if name == "self":
            return self.instance
        return _Param(name)  # a module or a global: ``torch.nn.Linear`` is built by name

    def attribute_of(self, base: Any, name: str, node: ast.AST) -> Any:
        if isinstance(base, _Instance):
            if name in base.attrs:
                return base.attrs[name]
            raise Unresolved(f"`self.{name}`", getattr(node, "lineno", 0))
        if isinstance(base, _Param):
            path = f"{base.path}.{name}"
            return self.shared.config if path in self.shared.facts.draft_config_paths else _Param(path)
        return super().attribute_of(base, name, node)

    def set_attribute(self, base: Any, name: str, value: Any, node: ast.AST) -> None:
        if not isinstance(base, _Instance):
            return
        base.attrs[name] = value
        if name == self.shared.facts.fc_attribute and isinstance(value, (_Built, _Instance)) and self.shared.result.fc_width is None:
            width = value.args[0] if value.args else next((value.kwargs[k] for k in ("input_size", "in_features") if k in value.kwargs), None)
            if isinstance(width, int) and not isinstance(width, bool):
                self.shared.result.fc_width = width
                self.shared.result.fc_where = (self.method.path, getattr(node, "lineno", 0))

    def reached_raise(self, node: ast.Raise) -> None:
        message = (message_text(node.exc) or ast.unparse(node.exc)) if node.exc else ""
        self.shared.result.guards.append(Guard(message, self.method.path, node.lineno, self.uncertain == 0, "raise"))
        if self.uncertain:
            end_body()
        raise _Stop

    def failed_assert(self, node: ast.Assert) -> None:
        self.shared.result.guards.append(Guard(ast.unparse(node.test), self.method.path, node.lineno, self.uncertain == 0, "assert"))
        if self.uncertain:
            end_body()
        raise _Stop

    def failed_operation(self, error: str, node: ast.AST) -> None:
        # The constructor raises here for this config: the build fails (as an assertion does).
        self.shared.result.guards.append(Guard(error, self.method.path, getattr(node, "lineno", 0), self.uncertain == 0, "error"))
        if self.uncertain:
            end_body()
        raise _Stop

    def call_function(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        return self._construct(name, args, kwargs, node)

    def call_method(self, base: Any, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if isinstance(base, _Param):
            return self._construct(f"{base.path}.{name}", args, kwargs, node)
        return _Built(name, args, kwargs)

    def call_super(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if name != "__init__":
            return OPAQUE
        method = self.shared.code.next_method(self.instance.cls, self.method.owner, "__init__")
        if method is not None:
            # The same object's construction, one base further: no deeper than the caller (the
            # attention a base's __init__ builds, and its checks, stay within reach).
            self._enter(method, self.instance, args, kwargs, node, self.depth)
        return None

    def _construct(self, dotted: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        """An engine class built in ``__init__`` runs its own ``__init__``; anything else is an
        object whose construction arguments are kept (``nn.Linear(width, hidden)``)."""
        index = self.shared.code.index
        if index is not None and self.depth < _MAX_DEPTH:
            target = index.resolve(self.method.owner.module, dotted)
            if isinstance(target, ClassRef):
                method = self.shared.code.method(target, "__init__")
                instance = _Instance(target, args=args, kwargs=kwargs)
                if method is not None:
                    self._enter(method, instance, args, kwargs, node)
                return instance
        return _Built(dotted.rsplit(".", 1)[-1], args, kwargs)

    def _enter(self, method: Method, instance: _Instance, args: list[Any], kwargs: dict[str, Any], node: ast.AST, depth: int | None = None) -> None:
        depth = self.depth + 1 if depth is None else depth
        if depth > _MAX_DEPTH:
            return
        env = bind(method.node, args, kwargs)
        run = _InitRun(self.shared, method, instance, env, depth)
        run.uncertain = self.uncertain
        run.run(method.node.body)


class _Stop(Exception):
    """A guard the run reached: the method it is in goes no further."""


@dataclass
class _Built:
    """An object built from a class outside the engine (``nn.Linear``) and its arguments."""

    name: str
    args: list[Any]
    kwargs: dict[str, Any]


@dataclass
class _Shared:
    code: ReleaseCode
    facts: PairFacts
    config: ConfigView
    result: DraftInit
    budget: Budget = field(default_factory=Budget)


def run_draft_init(code: ReleaseCode, facts: PairFacts, draft: ClassRef, drafter_config: dict[str, Any]) -> DraftInit:
    """Run ``draft.__init__`` on the drafter's config (leniently: what cannot be known is carried
    as unknown); the guards it reaches, its fusion layer's width and the keys it reads."""
    result = DraftInit()
    method = code.method(draft, "__init__")
    if method is None:
        result.stopped = f"{draft.qualname} has no __init__ this release can read"
        return result
    config = ConfigView(drafter_config)
    shared = _Shared(code, facts, config, result)
    env = bind(method.node, [], {})
    for name in list(env):
        env[name] = config if name == "config" else _Param(name)
    try:
        _InitRun(shared, method, _Instance(draft), env, 0).run(method.node.body)
    except _Stop:
        result.stopped = "a guard"
    except Exhausted as spent:
        result.stopped = spent.reason
        result.exhausted = (spent.reason, spent.path or method.path, spent.line)
    except Unresolved as stop:
        result.stopped = stop.reason
    result.keys_read = set(config.read)
    result.missing = {key: (path, line) for key, (path, line, certain) in config.missing.items() if certain}
    return result


# ---- the forward's width guard ------------------------------------------------------------------


def width_guard(code: ReleaseCode, draft: ClassRef, index: ProjectIndex, facts: PairFacts) -> tuple[str, int] | None:
    """An ``if x.shape[-1] != y.shape[-1]: x = self.fc(x)`` in the draft class's module or its
    bases' modules: with it, aux states as wide as the drafter's own hidden size skip the fusion
    layer instead of failing in it."""
    for path in module_files(code, draft, index, imports=False):
        tree = code.tree(path)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.If) and _shape_compare(node.test) and _calls_attribute(node.body, facts.fc_attribute):
                return str(path), node.lineno
    return None


def _shape_compare(test: ast.expr) -> bool:
    text = ast.unparse(test)
    return isinstance(test, ast.Compare) and text.count(".shape[-1]") == 2 and isinstance(test.ops[0], ast.NotEq)


def _calls_attribute(body: list[ast.stmt], name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == name
        for stmt in body for n in ast.walk(stmt)
    )


def module_files(code: ReleaseCode, ref: ClassRef, index: ProjectIndex, imports: bool) -> list[Path]:
    """The files of ``ref``'s class and its bases (and, with ``imports``, the engine modules
    its own module imports from)."""
    names: list[str] = [c.module for c in index.mro(ref).classes]
    if imports:
        module = index.module(ref.module)
        if module is not None:
            names.extend(target.rsplit(".", 1)[0] for target in module.imports.values())
    paths: list[Path] = []
    for name in dict.fromkeys(names):
        summary = index.module(name)
        if summary is not None and Path(summary.path) not in paths:
            paths.append(Path(summary.path))
    return paths


# ---- tensor parallelism -------------------------------------------------------------------------

_TP_HEADS = re.compile(r"assert\s+self\.total_num_heads\s*%\s*tp_size\s*==\s*0")
_TP_KV = re.compile(r"assert\s+(self\.total_num_kv_heads\s*%\s*tp_size|tp_size\s*%\s*self\.total_num_kv_heads)\s*==\s*0")


@dataclass(frozen=True)
class TpCheck:
    heads: tuple[str, int] | None
    kv_heads: tuple[str, int] | None


def tp_checks(code: ReleaseCode, draft: ClassRef, index: ProjectIndex) -> TpCheck:
    """Where the attention the draft class builds asserts that tensor parallelism splits its
    heads (the draft's module, its bases' and the modules it imports from)."""
    heads = kv = None
    for path in module_files(code, draft, index, imports=True):
        text = code.text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if heads is None and _TP_HEADS.search(line):
                heads = (str(path), number)
            if kv is None and _TP_KV.search(line):
                kv = (str(path), number)
        if heads and kv:
            break
    return TpCheck(heads, kv)
