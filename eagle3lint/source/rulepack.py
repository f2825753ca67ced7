"""Declarative per-engine knowledge (``rules/<engine>.toml``): members, roles, classification."""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from eagle3lint.common.errors import UsageError
from eagle3lint.source.capture_facts import CaptureSpec


def rules_dir() -> Path:
    """The ``rules/`` folder: inside the installed wheel, or beside the package in a checkout."""
    here = Path(__file__).resolve().parent.parent  # the package (this module is in source/)
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise UsageError(f"rule packs not found next to {here} (broken installation?)")


@dataclass(frozen=True)
class MemberSpec:
    name: str
    kind: str  # "method" | "attribute"
    role: str  # default role when the receiver does not say: "target" | "draft"
    summary: str
    template: str | None = None
    companions: tuple[str, ...] = ()
    former_names: tuple[str, ...] = ()
    # Required by configuration even where the engine's source does not call it.
    required: bool = False
    origin: str = ""  # the configuration file that added it, if any
    # A dotted name (``model.embed_tokens``) is an attribute chain the engine or a plugin reads
    # off the model: only receivers matching ``receiver`` count (the target, never ``self.model``
    # of a proposer, which is its draft).
    receiver: re.Pattern[str] | None = None

    @property
    def is_chain(self) -> bool:
        return "." in self.name


@dataclass(frozen=True)
class OptionSpec:
    """A launch option that changes the code an EAGLE-3 target runs (``[[option]]``)."""

    name: str  # as ``--engine-option`` takes it: "pp", "two-batch-overlap", "runner"
    summary: str
    flag: str  # how the engine is told: "--enable-two-batch-overlap", "VLLM_USE_V2_MODEL_RUNNER"
    # "switch" (on/off), "size" (on when the size given is over 1), "choice" (one of values)
    kind: str
    default: str  # "off", "1", or a value; "" when the engine's source decides (an adapter reads it)
    values: tuple[str, ...] = ()  # a choice's values
    # What the option's test looks like in a model's source (``forward_batch.can_run_tbo``):
    # the capture analysis follows the branch it guards.
    tests: tuple[str, ...] = ()
    # Messages of the engine's launch checks that refuse EAGLE-3 under the option (regular
    # expressions; each is confirmed in the release's own source before it is believed).
    refusals: tuple[re.Pattern[str], ...] = ()
    # Where the engine's launch checks live (relative to the package root; a trailing / is a folder).
    refusal_files: tuple[str, ...] = ()
    # How a user sets each value of a choice, where that is not ``flag=value``.
    spelled: tuple[tuple[str, str], ...] = ()

    def on_value(self) -> str:
        """The value a bare ``--engine-option NAME`` means."""
        return self.values[-1] if self.kind == "choice" and self.values else "on"

    def describe(self, value: str) -> str:
        """How a user launches with it: ``--enable-two-batch-overlap``, ``--pp-size > 1``; off
        (a cause that needs the option off): ``--pp-size 1``, ``without --enable-...``."""
        off = value == "off"
        if self.kind == "size":
            return f"{self.flag} 1" if off else f"{self.flag} > 1"
        if self.kind == "choice":
            return dict(self.spelled).get(value, f"{self.flag}={value}")
        return f"without {self.flag}" if off else self.flag

    def described_on(self) -> str:
        """How a user turns it on (:meth:`describe` of :meth:`on_value`)."""
        return self.describe(self.on_value())


@dataclass(frozen=True)
class OtherPattern:
    pattern: re.Pattern[str]
    reason: str


@dataclass(frozen=True)
class RulePack:
    engine: str
    package: str
    marker: str
    models: tuple[str, ...]
    version_files: tuple[str, ...]
    model_receiver: re.Pattern[str]
    unknown_member_pattern: re.Pattern[str]
    scan_needles: tuple[str, ...]
    scan_skip: tuple[str, ...]
    inner_model_attributes: tuple[str, ...]
    external_bases_without_members: tuple[str, ...]
    role_words: dict[str, tuple[str, ...]]
    eagle3_branch_markers: tuple[str, ...]
    members: dict[str, MemberSpec]
    eagle3_draft_pattern: re.Pattern[str]
    draft_pattern: re.Pattern[str]
    other_patterns: tuple[OtherPattern, ...]
    lm_head_attributes: tuple[str, ...]
    target_name_pattern: re.Pattern[str]
    # Classes whose construction may hold a model (``self.language_model = X(...)``).
    inner_model_class_pattern: re.Pattern[str]
    # Method bodies walked in full besides the members (data-flow rules need ``forward``).
    walk_methods: tuple[str, ...] = ()
    # Draft-head names that hold even where a registry section says "generative model".
    draft_by_name_pattern: re.Pattern[str] = re.compile("(?!)")
    # [branches] eagle3_files: engine files (relative to the package root) whose call sites only
    # EAGLE-3 reaches, as if under an EAGLE-3 branch (a proposer module registered for it).
    eagle3_branch_files: tuple[str, ...] = ()
    # [verdict]: what counts as EAGLE-3 code in a class, its MRO or its inner models (members
    # only EAGLE-3 uses; attributes of the hidden-state capture). A target without any of it does
    # not implement EAGLE-3 (one information finding), one with some and an error is broken.
    eagle3_members: tuple[str, ...] = ()
    capture_attributes: tuple[str, ...] = ()
    # [capture]: what the capture analysis collects while files are summarised (None: nothing).
    capture: CaptureSpec | None = None
    # [plugins]: the entry-point groups an out-of-tree package extends the engine through, and
    # the text that marks one of its files as a model file (read by the index, not scanned for
    # the engine's calls on models).
    plugin_groups: tuple[str, ...] = ()
    plugin_model_pattern: re.Pattern[str] | None = None
    # [[option]]: launch options that change what an EAGLE-3 target runs, by name.
    options: dict[str, OptionSpec] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    digest: str = ""

    def role_of_receiver(self, receiver: str, member: str) -> str:
        lowered = receiver.lower()
        for role, words in self.role_words.items():
            if any(word in lowered for word in words):
                return role
        spec = self.members.get(member)
        return spec.role if spec else "target"

    def is_external_without_members(self, qualified: str) -> bool:
        top = qualified.split(".")[0]
        return top in self.external_bases_without_members or qualified in ("object", "Protocol")


def _compile(pack_path: Path, key: str, pattern: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise UsageError(f"{pack_path}: '{key}' is not a valid regular expression: {exc}") from exc


def _require(pack_path: Path, data: dict[str, Any], key: str, kind: type) -> Any:
    if key not in data:
        raise UsageError(f"{pack_path}: missing required key '{key}'")
    value = data[key]
    if not isinstance(value, kind):
        raise UsageError(f"{pack_path}: '{key}' must be a {kind.__name__}")
    return value


def _strings(pack_path: Path, table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key.rsplit(".", 1)[-1], [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{pack_path}: '{key}' must be a list of strings")
    return tuple(value)


def _capture_spec(pack_path: Path, table: Any) -> CaptureSpec | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{pack_path}: [capture] must be a table")
    setters = _strings(pack_path, table, "capture.setters")
    functions = _strings(pack_path, table, "capture.functions")
    words = _strings(pack_path, table, "capture.words")
    collect = _strings(pack_path, table, "capture.collect_calls")
    collect_reads = _strings(pack_path, table, "capture.collect_reads")
    logits_call, logits_keyword = table.get("logits_call", ""), table.get("logits_keyword", "")
    if not isinstance(logits_call, str) or not isinstance(logits_keyword, str):
        raise UsageError(f"{pack_path}: capture.logits_call and capture.logits_keyword must be strings")
    initial = table.get("initial", {})
    ids = table.get("ids", "output")
    if not isinstance(initial, dict) or not all(isinstance(v, str) for v in initial.values()):
        raise UsageError(f"{pack_path}: capture.initial must be a table of strings (Python expressions)")
    if ids not in ("output", "input"):
        raise UsageError(f"{pack_path}: capture.ids must be 'output' or 'input'")
    report_uncollected = table.get("report_uncollected", True)
    if not isinstance(report_uncollected, bool):
        raise UsageError(f"{pack_path}: capture.report_uncollected must be true or false")
    uncaptured = table.get("uncaptured", "silent")
    if uncaptured not in ("silent", "crash"):
        raise UsageError(f"{pack_path}: capture.uncaptured must be 'silent' or 'crash'")
    return CaptureSpec(
        functions=frozenset(functions) | frozenset(setters),
        setters=frozenset(setters),
        eagle3_setter=setters[0] if setters else "",
        flag=str(table.get("flag", "")),
        initial=tuple(sorted(initial.items())),
        ids=ids,
        report_uncollected=report_uncollected,
        uncaptured=uncaptured,
        words=words or ("capture", "aux_hidden_state"),
        collect_calls=frozenset(collect),
        collect_reads=frozenset(collect_reads),
        logits_call=logits_call,
        logits_keyword=logits_keyword,
    )


def _plugin_model_pattern(pack_path: Path, patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return _compile(pack_path, "plugins.model_patterns", "|".join(f"(?:{p})" for p in patterns), re.M)


def _table(pack_path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    table = data.get(key, {})
    if not isinstance(table, dict):
        raise UsageError(f"{pack_path}: [{key}] must be a table")
    return table


_OPTION_KINDS = ("switch", "size", "choice")


def _options(pack_path: Path, entries: Any) -> dict[str, OptionSpec]:
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{pack_path}: [[option]] must be a list of tables")
    options: dict[str, OptionSpec] = {}
    for entry in entries:
        name = entry.get("name")
        if not isinstance(name, str) or not name or name == "all":
            raise UsageError(f"{pack_path}: an [[option]] lacks a 'name' (or is named 'all', which means every option)")
        kind = entry.get("kind", "switch")
        if kind not in _OPTION_KINDS:
            raise UsageError(f"{pack_path}: option {name}: kind must be one of {', '.join(_OPTION_KINDS)}")
        table = {**entry}
        values = _strings(pack_path, table, f"option.{name}.values")
        if kind == "choice" and not values:
            raise UsageError(f"{pack_path}: option {name}: a choice needs 'values'")
        default = entry.get("default", "off" if kind == "switch" else "1" if kind == "size" else "")
        if not isinstance(default, str) or (kind == "choice" and default and default not in values):
            raise UsageError(f"{pack_path}: option {name}: 'default' must be a string (one of its values)")
        for key in ("flag", "summary"):
            if not isinstance(entry.get(key, ""), str):
                raise UsageError(f"{pack_path}: option {name}: '{key}' must be a string")
        options[name] = OptionSpec(
            name=name,
            summary=entry.get("summary", name),
            flag=entry.get("flag", f"--{name}"),
            kind=kind,
            default=default,
            values=values,
            tests=_strings(pack_path, table, f"option.{name}.tests"),
            refusals=tuple(
                _compile(pack_path, f"option {name}: refusals", p) for p in _strings(pack_path, table, f"option.{name}.refusals")
            ),
            refusal_files=_strings(pack_path, table, f"option.{name}.refusal_files"),
            spelled=_spelled(pack_path, name, entry.get("spelled", {}), values),
        )
    return options


def _with_option_tests(capture: CaptureSpec | None, options: dict[str, OptionSpec]) -> CaptureSpec | None:
    """The capture analysis follows the branches the options' tests guard."""
    tests = tuple((o.name, o.tests) for o in options.values() if o.tests)
    if capture is None or not tests:
        return capture
    import dataclasses

    return dataclasses.replace(capture, option_tests=tests)


def _spelled(pack_path: Path, name: str, table: Any, values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    if not isinstance(table, dict) or not all(isinstance(v, str) and k in values for k, v in table.items()):
        raise UsageError(f"{pack_path}: option {name}: 'spelled' must map its values to strings")
    return tuple(sorted(table.items()))


def parse_pack(pack_path: Path, data: dict[str, Any], digest: str) -> RulePack:
    members: dict[str, MemberSpec] = {}
    for entry in _require(pack_path, data, "member", list):
        name = entry.get("name")
        if not isinstance(name, str):
            raise UsageError(f"{pack_path}: a [[member]] lacks a string 'name'")
        kind = entry.get("kind", "method")
        role = entry.get("role", "target")
        if kind not in ("method", "attribute"):
            raise UsageError(f"{pack_path}: member {name}: kind must be 'method' or 'attribute'")
        if role not in ("target", "draft"):
            raise UsageError(f"{pack_path}: member {name}: role must be 'target' or 'draft'")
        members[name] = MemberSpec(
            name=name,
            kind=kind,
            role=role,
            summary=entry.get("summary", ""),
            template=entry.get("template"),
            companions=tuple(entry.get("companions", ())),
            former_names=tuple(entry.get("former_names", ())),
            receiver=_compile(pack_path, f"member {name}: receiver", entry["receiver"]) if "receiver" in entry else None,
        )
        if "." in name and members[name].receiver is None:
            raise UsageError(f"{pack_path}: member {name}: an attribute chain needs a 'receiver' pattern")
    classify = data.get("classify", {})
    others = tuple(
        OtherPattern(_compile(pack_path, "classify.other", o["pattern"]), o["reason"])
        for o in classify.get("other", [])
    )
    roles = data.get("roles", {})
    verdict = data.get("verdict", {})
    if not isinstance(verdict, dict):
        raise UsageError(f"{pack_path}: [verdict] must be a table")
    return RulePack(
        engine=_require(pack_path, data, "engine", str),
        package=_require(pack_path, data, "package", str),
        marker=_require(pack_path, data, "marker", str),
        models=tuple(_require(pack_path, data, "models", list)),
        version_files=tuple(data.get("version_files", [])),
        model_receiver=_compile(pack_path, "model_receiver", _require(pack_path, data, "model_receiver", str)),
        unknown_member_pattern=_compile(pack_path, "unknown_member_pattern", data.get("unknown_member_pattern", "(?!)")),
        scan_needles=tuple(data.get("scan_needles", [])),
        scan_skip=tuple(data.get("scan_skip", [])),
        inner_model_attributes=tuple(data.get("inner_model_attributes", [])),
        external_bases_without_members=tuple(data.get("external_bases_without_members", [])),
        role_words={role: tuple(words) for role, words in roles.items()},
        eagle3_branch_markers=tuple(data.get("branches", {}).get("eagle3", [])),
        eagle3_branch_files=tuple(data.get("branches", {}).get("eagle3_files", [])),
        members=members,
        eagle3_draft_pattern=_compile(pack_path, "classify.eagle3_draft", classify.get("eagle3_draft", "(?!)")),
        draft_pattern=_compile(pack_path, "classify.draft", classify.get("draft", "(?!)")),
        draft_by_name_pattern=_compile(pack_path, "classify.draft_by_name", classify.get("draft_by_name", "(?!)")),
        other_patterns=others,
        lm_head_attributes=tuple(classify.get("lm_head_attributes", ["lm_head"])),
        target_name_pattern=_compile(pack_path, "classify.target_name", classify.get("target_name", "(?!)")),
        inner_model_class_pattern=_compile(pack_path, "inner_model_class", data.get("inner_model_class", ".")),
        walk_methods=tuple(data.get("walk_methods", [])),
        eagle3_members=_strings(pack_path, verdict, "verdict.eagle3_members"),
        capture_attributes=_strings(pack_path, verdict, "verdict.capture_attributes"),
        # Read once (its refusal patterns compile): the capture follows its tests, the pack keeps it.
        capture=_with_option_tests(_capture_spec(pack_path, data.get("capture")), (options := _options(pack_path, data.get("option", [])))),
        plugin_groups=_strings(pack_path, _table(pack_path, data, "plugins"), "plugins.entry_point_groups"),
        plugin_model_pattern=_plugin_model_pattern(pack_path, _strings(pack_path, _table(pack_path, data, "plugins"), "plugins.model_patterns")),
        options=options,
        raw=data,
        digest=digest,
    )


@cache
def load_pack(engine: str) -> RulePack:
    """``rules/<engine>.toml``, parsed once per process."""
    pack_path = rules_dir() / f"{engine}.toml"
    try:
        raw = pack_path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{pack_path}: cannot read rule pack: {exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{pack_path}: invalid TOML: {exc}") from exc
    return parse_pack(pack_path, data, hashlib.sha256(raw).hexdigest()[:16])


def extend_pack(pack: RulePack, extra: list[MemberSpec]) -> RulePack:
    """The pack plus members a project's configuration adds (its own interface extensions)."""
    if not extra:
        return pack
    import dataclasses

    members = dict(pack.members)
    for spec in extra:
        members[spec.name] = spec
    names = ",".join(f"{m.name}:{m.kind}:{m.role}:{m.required}" for m in extra)
    digest = hashlib.sha256(f"{pack.digest}|{names}".encode()).hexdigest()[:16]
    return dataclasses.replace(pack, members=members, digest=digest)
