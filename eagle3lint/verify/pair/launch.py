"""The launch itself, judged by the release's own argument checks: its speculative-decoding
handlers (``[pair] launch_files`` and ``launch_functions``) run on the flags the launch gives
(the step count, top-k and draft-token count, the draft path, raw ``--engine-arg`` flags), with
the target's config where they read it; a ``raise`` or a failed ``assert`` they reach for
certain is the engine's refusal, a draft path they set to the target's own is the target loaded
as its own drafter. Flags a check reads but the launch does not give leave it undecided: it
counts only where it is reached whatever they are. Also: tensor parallelism must split the
drafter's attention heads, as the attention its draft class builds asserts.
"""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass, field
from typing import Any

from eagle3lint.model.models import EAGLE3_DRAFT
from eagle3lint.source.ast_strings import message_text
from eagle3lint.source.index import ClassRef
from eagle3lint.verify.configs import CRASH, OK, PROBLEM, REFUSED, UNKNOWN, PreflightResult
from eagle3lint.verify.pair.context import PairContext
from eagle3lint.verify.pair.draft_class import tp_checks
from eagle3lint.verify.pair.evaluate import (
    ConfigView,
    Evaluator,
    Unresolved,
    end_body,
)
from eagle3lint.verify.pair.source import ReleaseCode

CHECK = "launch"


@dataclass
class _Args:
    """The engine's argument object (``ServerArgs``, ``SpeculativeConfig``): the fields the
    launch gives; every other field is unknown."""

    known: dict[str, Any]
    written: list[tuple[str, Any, int, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class _ModelConfig:
    pass


@dataclass(frozen=True)
class Stop:
    kind: str  # "raise" | "assert"
    message: str
    path: str
    line: int
    certain: bool


class _Check(Evaluator):
    def __init__(self, ctx: PairContext, args: _Args, target: ConfigView, path: str) -> None:
        super().__init__(lenient=True)
        self.ctx = ctx
        self.args = args
        self.target = target
        self.path = path
        self.stops: list[Stop] = []

    def name(self, name: str, node: ast.AST) -> Any:
        if name in self.ctx.facts.launch_objects:
            return self.args
        raise Unresolved(f"`{name}`", getattr(node, "lineno", 0))

    def attribute_of(self, base: Any, name: str, node: ast.AST) -> Any:
        if isinstance(base, _Args) and name in base.known:
            return base.known[name]
        if isinstance(base, _ModelConfig) and name == "hf_config":
            return self.target
        return super().attribute_of(base, name, node)

    def set_attribute(self, base: Any, name: str, value: Any, node: ast.AST) -> None:
        if isinstance(base, _Args):
            base.written.append((name, value, getattr(node, "lineno", 0), self.uncertain == 0))
            if self.uncertain == 0:
                base.known[name] = value
            else:
                base.known.pop(name, None)

    def call_method(self, base: Any, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if isinstance(base, _Args) and name in self.ctx.facts.launch_model_config:
            return _ModelConfig()
        return super().call_method(base, name, args, kwargs, node)

    def call_function(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if name == "get_args" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
            values = _literal_alias(self.ctx.code, self.path, node.args[0].id)
            if values is not None:
                return values
        if name in self.ctx.facts.launch_views and args:
            return args[0]
        if name in self.ctx.facts.launch_model_config:
            return _ModelConfig()
        if name in self.ctx.facts.launch_setters and args and isinstance(args[0], _Args):
            for key, value in kwargs.items():
                self.set_attribute(args[0], key, value, node)
            return None
        return super().call_function(name, args, kwargs, node)

    def reached_raise(self, node: ast.Raise) -> None:
        message = (message_text(node.exc) or ast.unparse(node.exc)) if node.exc else "a re-raise"
        self.stops.append(Stop("raise", message, self.path, node.lineno, self.uncertain == 0))
        end_body()

    def failed_assert(self, node: ast.Assert) -> None:
        message = message_text(node.msg) if node.msg is not None else ast.unparse(node.test)
        self.stops.append(Stop("assert", message, self.path, node.lineno, self.uncertain == 0))
        end_body()


def _literal_alias(code: ReleaseCode, path: str, name: str, depth: int = 0) -> tuple[str, ...] | None:
    """The strings of a module-level ``Name = Literal["a", "b", Other]`` (nested aliases of the
    same file flattened, as ``typing`` does): what ``get_args(Name)`` returns."""
    tree = code.tree(path)
    if tree is None or depth > 4:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name:
            value = node.value
            if not (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == "Literal"):
                return None
            elements = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
            out: list[str] = []
            for element in elements:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    out.append(element.value)
                elif isinstance(element, ast.Name):
                    inner = _literal_alias(code, path, element.id, depth + 1)
                    if inner is None:
                        return None
                    out.extend(inner)
                else:
                    return None
            return tuple(out)
    return None


def _class_functions(ctx: PairContext, qualified: str, pattern: re.Pattern[str]) -> list[tuple[str, ast.FunctionDef]]:
    """The argument class's checks wherever this release defines it (found by the engine's own
    import path, re-exports followed)."""
    if not qualified or ctx.code.index is None:
        return []
    ref = ctx.code.index.resolve_qualified(qualified)
    found = ctx.code.class_node(ref) if isinstance(ref, ClassRef) else None
    if found is None:
        return []
    path, cls = found
    return [(str(path), node) for node in cls.body if isinstance(node, ast.FunctionDef) and pattern.search(node.name)]


def _functions(code: ReleaseCode, files: tuple[str, ...], pattern: re.Pattern[str]) -> list[tuple[str, ast.FunctionDef]]:
    out = []
    for rel in files:
        for path in code.files(rel):
            tree = code.tree(path)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.FunctionDef) and pattern.search(node.name):
                    out.append((str(path), node))
    return out


def _known(ctx: PairContext) -> dict[str, Any]:
    """The argument object's fields the launch sets (a speculative flag not given is None, as
    the engines' own defaults have it); every other field stays unknown."""
    launch, facts = ctx.launch, ctx.facts
    known: dict[str, Any] = {field_: value for field_, value in facts.launch_values}

    def put(name: str, value: Any) -> None:
        field_ = facts.launch_field(name)
        if field_:
            known[field_] = value
    put("steps", launch.num_steps if launch.num_steps is not None else facts.default_steps)
    put("topk", launch.eagle_topk)
    put("draft_tokens", launch.num_draft_tokens)
    put("tp", launch.tp)
    put("pp", launch.pp)
    put("draft_path", (ctx.drafter.path if ctx.drafter is not None else "<draft>") if launch.draft_given else None)
    put("model_path", ctx.target.path if ctx.target is not None else "<target>")
    # Raw server flags: ``--page-size 16`` is the field page_size.
    words = [w for arg in launch.engine_args for w in arg.split()]
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, _, inline = word[2:].partition("=")
        value: Any = inline if inline else (words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else True)
        if isinstance(value, str) and re.fullmatch(r"-?\d{1,9}", value):
            value = int(value)
        known[name.replace("-", "_")] = value
    return known


def check_launch(ctx: PairContext, result: PreflightResult) -> None:
    facts = ctx.facts
    if not facts.launch_files:
        return
    pattern = re.compile(facts.launch_functions or r"(?i)speculative|eagle")
    functions = _functions(ctx.code, facts.launch_files, pattern) or _class_functions(ctx, facts.launch_class, pattern)
    if not functions:
        where = ", ".join(facts.launch_files) + (f" or `{facts.launch_class}`" if facts.launch_class else "")
        result.add(CHECK, UNKNOWN, f"{ctx.where} has no speculative-decoding argument checks in {where}", decides="where this release checks its launch flags")
        return
    args = _Args(_known(ctx))
    target = ConfigView(ctx.target.raw if ctx.target is not None else {})
    stops: list[Stop] = []
    for path, fn in functions:
        run = _Check(ctx, args, target, path)
        with contextlib.suppress(Unresolved):
            run.run(fn.body)
        stops.extend(run.stops)
    certain = [s for s in stops if s.certain]
    flags = _flags_text(ctx)
    for stop in certain:
        impact = REFUSED if stop.kind == "raise" else CRASH
        what = f"refuses {flags}" if stop.kind == "raise" else f"fails an assertion on {flags}"
        result.add(
            CHECK, PROBLEM, f"{ctx.where} {what} at start-up: {stop.message!r} ({ctx.rel(stop.path)}:{stop.line})", impact,
            evidence=[{"kind": "release", "where": ctx.rel(stop.path), "line": stop.line, "what": stop.message}],
        )
    if not certain:
        result.add(CHECK, OK, f"{ctx.where}'s argument checks pass {flags}", evidence=[{"kind": "release", "where": ctx.rel(p), "line": f.lineno, "what": f.name} for p, f in functions[:6]])
    if not ctx.launch.draft_given:
        _missing_draft(ctx, result, args, certain)


def _flags_text(ctx: PairContext) -> str:
    launch = ctx.launch
    given = [f"{name} {value}" for name, value in (("--num-steps", launch.num_steps), ("--eagle-topk", launch.eagle_topk), ("--num-draft-tokens", launch.num_draft_tokens)) if value is not None]
    given.extend(launch.engine_args)
    if not launch.draft_given:
        given.append("no draft model path")
    return "EAGLE-3 with " + ", ".join(given) if given else "an EAGLE-3 launch with the engine's defaults"


def _missing_draft(ctx: PairContext, result: PreflightResult, args: _Args, refused: list[Stop]) -> None:
    """EAGLE-3 without a draft path: refused, or the target loaded as its own drafter."""
    if refused:
        return  # the refusal is said above
    field_ = ctx.facts.launch_field("draft_path")
    model_field = ctx.facts.launch_field("model_path")
    model_path = args.known.get(model_field)
    set_to_target = [(line, certain) for name, value, line, certain in args.written if name == field_ and value == model_path and model_path is not None]
    if any(certain for _, certain in set_to_target):
        arch = ctx.target.architecture if ctx.target is not None else None
        drafts = {n for m in ctx.models if m.kind == EAGLE3_DRAFT for n in (m.entry, m.summary.name, *m.architectures)}
        if arch in drafts:
            result.add("draft-path", OK, f"without a draft path {ctx.where} loads the target ({arch}) as its drafter, an EAGLE-3 draft class", evidence=[])
            return
        result.add(
            "draft-path", PROBLEM,
            f"without a draft path {ctx.where} loads the target itself as the drafter (it sets the draft path to the model path for {arch}); "
            f"{arch} is not an EAGLE-3 draft model, so the EAGLE-3 worker cannot run it",
            CRASH, evidence=[{"kind": "option", "where": "--draft-model-path (not given)", "line": None}],
        )
        return
    result.add(
        "draft-path", UNKNOWN,
        f"EAGLE-3 is launched without a draft model path; {ctx.where}'s argument checks neither refuse it nor substitute one for certain",
        decides="what the release loads as the drafter (give --draft-model-path)",
        evidence=[{"kind": "option", "where": "--draft-model-path (not given)", "line": None}],
    )


# ---- tensor parallelism -------------------------------------------------------------------------


def check_tensor_parallel(ctx: PairContext, result: PreflightResult) -> None:
    drafter, tp = ctx.drafter, ctx.launch.tp
    if drafter is None or ctx.draft_class is None:
        return
    heads = drafter.get("num_attention_heads")
    kv = drafter.get("num_key_value_heads")
    kv = kv if kv is not None else heads
    if not (isinstance(heads, int) and isinstance(kv, int) and heads > 0 and kv > 0) or isinstance(heads, bool) or isinstance(kv, bool):
        return
    checks = tp_checks(ctx.code, ctx.draft_class.ref, ctx.index)
    key_evidence = [{"kind": "config", "where": "config.json: num_attention_heads", "line": None}, {"kind": "option", "where": f"--tp {tp}", "line": None}]
    if heads % tp != 0:
        if checks.heads is None:
            result.add("tensor-parallel", UNKNOWN, f"--tp {tp} does not divide the drafter's {heads} attention heads", decides="how the release's draft attention splits heads", evidence=key_evidence)
            return
        heads_at = checks.heads
        result.add("tensor-parallel", PROBLEM, f"--tp {tp} does not divide the drafter's {heads} attention heads: the draft attention's assert fails while the drafter is built ({ctx.rel(heads_at[0])}:{heads_at[1]})", CRASH,
                   evidence=[*key_evidence, {"kind": "release", "where": ctx.rel(heads_at[0]), "line": heads_at[1], "what": "assert self.total_num_heads % tp_size == 0"}])
        return
    if (kv >= tp and kv % tp != 0) or (kv < tp and tp % kv != 0):
        where = checks.kv_heads
        if where is None:
            result.add("tensor-parallel", UNKNOWN, f"--tp {tp} and the drafter's {kv} KV heads do not split evenly", decides="how the release's draft attention splits KV heads", evidence=key_evidence)
            return
        result.add("tensor-parallel", PROBLEM, f"--tp {tp} and the drafter's {kv} KV heads do not split evenly: the draft attention's assert fails ({ctx.rel(where[0])}:{where[1]})", CRASH,
                   evidence=[*key_evidence, {"kind": "release", "where": ctx.rel(where[0]), "line": where[1], "what": "KV heads split by tp"}])
        return
    if tp > 1:
        result.add("tensor-parallel", OK, f"--tp {tp} splits the drafter's {heads} attention heads and {kv} KV heads evenly", evidence=key_evidence)
