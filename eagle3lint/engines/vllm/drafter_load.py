"""What vLLM's EAGLE proposer reads from the target while it loads the drafter.

The V1 model runner loads the target, then the drafter against it
(``self.drafter.load_model(self.model)``), and only then checks the target's EAGLE-3 support
(``_setup_eagle3_aux_hidden_state_outputs``). The proposer's ``load_model`` shares the target's
embedding with the drafter: it takes the target's language model (``get_language_model()`` for
a class that declares ``SupportsMultiModal``, the target itself otherwise), then its ``.model``,
then that module's ``embed_tokens`` or ``embedding``, and raises ``AttributeError`` with its own
message where one is missing (with pipeline parallelism off). Such a target crashes before the
support check, whatever it implements.

Everything is read from the release: the proposer class the pack names and its bases (in the
pack's files), the ``raise AttributeError("...")`` after a ``getattr(lm, "model", None)`` or
after a chain of ``hasattr`` tests, the ``get_pp_group().world_size == 1`` test around them, and
the runner files that call ``drafter.load_model(`` before the support check. A release whose
proposer has no such read gives no facts, and no finding.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.common.outcomes import Requirement
from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import decode_source, parse_text, read_source
from eagle3lint.source.summary_walk import dotted

# What the interpreter keeps for a local name: the target, its language model, or a module
# reached from the language model by attribute steps (each step: the names tried, any one does).
_TARGET = "target"
_LM = "lm"
Steps = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class TargetRead:
    """One read off the target's language model the proposer raises on when it fails."""

    steps: Steps  # (("model",),) then (("model",), ("embed_tokens", "embedding"))
    message: str  # the engine's own message
    line: int  # the raise
    condition: tuple[Requirement, ...] = ()  # launch options it needs (pipeline parallelism off)

    def describe(self) -> str:
        return "language model" + "".join("." + "/".join(step) for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": [list(step) for step in self.steps],
            "message": self.message,
            "line": self.line,
            "condition": [{"option": name, "value": value} for name, value in self.condition],
        }


@dataclass(frozen=True)
class ConfigRead:
    """One branch of the multimodal target's image-token copy: the class names it is taken for
    (``self.get_model_name(target) in [...]``; () for the ``else`` every other class takes) and
    the attribute path it reads off the target's config."""

    classes: tuple[str, ...]  # () for the default
    path: tuple[str, ...]  # ("image_token_id",), ("vision_config", "image_token_id")
    line: int  # the read

    @property
    def attribute(self) -> str:
        return ".".join(self.path)

    def to_json(self) -> dict[str, Any]:
        return {"classes": list(self.classes) if self.classes else None, "path": list(self.path), "line": self.line}


@dataclass(frozen=True)
class RunnerCall:
    """Where a model-runner generation loads the drafter, and whether that is before the check."""

    runner: str  # "" where the pack names no generations
    path: str  # relative to the source root
    line: int
    before_check: bool

    def to_json(self) -> dict[str, Any]:
        return {"runner": self.runner or None, "path": self.path, "line": self.line, "before_check": self.before_check}


@dataclass
class DrafterLoad:
    """``VllmContract.drafter_load``: the proposer's reads and the runners that reach them."""

    proposer: str  # the class whose load_model runs (it or a base defines it)
    path: str  # the file of the load_model, relative to the source root
    line: int  # its def
    multimodal_flag: str  # the class flag the multimodal test reads ("supports_multimodal")
    language_model: str  # what a multimodal target's language model is got by ("get_language_model")
    reads: list[TargetRead] = field(default_factory=list)
    runner_calls: list[RunnerCall] = field(default_factory=list)
    # The tree has one model-runner generation only (releases before the V2 runner).
    single_runner: bool = False
    # Other platforms' runners (the CPU build's): reported, never a condition of a finding.
    platform_calls: list[RunnerCall] = field(default_factory=list)
    # A multimodal target's image-token copy off its config, branch by branch, the default last
    # (empty where the release has none, or one not read whole).
    config_reads: list[ConfigRead] = field(default_factory=list)
    config_attribute: str = ""  # the attribute holding the target's config ("config")

    def config_read(self, class_name: str) -> ConfigRead | None:
        """The branch a target class takes (by its class name, as ``get_model_name`` gives it)."""
        for read in self.config_reads:
            if not read.classes or class_name in read.classes:
                return read
        return None

    def runner_condition(self) -> tuple[Requirement, ...] | None:
        """The model-runner generation the reads need: () where every generation the tree has
        loads the drafter before its check, None where none does."""
        first = {c.runner for c in self.runner_calls if c.before_check}
        if not first:
            return None
        if self.single_runner or "" in first or len(first) > 1:
            return ()
        return (("runner", next(iter(first))),)

    def to_json(self) -> dict[str, Any]:
        return {
            "proposer": self.proposer,
            "path": self.path,
            "line": self.line,
            "multimodal_flag": self.multimodal_flag,
            "language_model": self.language_model,
            "reads": [r.to_json() for r in self.reads],
            "runner_calls": [c.to_json() for c in self.runner_calls],
            "platform_calls": [c.to_json() for c in self.platform_calls],
            "config_reads": [r.to_json() for r in self.config_reads],
        }

    def __str__(self) -> str:
        lines = [f"drafter load: {self.proposer}.load_model ({self.path}:{self.line}) reads the target before the support check"]
        lines.append(
            f"  the target's language model: `{self.language_model}()` where the class sets `{self.multimodal_flag}`, else the target"
        )
        for read in self.reads:
            when = " (PP off)" if ("pp", "off") in read.condition else ""
            lines.append(f"  {read.describe()}: else AttributeError {read.message!r} ({self.path}:{read.line}){when}")
        for cread in self.config_reads:
            whose = f"classes {', '.join(cread.classes)}" if cread.classes else "any other class"
            lines.append(
                f"  a multimodal target's `{self.config_attribute}.{cread.attribute}` for {whose} ({self.path}:{cread.line}), before the language model"
            )
        for call in self.runner_calls:
            order = "before" if call.before_check else "after"
            label = f"{call.runner} runner" if call.runner else "runner"
            lines.append(f"  {label} loads the drafter at {call.path}:{call.line}, {order} its EAGLE-3 check")
        for call in self.platform_calls:
            order = "before" if call.before_check else "after"
            lines.append(
                f"  the {call.runner} platform's runner loads the drafter at {call.path}:{call.line}, {order} its EAGLE-3 check"
                " (what `eagle3lint engine-run` launches; its verdicts are this runner's)"
            )
        return "\n".join(lines) + "\n"


# ---- reading the release ----------------------------------------------------------------------


def _source(engine: Engine, path: Path) -> str | None:
    data = read_source(str(path)) if path.is_file() else None
    if not isinstance(data, bytes):
        return None
    text = decode_source(str(path), data)
    return text if isinstance(text, str) else None


def _files(engine: Engine, entries: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for entry in entries:
        path = engine.root / entry
        if entry.endswith("/") and path.is_dir():
            out.extend(sorted(p for p in path.glob("*.py") if p.is_file()))
        elif path.is_file():
            out.append(path)
    return out


def _classes(engine: Engine, vpack: VllmPack) -> dict[str, tuple[ast.ClassDef, Path]]:
    """Every class of the proposer files that may be on the proposer's chain, by name."""
    out: dict[str, tuple[ast.ClassDef, Path]] = {}
    for path in _files(engine, vpack.drafter_files):
        text = _source(engine, path)
        if text is None or "class " not in text:
            continue
        tree = parse_text(str(path), text)
        if not isinstance(tree, ast.Module):
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef):
                out.setdefault(stmt.name, (stmt, path))
    return out


def _method(classes: dict[str, tuple[ast.ClassDef, Path]], start: str, name: str) -> tuple[str, ast.FunctionDef, Path] | None:
    """``name`` as the proposer class ``start`` runs it: its own, or the first base's (by name,
    among the proposer files) that defines it."""
    queue, seen = [start], set()
    while queue:
        current = queue.pop(0)
        if current in seen or current not in classes:
            continue
        seen.add(current)
        cls, path = classes[current]
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return current, stmt, path
        queue.extend((dotted(b) or "").split(".")[-1] for b in cls.bases)
    return None


def _raised_message(body: list[ast.stmt]) -> str | None:
    """``raise AttributeError("...")`` as the whole body: its message."""
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or not isinstance(body[0].exc, ast.Call):
        return None
    call = body[0].exc
    if dotted(call.func) != "AttributeError" or len(call.args) != 1:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in arg.values):
        return "".join(str(v.value) for v in arg.values if isinstance(v, ast.Constant))
    return None


def _unwrap_cast(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Call) and dotted(node.func) in ("cast", "typing.cast") and len(node.args) == 2:
        return node.args[1]
    return node


class _Reader:
    """Interprets the proposer's ``load_model`` and the methods it hands the language model to."""

    def __init__(self, classes: dict[str, tuple[ast.ClassDef, Path]], proposer: str, vpack: VllmPack) -> None:
        self.classes = classes
        self.proposer = proposer
        self.vpack = vpack
        self.reads: list[TargetRead] = []
        self.language_model = ""
        self.multimodal_flag = ""
        self.path: Path | None = None
        self.config_reads: list[ConfigRead] = []
        self._seen: set[str] = set()

    def function(self, fn: ast.FunctionDef, bound: str, depth: int = 0, condition: tuple[Requirement, ...] = ()) -> None:
        params = [a.arg for a in fn.args.args]
        if len(params) < 2:
            return
        env: dict[str, object] = {params[1]: bound}
        self.statements(fn.body, env, condition, depth)

    def statements(self, body: list[ast.stmt], env: dict[str, object], condition: tuple[Requirement, ...], depth: int) -> None:
        for stmt in body:
            self.statement(stmt, env, condition, depth)

    def value(self, node: ast.expr, env: dict[str, object]) -> object:
        node = _unwrap_cast(node)
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
            and self.value(node.func.value, env) == _TARGET and node.func.attr == self.vpack.drafter_language_model
        ):
            self.language_model = node.func.attr
            return _LM
        if isinstance(node, ast.Call) and dotted(node.func) == "getattr" and len(node.args) == 3:
            base, name, default = node.args
            if (
                self.value(base, env) == _LM and isinstance(name, ast.Constant) and isinstance(name.value, str)
                and isinstance(default, ast.Constant) and default.value is None
            ):
                return ((name.value,),)
        return None

    def statement(self, stmt: ast.stmt, env: dict[str, object], condition: tuple[Requirement, ...], depth: int) -> None:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = self.value(stmt.value, env)
            if value is not None:
                env[stmt.targets[0].id] = value
            elif stmt.targets[0].id in env:
                del env[stmt.targets[0].id]
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.call(stmt.value, env, condition, depth)
            return
        if isinstance(stmt, (ast.With, ast.For)):
            self.statements(stmt.body, env, condition, depth)
            return
        if isinstance(stmt, ast.If):
            self.branch(stmt, env, condition, depth)

    def call(self, call: ast.Call, env: dict[str, object], condition: tuple[Requirement, ...], depth: int) -> None:
        """``self.method(lm)``: the method's reads, with the language model bound to its parameter."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return
        if len(call.args) != 1 or self.value(call.args[0], env) != _LM or depth > 2 or func.attr in self._seen:
            return
        found = _method(self.classes, self.proposer, func.attr)
        if found is None:
            return
        self._seen.add(func.attr)
        self.function(found[1], _LM, depth + 1, condition)

    def _is_multimodal_test(self, test: ast.expr, env: dict[str, object]) -> bool:
        if isinstance(test, ast.Call) and len(test.args) == 1 and self.value(test.args[0], env) == _TARGET:
            name = (dotted(test.func) or "").split(".")[-1]
            if name == self.vpack.drafter_multimodal_check:
                self.multimodal_flag = self.vpack.drafter_multimodal_flag
                return True
        return False

    # ---- the multimodal branch's copy of the target's image-token id ------------------------------
    def _config_reads(self, body: list[ast.stmt], env: dict[str, object]) -> list[ConfigRead]:
        """The first ``if self.get_model_name(target) in [...]: ... elif ...: ... else: ...`` of
        the branch, read whole: each test's class names and the one config path its body reads
        (anything not understood gives nothing)."""
        for stmt in body:
            if not (isinstance(stmt, ast.If) and self._class_names(stmt.test, env) is not None):
                continue
            out: list[ConfigRead] = []
            current = stmt
            while True:
                names = self._class_names(current.test, env)
                found = self._config_path(current.body, env)
                if names is None or found is None:
                    return []
                out.append(ConfigRead(names, *found))
                orelse = current.orelse
                if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                    current = orelse[0]
                    continue
                if not orelse:
                    return out
                found = self._config_path(orelse, env)
                return [*out, ConfigRead((), *found)] if found is not None else []
        return []

    def _class_names(self, test: ast.expr, env: dict[str, object]) -> tuple[str, ...] | None:
        """``self.get_model_name(target) in [...]`` / ``== "..."``: the class names tested."""
        method = self.vpack.drafter_model_name
        if not method or not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        left, right = test.left, test.comparators[0]
        if not (
            isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and isinstance(left.func.value, ast.Name)
            and left.func.value.id == "self" and left.func.attr == method and len(left.args) == 1
            and self.value(left.args[0], env) == _TARGET
        ):
            return None
        if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
            return (right.value,)
        if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)) and right.elts:
            names = [e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return tuple(names) if len(names) == len(right.elts) else None
        return None

    def _config_path(self, body: list[ast.stmt], env: dict[str, object]) -> tuple[tuple[str, ...], int] | None:
        """The one ``target.config.a.b`` the body reads (the longest chains), and its line."""
        attribute = self.vpack.drafter_target_config
        if not attribute:
            return None
        chains: dict[tuple[str, ...], int] = {}
        for stmt in body:
            inner = {id(n.value) for n in ast.walk(stmt) if isinstance(n, ast.Attribute)}
            for node in ast.walk(stmt):
                if not isinstance(node, ast.Attribute) or id(node) in inner:
                    continue  # only the outermost attribute of a chain
                names: list[str] = []
                current: ast.expr = node
                while isinstance(current, ast.Attribute):
                    names.insert(0, current.attr)
                    current = current.value
                if self.value(current, env) == _TARGET and names[0] == attribute:
                    chains.setdefault(tuple(names[1:]), node.lineno)
        # One chain, and not the config itself handed on (``getattr(target.config, ...)``).
        if len(chains) != 1 or () in chains:
            return None
        ((path, line),) = chains.items()
        return path, line

    def _is_single_stage(self, test: ast.expr) -> bool:
        return bool(self.vpack.drafter_pp_single) and ast.unparse(test).replace(" ", "") == self.vpack.drafter_pp_single.replace(" ", "")

    def branch(self, stmt: ast.If, env: dict[str, object], condition: tuple[Requirement, ...], depth: int) -> None:
        test = stmt.test
        if self._is_multimodal_test(test, env):
            if not self.config_reads:
                self.config_reads = self._config_reads(stmt.body, env)
            inside, outside = dict(env), dict(env)
            self.statements(stmt.body, inside, condition, depth)
            self.statements(stmt.orelse, outside, condition, depth)
            # A name bound to get_language_model() here and to the target (or it) there is the
            # target's language model after the branches.
            for name, held in inside.items():
                if held == _LM and outside.get(name) in (_TARGET, _LM):
                    env[name] = _LM
            return
        if self._is_single_stage(test):
            self.statements(stmt.body, env, (*condition, ("pp", "off")), depth)
            return
        # ``if inner is None: raise AttributeError(...)``
        if (
            isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None and isinstance(env.get(test.left.id), tuple)
        ):
            message = _raised_message(stmt.body)
            steps = env[test.left.id]
            if message is not None and isinstance(steps, tuple):
                self.reads.append(TargetRead(steps, message, stmt.body[0].lineno, condition))
            return
        # ``if hasattr(inner, "a"): ... elif hasattr(inner, "b"): ... else: raise AttributeError(...)``
        names: list[str] = []
        subject: object = None
        current: ast.If | None = stmt
        while current is not None:
            t = current.test
            if not (isinstance(t, ast.Call) and dotted(t.func) == "hasattr" and len(t.args) == 2 and isinstance(t.args[0], ast.Name)):
                return
            held, attr = env.get(t.args[0].id), t.args[1]
            if not isinstance(held, tuple) or subject not in (None, held) or not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                return
            subject = held
            names.append(attr.value)
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                current = orelse[0]
                continue
            message = _raised_message(orelse)
            if message is not None and isinstance(subject, tuple):
                self.reads.append(TargetRead((*subject, tuple(names)), message, orelse[0].lineno, condition))
            current = None


_CHECK_WORDS = re.compile(r"eagle3|aux_hidden_state")


def _runner_calls(engine: Engine, vpack: VllmPack) -> tuple[list[RunnerCall], bool]:
    """Each generation's ``drafter.load_model(`` in its runner files, and whether no EAGLE-3
    check comes before it in the same function; and whether the tree has one generation only."""
    generations = vpack.runner_files or {"": ()}
    present = 0
    calls: list[RunnerCall] = []
    for runner, entries in generations.items():
        found, any_file = _calls_in(engine, vpack, runner, entries)
        present += any_file
        calls.extend(found)
    return calls, present <= 1


def _calls_in(engine: Engine, vpack: VllmPack, runner: str, entries: tuple[str, ...]) -> tuple[list[RunnerCall], bool]:
    """The drafter loads in one runner's files, and whether the tree has any of its files."""
    pattern = re.compile(vpack.drafter_runner_call) if vpack.drafter_runner_call else None
    files = _files(engine, entries)
    calls: list[RunnerCall] = []
    for path in files:
        text = _source(engine, path)
        if text is None or pattern is None or not pattern.search(text):
            continue
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            if not pattern.search(line) or line.lstrip().startswith("#"):
                continue
            before = _preceding_in_function(lines, number - 1)
            checked = any(_CHECK_WORDS.search(x) and not x.lstrip().startswith("#") for x in before)
            rel = path.relative_to(engine.source_root).as_posix()
            calls.append(RunnerCall(runner, rel, number, not checked))
    return calls, bool(files)


def _preceding_in_function(lines: list[str], index: int) -> list[str]:
    """The lines of the ``def`` around ``lines[index]`` that come before it."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for start in range(index, -1, -1):
        text = lines[start]
        stripped = text.lstrip()
        if stripped.startswith(("def ", "async def ")) and len(text) - len(stripped) < indent:
            return lines[start + 1 : index]
    return lines[:index]


def read_drafter_load(engine: Engine, vpack: VllmPack) -> DrafterLoad | None:
    """The proposer's reads of the target, where the release has any (None otherwise)."""
    if not vpack.drafter_proposer or not vpack.drafter_files:
        return None
    classes = _classes(engine, vpack)
    found = _method(classes, vpack.drafter_proposer, vpack.drafter_method)
    if found is None:
        return None
    owner, fn, path = found
    reader = _Reader(classes, vpack.drafter_proposer, vpack)
    reader.function(fn, _TARGET)
    if not reader.reads and not reader.config_reads:
        return None
    calls, single = _runner_calls(engine, vpack)
    platform_calls = [c for name, entries in vpack.drafter_platform_runners.items() for c in _calls_in(engine, vpack, name, entries)[0]]
    load = DrafterLoad(
        proposer=owner,
        path=path.relative_to(engine.source_root).as_posix(),
        line=fn.lineno,
        multimodal_flag=reader.multimodal_flag,
        language_model=reader.language_model,
        reads=reader.reads,
        runner_calls=calls,
        single_runner=single,
        platform_calls=platform_calls,
        config_reads=reader.config_reads,
        config_attribute=vpack.drafter_target_config if reader.config_reads else "",
    )
    return load
