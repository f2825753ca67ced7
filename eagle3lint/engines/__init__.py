"""The engines eagle3lint knows: the registry the code that drives a run asks, and nothing else.

Each engine is a package ``eagle3lint/engines/<name>/`` whose adapter (an
:class:`~eagle3lint.model.adapter.EngineAdapter`) hands the core its models, rules, fix patterns, extra
contract facts and ``verify`` launcher. Adapters load when first asked for, so a run pays only for
the engines it looks at. The core's lower half (index, contract, rule base, fix machinery) never
imports this module; the upper half (runner, CLI, reports, fix and verify sessions) imports only
this module, never an engine package (a test keeps it so).

Adding an engine: see ``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING

from eagle3lint.common.errors import UsageError
from eagle3lint.model.adapter import EngineAdapter

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule, RuleRegistry
    from eagle3lint.checks.context import CheckContext
    from eagle3lint.enginerun.spec import EngineRunSpec
    from eagle3lint.fix.planner import FixPattern
    from eagle3lint.model.ports import ContextPort
    from eagle3lint.verify.driver import ServerDriver
    from eagle3lint.verify.knowledge import EngineKnowledge

ENGINE_NAMES: tuple[str, ...] = ("sglang", "vllm", "lmdeploy")


def _sglang() -> EngineAdapter:
    from eagle3lint.engines.sglang.adapter import SglangAdapter

    return SglangAdapter()


def _vllm() -> EngineAdapter:
    from eagle3lint.engines.vllm.adapter import VllmAdapter

    return VllmAdapter()


def _lmdeploy() -> EngineAdapter:
    from eagle3lint.engines.lmdeploy.adapter import LmdeployAdapter

    return LmdeployAdapter()


_LOADERS: dict[str, Callable[[], EngineAdapter]] = {"sglang": _sglang, "vllm": _vllm, "lmdeploy": _lmdeploy}


def engines_phrase(names: Iterable[str] = ENGINE_NAMES) -> str:
    """``sglang, vllm or lmdeploy``: engine names as a message lists them."""
    listed = list(names)
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


@cache
def adapter_for(name: str) -> EngineAdapter:
    loader = _LOADERS.get(name)
    if loader is None:
        raise UsageError(f"unknown engine {name!r}; expected one of: {', '.join(ENGINE_NAMES)}")
    return loader()


def adapters() -> list[EngineAdapter]:
    return [adapter_for(name) for name in ENGINE_NAMES]


def rules_for(engine: str | None = None) -> list[type[Rule]]:
    """The rules that run on ``engine``: the core's (less those the engine replaces) and its own;
    with no engine, every rule of every engine."""
    from eagle3lint.checks.base import Rule
    from eagle3lint.checks.core import CORE_RULES

    chosen = adapters() if engine is None else [adapter_for(engine)]
    replaced = set().union(*(a.replaces_core_rules for a in chosen)) if engine is not None else set()
    rules = [r for r in CORE_RULES if r.code not in replaced]
    for adapter in chosen:
        for rule in adapter.rules():
            if not (isinstance(rule, type) and issubclass(rule, Rule)):
                raise TypeError(f"the {adapter.name} adapter hands out {rule!r} as a rule, which is not a Rule")
            rules.append(rule)
    return rules


def fix_patterns_for(engine: str) -> list[type[FixPattern]]:
    """The engine's fix patterns, in the order its adapter lists them."""
    from eagle3lint.fix.planner import FixPattern

    adapter = adapter_for(engine)
    patterns: list[type[FixPattern]] = []
    for pattern in adapter.fix_patterns():
        if not (isinstance(pattern, type) and issubclass(pattern, FixPattern)):
            raise TypeError(f"the {adapter.name} adapter hands out {pattern!r} as a fix pattern, which is not a FixPattern")
        patterns.append(pattern)
    return patterns


def server_for(engine: str) -> ServerDriver:
    """The ``verify`` driver of the engine."""
    from eagle3lint.verify.driver import ServerDriver

    adapter = adapter_for(engine)
    server = adapter.server()
    if not isinstance(server, ServerDriver):
        raise TypeError(f"the {adapter.name} adapter hands out {server!r} as its server, which is not a ServerDriver")
    return server


def checked_context(engine: str, context: ContextPort) -> CheckContext:
    """The rule context an adapter handed out, as the rules take it."""
    from eagle3lint.checks.context import CheckContext

    if not isinstance(context, CheckContext):
        raise TypeError(f"the {engine} adapter hands out {context!r} as its rule context, which is not a CheckContext")
    return context


@cache
def rule_registry() -> RuleRegistry:
    """Every rule of every engine, for ``rules``, ``explain`` and the SARIF rule table."""
    from eagle3lint.checks.base import RuleRegistry

    return RuleRegistry(rules=tuple(rules_for(None)))


def known_rule_codes() -> dict[str, str]:
    """Every rule code and name, without importing a rule."""
    from eagle3lint.common.rule_codes import CORE_RULE_CODES

    codes = dict(CORE_RULE_CODES)
    for adapter in adapters():
        codes.update(adapter.rule_codes)
    return dict(sorted(codes.items()))


def is_known_code(code: str) -> bool:
    """``code`` names a rule, or is a prefix of some rule's code (``E3L0``), or ``ALL``."""
    from eagle3lint.common.rule_codes import code_matches

    return code_matches(code, known_rule_codes())


@cache
def knowledge_for(name: str) -> EngineKnowledge:
    """What ``verify`` knows of the engine: its server driver and knowledge file, the role of each
    interface member (its rule pack) and the rules a crash may map to."""
    from eagle3lint.verify.knowledge import load_knowledge

    adapter = adapter_for(name)
    roles = {member: spec.role for member, spec in adapter.pack().members.items()}
    return load_knowledge(name, server_for(name), roles, tuple(rules_for(name)))


__all__ = [
    "ENGINE_NAMES",
    "EngineAdapter",
    "adapter_for",
    "adapters",
    "checked_context",
    "engines_phrase",
    "fix_patterns_for",
    "is_known_code",
    "knowledge_for",
    "known_rule_codes",
    "rule_registry",
    "rules_for",
    "server_for",
]


# Engines whose build runs EAGLE-3 on a CPU (``eagle3lint engine-run``), by name: the module that
# holds the engine's EngineRunSpec.
_ENGINE_RUNS: dict[str, str] = {"vllm": "eagle3lint.engines.vllm.engine_run", "sglang": "eagle3lint.engines.sglang.engine_run"}


def engine_run_for(name: str) -> EngineRunSpec:
    """How ``engine-run`` launches this engine's CPU build."""
    import importlib

    from eagle3lint.enginerun.spec import EngineRunSpec

    if name not in _ENGINE_RUNS:
        raise UsageError(f"engine-run: {name} publishes no CPU build that runs EAGLE-3 here (engines with one: {engines_phrase(_ENGINE_RUNS)})")
    spec = importlib.import_module(_ENGINE_RUNS[name]).SPEC
    assert isinstance(spec, EngineRunSpec)
    return spec
