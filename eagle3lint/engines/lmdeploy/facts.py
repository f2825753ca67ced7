"""LMDeploy's side of the EAGLE-3 contract, read once per release (``Contract.extra["lmdeploy"]``).

* the config builders and what each does for the target of an EAGLE-3 launch (``builders``);
* what the engine does after the builder (``ModelConfig.from_hf_config``: it may opt every
  target in itself);
* whether the build context carries capture layers for EAGLE-3
  (``SpecDecodeConfig.from_config`` fills ``target_layer_ids`` per method);
* what a target that is never opted in runs into: the plain strategies, whose ``make_dummy``
  the draft's warm-up calls with arguments only the speculative strategy takes;
* the proposer's fallback (``if 'aux_hidden_states' in output``: else the drafter reads the last
  hidden state), the evidence for a silent failure;
* the engine's own config classes for model types transformers does not ship.

Files are read with ``ast``, never imported. A file that is missing leaves its fact unknown (older
releases lack some); one that cannot be parsed is a file error, and the rest is still read.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3lint.common.escape import line_text
from eagle3lint.common.findings import FileError
from eagle3lint.engines.lmdeploy.builders import (
    NEVER,
    SET,
    BuilderFacts,
    BuilderReader,
    Place,
    read_builders,
    run_function,
)
from eagle3lint.engines.lmdeploy.evaluate import UNKNOWN, literal, truth
from eagle3lint.engines.lmdeploy.pack import LmdeployPack, lmdeploy_pack
from eagle3lint.model.contract_types import CheckCall, ContractExtension
from eagle3lint.source.sources import parse_file

if TYPE_CHECKING:
    from eagle3lint.source.engine import Engine

PROVIDED, EMPTY = "provided", "empty"


@dataclass(frozen=True)
class ContextLayers:
    """Whether the build context carries capture layers for EAGLE-3."""

    state: str  # PROVIDED | EMPTY | "unknown" | "absent" (the release has no such context)
    place: Place | None = None
    why: str = ""


@dataclass
class LmdeployContract:
    builders: list[BuilderFacts] = field(default_factory=list)
    # What ``ModelConfig.from_hf_config`` does after the builder (None: not read).
    after: BuilderFacts | None = None
    context: ContextLayers = field(default_factory=lambda: ContextLayers("absent"))
    # The draft's warm-up call a plain strategy cannot take (None: no such mismatch found).
    paradigm_crash: Place | None = None
    paradigm_why: str = ""
    fallback: Place | None = None
    # model_type -> the architectures the engine's own config class for it serves.
    config_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The draft's method, as the builders were run with it.
    method: str = "eagle3"

    def opted_in(self, builder: BuilderFacts) -> str:
        """SET | MAYBE | NEVER: the builder, or the engine's step after it, opts the target in."""
        if self.after is not None and self.after.paradigm == SET:
            return SET
        if builder.paradigm == NEVER and self.after is not None and self.after.paradigm != NEVER:
            return self.after.paradigm
        return builder.paradigm

    def to_json(self) -> dict[str, Any]:
        def place(p: Place | None) -> str | None:
            return f"{p.path}:{p.line}" if p else None

        return {
            "builders": [
                {
                    "name": b.name,
                    "place": place(b.place),
                    "condition": {"kind": b.condition.kind, "names": list(b.condition.names), "exact": b.condition.exact},
                    "refusal": {"kind": b.refusal.kind, "exception": b.refusal.exception, "place": place(b.refusal.place), "message": b.refusal.message} if b.refusal else None,
                    "speculative": self.opted_in(b),
                    "layers": b.layers,
                    "layers_on": ".".join(b.layers_path) or "the checkpoint's config",
                    "notes": list(b.notes),
                }
                for b in self.builders
            ],
            "build_context": {"state": self.context.state, "place": place(self.context.place), "why": self.context.why},
            "not_opted_in": {"place": place(self.paradigm_crash), "why": self.paradigm_why} if self.paradigm_crash else None,
            "fallback": place(self.fallback),
            "config_types": {k: list(v) for k, v in sorted(self.config_types.items())},
        }

    def __str__(self) -> str:
        lines = [f"config builders (what each does for the target of a --speculative-algorithm {self.method} launch):"]
        for b in self.builders:
            names = ", ".join(b.condition.names) if b.condition.names else b.condition.kind
            scope = {"types": "model_type", "architectures": "architectures[0]", "always": "", "unknown": "may match"}[b.condition.kind]
            lines.append(f"  {b.name} ({b.place.path}:{b.place.line}) [{scope} {names}]: {b.describe()}".replace("[ ", "[").replace(" ]", "]"))
        if self.after is not None:
            lines.append(f"  after every builder, {self.after.name} ({self.after.place.path}:{self.after.place.line}): {'opts every target in' if self.after.paradigm == SET else 'opts no target in'}")
        ctx = self.context
        where = f" ({ctx.place.path}:{ctx.place.line})" if ctx.place else ""
        lines.append(f"build context capture layers for {self.method}: {ctx.state}{where}{': ' + ctx.why if ctx.why else ''}")
        if self.paradigm_crash is not None:
            lines.append(f"a target never opted in: {self.paradigm_why} ({self.paradigm_crash.path}:{self.paradigm_crash.line})")
        if self.fallback is not None:
            lines.append(f"proposer fallback (no captured states: the drafter reads the last hidden state): {self.fallback.path}:{self.fallback.line}")
        if self.config_types:
            lines.append("engine config classes: " + "; ".join(f"{t} -> {', '.join(a[:1])}" for t, a in sorted(self.config_types.items())))
        # One fact a line: the analysed text in a line (a refusal's message, a path) escaped, so
        # that the line breaks are the tool's.
        return "".join(line_text(line) + "\n" for line in lines)


_TOO_DEEP = "nested too deeply to read (its EAGLE-3 facts are unknown)"
T = TypeVar("T")


class _Reader:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.root = engine.root
        self.errors: list[FileError] = []
        self._trees: dict[Path, ast.Module | None] = {}

    def guarded(self, rel: str, default: T, read: Callable[[], T]) -> T:
        """``read()``, or ``default`` with a file error where the code is nested deeper than the
        stack allows (a hostile file must cost the fact, not the run)."""
        try:
            return read()
        except RecursionError:
            self.errors.append(FileError(str(self.root / rel), _TOO_DEEP))
            return default

    def parse(self, rel: str) -> ast.Module | None:
        path = self.root / rel
        if not path.is_file():
            return None
        return self.parse_path(path)

    def parse_path(self, path: Path) -> ast.Module | None:
        """The file's tree, parsed once per contract read (several facts come from one file:
        ``pytorch/config.py`` holds both the after-build step and the build context)."""
        if path not in self._trees:
            tree = parse_file(str(path))
            if isinstance(tree, FileError):
                self.errors.append(tree)
            self._trees[path] = tree if isinstance(tree, ast.Module) else None
        return self._trees[path]


def _function(tree: ast.Module, qualified: str) -> ast.FunctionDef | None:
    """``Class.method`` or ``function`` at module level."""
    owner, _, name = qualified.rpartition(".")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == owner), None)
        if cls is None:
            return None
        body = cls.body
    return next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == name), None)


def read_contract(engine: Engine) -> tuple[LmdeployContract, list[FileError]]:
    lpack = lmdeploy_pack(engine.pack)
    reader = _Reader(engine)
    arguments = dict(lpack.arguments)
    contract = LmdeployContract(method=str(arguments.get("spec_method", "eagle3")))
    builders = _builder_reader(reader, lpack)
    if builders is not None:
        contract.builders, unreadable = read_builders(builders, arguments)
        reader.errors.extend(FileError(str(reader.root / rel), _TOO_DEEP) for rel in dict.fromkeys(unreadable))
        tree = reader.parse(lpack.after_file)
        fn = _function(tree, lpack.after_function) if tree is not None else None
        if fn is not None:
            contract.after = reader.guarded(lpack.after_file, None, lambda: run_function(builders, lpack.after_function.split(".")[0], fn, lpack.after_file, arguments))
    method = str(arguments.get("spec_method", "eagle3"))
    contract.context = reader.guarded(lpack.context_file, ContextLayers("unknown"), lambda: _context_layers(reader, lpack, method))
    unread: tuple[Place | None, str] = (None, "")
    contract.paradigm_crash, contract.paradigm_why = reader.guarded(lpack.agent_file, unread, lambda: _paradigm_crash(reader, lpack))
    contract.fallback = reader.guarded(lpack.fallback_files[0], None, lambda: _fallback(reader, lpack))
    contract.config_types = reader.guarded(lpack.config_registry, {}, lambda: _config_types(reader, lpack))
    return contract, reader.errors


def _builder_reader(reader: _Reader, lpack: LmdeployPack) -> BuilderReader | None:
    folder = reader.root / lpack.builders_folder
    if not folder.is_dir():
        return None
    files: dict[str, tuple[str, ast.Module]] = {}
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = reader.parse_path(path)
        if tree is not None:
            files[path.stem] = (path.relative_to(reader.root).as_posix(), tree)
    return BuilderReader(files, lpack.builder_base, lpack.default_builder, lpack.build_method, (lpack.paradigm_attribute, lpack.paradigm_value), lpack.layers_attribute)


def _context_layers(reader: _Reader, lpack: LmdeployPack, method: str) -> ContextLayers:
    """Every value ``from_config`` gives the field's variable, and whether the method reaches one
    that is not None."""
    tree = reader.parse(lpack.context_file)
    fn = _function(tree, lpack.context_function) if tree is not None else None
    if fn is None:
        return ContextLayers("absent")
    variable = None
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        for kw in call.keywords:
            if kw.arg == lpack.context_field and isinstance(kw.value, ast.Name):
                variable = kw.value.id
    if variable is None:
        return ContextLayers("absent", Place(lpack.context_file, fn.lineno), f"`{lpack.context_function}` fills no `{lpack.context_field}`")
    env: dict[str, Any] = {lpack.method_parameter: method}
    reached: list[tuple[int, Any]] = []  # (line, truth of reaching it) for each non-None assignment
    skipped: list[tuple[int, str]] = []

    def maybe(reach: Any) -> Any:
        return False if reach is False else UNKNOWN

    def walk(body: list[ast.stmt], reach: Any, test_line: int, test_text: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = truth(stmt.test, env)
                body_reach = reach if test is True else False if test is False else maybe(reach)
                else_reach = reach if test is False else False if test is True else maybe(reach)
                walk(stmt.body, body_reach, stmt.lineno, ast.unparse(stmt.test))
                walk(stmt.orelse, else_reach, stmt.lineno, f"not ({ast.unparse(stmt.test)})")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if not any(variable in {n.id for n in ast.walk(t) if isinstance(n, ast.Name)} for t in targets):
                    continue
                if isinstance(targets[0], ast.Name) and stmt.value is not None and literal(stmt.value, {}) is None:
                    continue  # ``target_layer_ids = None``: the default, nothing provided
                if reach is False:
                    skipped.append((test_line, test_text))
                else:
                    reached.append((stmt.lineno, reach))
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                walk(stmt.body, reach, test_line, test_text)
            elif isinstance(stmt, ast.Try):
                walk(stmt.body, reach, test_line, test_text)
                for handler in stmt.handlers:
                    walk(handler.body, maybe(reach), test_line, test_text)
                walk(stmt.orelse, maybe(reach), test_line, test_text)
                walk(stmt.finalbody, reach, test_line, test_text)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                walk(stmt.body, maybe(reach), test_line, test_text)
                walk(stmt.orelse, maybe(reach), test_line, test_text)

    walk(fn.body, True, fn.lineno, "")
    if any(r is True for _, r in reached):
        line = next(line for line, r in reached if r is True)
        return ContextLayers(PROVIDED, Place(lpack.context_file, line), f"`{variable}` is set for {method}")
    if reached:
        return ContextLayers("unknown", Place(lpack.context_file, reached[0][0]), f"whether `{variable}` is set for {method} depends on more than the method")
    if skipped:
        line, text = skipped[0]
        return ContextLayers(EMPTY, Place(lpack.context_file, line), f"`{variable}` is set only when `{text}`, never for {method}")
    return ContextLayers(EMPTY, Place(lpack.context_file, fn.lineno), f"`{variable}` is never set")


def _paradigm_crash(reader: _Reader, lpack: LmdeployPack) -> tuple[Place | None, str]:
    """The draft agent's call of the target strategy's ``make_dummy`` with a keyword the plain
    strategy's ``make_dummy`` does not take (and no ``**kwargs``)."""
    plain = reader.parse(lpack.plain_inputs_file)
    agent = reader.parse(lpack.agent_file)
    if plain is None or agent is None:
        return None, ""
    method = next((n for n in ast.walk(plain) if isinstance(n, ast.FunctionDef) and n.name == lpack.dummy_call), None)
    if method is None or method.args.kwarg is not None:
        return None, ""
    accepted = {a.arg for a in (*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs)}
    for call in (n for n in ast.walk(agent) if isinstance(n, ast.Call)):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == lpack.dummy_call and "inputs_strategy" in ast.unparse(func.value)):
            continue
        extra = sorted(kw.arg for kw in call.keywords if kw.arg and kw.arg not in accepted)
        if extra:
            names = ", ".join(f"`{e}`" for e in extra)
            why = (
                f"the engine builds the plain (non-speculative) strategies ({lpack.strategies_file}) and the draft's warm-up "
                f"passes {names} to their `{lpack.dummy_call}` ({lpack.plain_inputs_file}:{method.lineno}), which takes no such argument: "
                "a TypeError at start-up, after the weights load"
            )
            return Place(lpack.agent_file, call.lineno), why
    return None, ""


def _fallback(reader: _Reader, lpack: LmdeployPack) -> Place | None:
    for rel in lpack.fallback_files:
        tree = reader.parse(rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], ast.In)
                and isinstance(node.left, ast.Constant)
                and node.left.value == lpack.aux_key
            ):
                return Place(rel, node.lineno)
    return None


def _config_types(reader: _Reader, lpack: LmdeployPack) -> dict[str, tuple[str, ...]]:
    folder = reader.root / lpack.config_registry
    out: dict[str, tuple[str, ...]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.py")):
        tree = reader.parse_path(path)
        if tree is None:
            continue
        for cls in (s for s in tree.body if isinstance(s, ast.ClassDef)):
            model_type = next(
                (
                    s.value.value
                    for s in cls.body
                    if isinstance(s, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "model_type" for t in s.targets)
                    and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, str)
                ),
                None,
            )
            if model_type is None:
                continue
            for base in cls.bases:
                name = ast.unparse(base).rsplit(".", 1)[-1]
                if name.endswith("Config") and name != "PretrainedConfig":
                    stem = name[: -len("Config")]
                    out[model_type] = tuple(stem + suffix for suffix in lpack.architecture_suffixes)
    return out


class LmdeployContractExtension(ContractExtension):
    """Reads the release's side of the contract in the worker that scans the call sites."""

    def __init__(self, engine: Engine) -> None:
        self.contract, self._errors = read_contract(engine)

    def errors(self) -> list[FileError]:
        return list(self._errors)

    def extra(self, check_calls: list[CheckCall]) -> dict[str, Any]:
        return {"lmdeploy": self.contract}
