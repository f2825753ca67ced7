"""What the contract is made of: ``ContractSite`` (one access of an interface member, with its
role and guard), ``MemberContract``, ``Contract``, and the ``ContractExtension`` an engine adds
(its check functions, ``CheckCall``); plain data (split out of ``contract``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle3lint.common.findings import FileError
from eagle3lint.model.launch_checks import LaunchRefusal
from eagle3lint.source.engine import Engine

FATAL_GUARDS = ("none", "error")


@dataclass(frozen=True)
class ContractSite:
    member: str
    path: str  # relative to the engine's source root: <package>/...
    line: int
    column: int
    function: str
    receiver: str
    access: str  # "call" | "load" | "probe"
    role: str  # "target" | "draft"
    guard: str  # "none" | "error" | "fallback"
    positional_args: int = 0
    keyword_args: tuple[str, ...] = ()
    branch: str | None = None  # "eagle3" | "not-eagle3" | None

    @property
    def fatal(self) -> bool:
        return self.access != "probe" and self.guard in FATAL_GUARDS

    def describe_guard(self) -> str:
        return {
            "none": "unguarded: a bare AttributeError at start-up",
            "error": "guarded: the engine refuses EAGLE-3 with its own message when it is missing",
            "fallback": "guarded with a fallback: optional",
        }[self.guard] if self.access != "probe" else "probe (hasattr)"

    def to_json(self) -> dict[str, Any]:
        return {
            "member": self.member,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "function": self.function,
            "receiver": self.receiver,
            "access": self.access,
            "role": self.role,
            "guard": self.guard,
            "positional_args": self.positional_args,
            "keyword_args": list(self.keyword_args),
            "branch": self.branch,
        }


@dataclass
class MemberContract:
    name: str
    kind: str
    known: bool  # listed in the rule pack
    summary: str = ""
    sites: list[ContractSite] = field(default_factory=list)

    def fatal_sites(self, role: str, branch_filter: str | None = None) -> list[ContractSite]:
        """Sites that make the member required for ``role``.

        ``branch_filter`` "eagle3" drops sites only reached by non-EAGLE-3 algorithms, and
        "not-eagle3" drops EAGLE-3-only sites (for MTP/NextN draft heads).
        """
        out = []
        for site in self.sites:
            if site.role != role or not site.fatal:
                continue
            if branch_filter == "eagle3" and site.branch == "not-eagle3":
                continue
            if branch_filter == "not-eagle3" and site.branch == "eagle3":
                continue
            out.append(site)
        return out

    def strongest_guard(self, role: str) -> str | None:
        guards = {s.guard for s in self.sites if s.role == role and s.access != "probe"}
        for guard in ("none", "error", "fallback"):
            if guard in guards:
                return guard
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "known": self.known,
            "summary": self.summary,
            "required_for": sorted({s.role for s in self.sites if s.fatal}),
            "guard": {role: self.strongest_guard(role) for role in ("target", "draft") if self.strongest_guard(role)},
            "sites": [s.to_json() for s in self.sites],
        }


@dataclass
class Contract:
    engine: Engine
    members: dict[str, MemberContract]
    scanned_files: int = 0
    errors: list[FileError] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # engine-specific facts, by engine name
    # The engine's launch checks that refuse EAGLE-3 under a launch option (``launch_checks``).
    launch_refusals: list[LaunchRefusal] = field(default_factory=list)

    def required(self, role: str) -> list[MemberContract]:
        return [m for m in self.members.values() if m.known and m.fatal_sites(role)]

    def unknown_members(self) -> list[MemberContract]:
        return [m for m in self.members.values() if not m.known]

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine.to_json(),
            "members": [m.to_json() for m in self.members.values()],
            "scanned_files": self.scanned_files,
            "errors": [e.to_json() for e in self.errors],
            "launch_refusals": [r.to_json() for r in self.launch_refusals],
            **{key: value.to_json() if hasattr(value, "to_json") else value for key, value in self.extra.items()},
        }


# Engine check functions that vouch for several members at once: vLLM's
# ``supports_eagle3(model)`` is true only when the model has every protocol member.
CheckFunctions = dict[str, frozenset[str]]


@dataclass(frozen=True)
class CheckCall:
    """A call of an engine check function (``supports_eagle3(self.get_model())``)."""

    check: str
    path: str
    line: int
    function: str
    argument: str
    guard: str  # "error" when a false result raises, else "fallback"


class ContractExtension:
    """What an engine adds to the call-site scan (``EngineAdapter.contract_extension``). The
    default adds nothing."""

    def check_functions(self) -> dict[str, frozenset[str]]:
        """Engine functions that vouch for several members at once, by name (vLLM's
        ``supports_eagle3(model)`` holds only when the model has every protocol member)."""
        return {}

    def errors(self) -> list[FileError]:
        """Files the extension could not read (reported like the scan's own)."""
        return []

    def extra(self, check_calls: list[CheckCall]) -> dict[str, Any]:
        """Engine facts kept in ``Contract.extra`` (shown by ``contract``, read by the rules)."""
        return {}
