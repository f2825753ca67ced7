"""Per-engine facts `verify` relies on, read from each engine's ``verify.toml`` (beside its
adapter, in ``eagle3lint/engines/<name>/``) and ``verify/common.toml``.

They change with engine releases (log lines, endpoints, error texts), so they live in data, not code.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.pair.facts import (
    DrafterKey,
    Framework,
    PairFacts,
    parse_drafter_keys,
    parse_frameworks,
    parse_pair_facts,
)

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.verify.driver import ServerDriver

COMMON_FILE = Path(__file__).resolve().parent / "common.toml"


@dataclass(frozen=True)
class CrashPattern:
    pattern: re.Pattern[str]
    kind: str  # interface | aux-capture | config-mismatch | environment
    cause: str  # may name {class}, {member}, {role}, {module}
    rules: tuple[str, ...]  # codes, rule names, or "family:NAME"
    frame: re.Pattern[str] | None  # the innermost traceback frame's file must match
    requires_known_member: bool
    next: str  # "fix" | "check" | "preflight" | "advice"
    advice: str


@dataclass(frozen=True)
class Phase:
    name: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class AuxLayerConvention:
    config_keys: tuple[str, ...]
    ignored_keys: tuple[str, ...]
    default: tuple[str, ...]
    valid_min: str
    valid_max: str
    fixed_count: int
    convention: str

    def default_ids(self, num_layers: int) -> list[int]:
        return [layer_expression(e, num_layers) for e in self.default]

    def valid_range(self, num_layers: int) -> tuple[int, int]:
        return layer_expression(self.valid_min, num_layers), layer_expression(self.valid_max, num_layers)


@dataclass(frozen=True)
class EngineKnowledge:
    engine: str
    launch_module: str
    launch_script: str
    ready_endpoint: str
    ready_line: str
    ready_line_needed_before: str
    fatal_lines: tuple[str, ...]
    record_start: re.Pattern[str]
    exception_block: re.Pattern[str]
    phases: tuple[Phase, ...]
    eagle3_architectures: tuple[str, ...]
    architecture_prefix: str
    aux: AuxLayerConvention
    crashes: tuple[CrashPattern, ...]
    # How to start and talk to the server; the role of each interface member and the rules a
    # crash may map to (from the engine's rule pack and rules).
    driver: ServerDriver = field(compare=False)
    member_roles: Mapping[str, str] = field(default_factory=dict, compare=False)
    rules: tuple[type[Rule], ...] = field(default=(), compare=False)
    # The pair pre-flight: the engine's starting points ([pair]), the drafter-training
    # frameworks and the drafter keys that change what a drafter computes (common.toml).
    pair: PairFacts = field(default_factory=PairFacts, compare=False)
    frameworks: tuple[Framework, ...] = field(default=(), compare=False)
    drafter_keys: tuple[DrafterKey, ...] = field(default=(), compare=False)

    def loaded_architecture(self, architecture: str) -> str:
        """The class name the engine looks up for a drafter's ``architectures[0]``."""
        prefix = self.architecture_prefix
        if not prefix or architecture.startswith(prefix) or architecture.endswith(prefix):
            return architecture
        return prefix + architecture


_ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.Add, ast.Sub, ast.FloorDiv, ast.Mult, ast.Constant, ast.Name, ast.UnaryOp, ast.USub, ast.Load)


def layer_expression(text: str, num_layers: int) -> int:
    """Evaluate a layer-id expression over ``n`` (``"n // 2"``, ``"n - 3"``, ``"2"``)."""
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES) or (isinstance(node, ast.Name) and node.id != "n"):
            raise UsageError(f"layer expression {text!r}: only integers, n, +, -, *, // are allowed")
    value = eval(compile(tree, "<layer expression>", "eval"), {"__builtins__": {}}, {"n": num_layers})
    return int(value)


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read verify knowledge ({exc})") from exc


def _crash_patterns(raw: dict[str, Any], path: Path) -> list[CrashPattern]:
    out: list[CrashPattern] = []
    for entry in raw.get("crash", []):
        try:
            pattern = re.compile(entry["pattern"], re.M)
            frame = re.compile(entry["frame"]) if entry.get("frame") else None
        except (KeyError, re.error) as exc:
            raise UsageError(f"{path}: bad [[crash]] entry {entry!r} ({exc})") from exc
        default_next = "fix" if entry.get("kind") == "interface" else "check" if entry.get("kind") == "aux-capture" else "advice"
        out.append(
            CrashPattern(
                pattern=pattern,
                kind=str(entry.get("kind", "unknown")),
                cause=str(entry.get("cause", "")),
                rules=tuple(entry.get("rules", ())),
                frame=frame,
                requires_known_member=bool(entry.get("requires_known_member", False)),
                next=str(entry.get("next", default_next)),
                advice=str(entry.get("advice", "")),
            )
        )
    return out


def load_knowledge(
    engine: str,
    driver: ServerDriver,
    member_roles: Mapping[str, str] | None = None,
    rules: tuple[type[Rule], ...] = (),
) -> EngineKnowledge:
    """The knowledge in the driver's ``knowledge_file``, with the crash patterns every engine
    shares (``common.toml``)."""
    path = driver.knowledge_file
    if not path.is_file():
        raise UsageError(f"verify does not know engine {engine!r} (no {path})")
    raw = _load_toml(path)
    common_path = COMMON_FILE
    common = _load_toml(common_path)
    launch, ready, drafter, aux = raw["launch"], raw["ready"], raw["drafter"], raw["aux_layers"]
    return EngineKnowledge(
        engine=engine,
        launch_module=launch.get("module", ""),
        launch_script=launch.get("script", ""),
        ready_endpoint=ready["endpoint"],
        ready_line=ready.get("ready_line", ""),
        ready_line_needed_before=ready.get("ready_line_needed_before", ""),
        fatal_lines=tuple(ready.get("fatal_lines", ())),
        record_start=re.compile(ready["record_start"]),
        exception_block=re.compile(ready["exception_block"]),
        phases=tuple(Phase(p["name"], tuple(p["lines"])) for p in raw.get("phase", [])),
        eagle3_architectures=tuple(drafter.get("eagle3_architectures", ())),
        architecture_prefix=drafter.get("architecture_prefix", ""),
        aux=AuxLayerConvention(
            config_keys=tuple(aux["config_keys"]),
            ignored_keys=tuple(aux.get("ignored_keys", ())),
            default=tuple(aux["default"]),
            valid_min=aux["valid_min"],
            valid_max=aux["valid_max"],
            fixed_count=int(aux.get("fixed_count", 0)),
            convention=" ".join(aux["convention"].split()),
        ),
        crashes=tuple(_crash_patterns(raw, path) + _crash_patterns(common, common_path)),
        driver=driver,
        member_roles=dict(member_roles or {}),
        rules=rules,
        pair=parse_pair_facts(path, raw.get("pair")),
        frameworks=parse_frameworks(common_path, common.get("framework")),
        drafter_keys=parse_drafter_keys(common_path, common.get("drafter_key")),
    )
