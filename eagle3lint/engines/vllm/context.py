"""The context vLLM rules see: per-model EAGLE-3 facts, computed once and shared.

For a model class: does ``supports_eagle3()`` hold (every protocol member present in its MRO),
does it implement the setter itself, which object does the setter reach (the holder), does that
object inherit the mixin the default walk asserts, and does its ``forward`` collect.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Related
from eagle3lint.common.outcomes import REFUSED, STAGE_RUNNER, Effect, Requirement
from eagle3lint.engines.vllm.collect import CollectChecker, Verdict
from eagle3lint.engines.vllm.drafter_check import ConfigCrash, DrafterCrash, DrafterLoadChecker
from eagle3lint.engines.vllm.holders import RECORDED, RESOLVED, Holder, HolderFinder
from eagle3lint.engines.vllm.index import VllmIndex
from eagle3lint.engines.vllm.model_types import Checkpoint, TypeJudgement
from eagle3lint.engines.vllm.protocol import VllmContract, VllmProtocol
from eagle3lint.engines.vllm.recorded import RecordedCollect
from eagle3lint.engines.vllm.tristate import NO, UNKNOWN, YES
from eagle3lint.model.models import TARGET, ModelClass
from eagle3lint.source.index import ClassRef


@dataclass
class Declaration:
    """``supports_eagle3(cls)``, decided statically."""

    value: str  # YES | NO | UNKNOWN
    missing: list[str] = field(default_factory=list)  # protocol members the class lacks
    reason: str = ""


@dataclass
class VllmCheckContext(CheckContext):
    vllm: VllmContract | None = None
    all_models: list[ModelClass] = field(default_factory=list)
    _holders: HolderFinder | None = None
    _collect: CollectChecker | None = None
    _recorded: RecordedCollect | None = None
    _declared: dict[ClassRef, Declaration] = field(default_factory=dict)
    _mixin_ref: ClassRef | None = None
    _notes: dict[tuple[ClassRef, str | None], str] = field(default_factory=dict)
    _types: dict[tuple[ClassRef, str | None], TypeJudgement] = field(default_factory=dict)
    _drafter: DrafterLoadChecker | None = None
    _drafter_crashes: dict[ClassRef, DrafterCrash | None] = field(default_factory=dict)
    _config_crashes: dict[ClassRef, ConfigCrash | None] = field(default_factory=dict)

    @property
    def protocol(self) -> VllmProtocol | None:
        return self.vllm.protocol if self.vllm else None

    @property
    def vindex(self) -> VllmIndex:
        assert isinstance(self.index, VllmIndex)
        return self.index

    @property
    def holders(self) -> HolderFinder:
        if self._holders is None:
            self._holders = HolderFinder(self.vindex, self.protocol)
        return self._holders

    @property
    def collect(self) -> CollectChecker:
        if self._collect is None:
            vpack = self.vindex.vpack
            calls = frozenset(self.protocol.mixin.collect_methods) if self.protocol and self.protocol.mixin else frozenset()
            self._collect = CollectChecker(self.vindex, frozenset({vpack.capture_attribute}), calls)
        return self._collect

    def model_note(self, model: ModelClass) -> str:
        # Every finding on the model asks; the answer is the model's.
        key = (model.ref, model.variant)
        if key not in self._notes:
            self._notes[key] = self._allow_list_note(model)
        return self._notes[key]

    def gap_note(self, model: ModelClass, members: list[str]) -> str:
        proto = self.protocol
        if proto is None or not proto.check_function or self.declared(model.ref).value != NO:
            return ""
        if not set(members) <= {m.name for m in proto.members}:
            return ""
        note = f": it does not declare {proto.name}, so `{proto.check_function}()` is false"
        crash = self.drafter_crash(model)
        if crash is not None and self.options.active(self.drafter_condition(crash)):
            note += f" (but the drafter load crashes before that check: E3L018, `{crash.read.message}`)"
        return note

    # ---- the drafter load -----------------------------------------------------------------------
    def drafter_crash(self, model: ModelClass) -> DrafterCrash | None:
        """What the proposer's drafter load raises on for this target (before the support
        check), where the release has such reads and the index proves the attributes absent."""
        load = self.vllm.drafter_load if self.vllm else None
        if load is None or model.kind != TARGET or load.runner_condition() is None:
            return None
        if model.ref not in self._drafter_crashes:
            if self._drafter is None:
                self._drafter = DrafterLoadChecker(self.vindex, self.holders, load)
            self._drafter_crashes[model.ref] = self._drafter.crash(model.ref)
        return self._drafter_crashes[model.ref]

    def config_crash(self, model: ModelClass) -> ConfigCrash | None:
        """The drafter load's copy of an image-token id off a multimodal target's config, where
        every config class the model's architectures load is known and none defines the
        attribute its branch reads (E3L019)."""
        from eagle3lint.model.hf_types import defines

        contract = self.vllm
        load = contract.drafter_load if contract else None
        tables = contract.model_types if contract else None
        if load is None or tables is None or not load.config_reads or model.kind != TARGET or load.runner_condition() is None:
            return None
        if model.ref in self._config_crashes:
            return self._config_crashes[model.ref]
        self._config_crashes[model.ref] = None
        if any(generic in model.ref.module.split(".") for generic in self.vindex.vpack.any_model_type_modules):
            return None  # the Transformers backend serves any config
        if self._drafter is None:
            self._drafter = DrafterLoadChecker(self.vindex, self.holders, load)
        if not load.multimodal_flag or self._drafter.flag(model.ref, load.multimodal_flag) != YES:
            return None
        # ``get_model_name`` is the class's own name.
        read = load.config_read(model.ref.qualname.split(".")[-1])
        if read is None or len(read.path) != 1 or not model.architectures:
            return None  # a sub-config's attribute needs the sub-config's class: not judged
        if not self._holds_hf_config(model.ref, load.config_attribute):
            return None  # a sub-config (Qwen3-Omni's thinker_config), or what cannot be told
        configs: list[tuple[str, str]] = []
        for architecture in model.architectures:
            checkpoints = tables.checkpoints(architecture)
            if not checkpoints or any(not c.config_class for c in checkpoints):
                return None
            configs.extend((architecture, c.config_class) for c in checkpoints)
        if any(defines(name, read.path[0], tables.configs)[0] is not False for name in dict.fromkeys(c for _, c in configs)):
            return None
        crash = ConfigCrash(read, tuple(dict.fromkeys(configs)))
        self._config_crashes[model.ref] = crash
        return crash

    def _holds_hf_config(self, ref: ClassRef, attribute: str) -> bool:
        """Whether every ``self.<attribute> = ...`` of the ``__init__`` that sets it assigns the
        checkpoint's HF config itself (an expression ending in the pack's ``hf_config`` path,
        directly or through a local assigned only that)."""
        import textwrap

        source = self.vindex.vpack.drafter_hf_config
        lookup = self.index.lookup(ref, attribute)
        if not source or lookup.status != "found" or lookup.kind != "instance_attr" or lookup.owner is None:
            return False
        summary = self.index.class_summary(lookup.owner)
        module = self.index.module(lookup.owner.module)
        init = summary.methods.get("__init__") if summary is not None else None
        lines = self.index.snippets.lines(module.path) if module is not None else None
        if init is None or lines is None:
            return False
        try:
            tree = ast.parse(textwrap.dedent("\n".join(line.rstrip("\n") for line in lines[init.lineno - 1 : init.end_lineno])))
        except SyntaxError:
            return False

        def plain(node: ast.expr) -> str:
            if isinstance(node, ast.Call) and (getattr(node.func, "id", "") or getattr(node.func, "attr", "")) == "cast" and len(node.args) == 2:
                node = node.args[1]
            return ast.unparse(node).replace(" ", "")

        locals_: dict[str, list[str]] = {}
        held: list[str] = []
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    locals_.setdefault(target.id, []).append(plain(node.value))
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" and target.attr == attribute:
                    held.append(plain(node.value))
        wanted = source.replace(" ", "")

        def is_hf(text: str) -> bool:
            return text == wanted or text.endswith("." + wanted)

        return bool(held) and all(
            is_hf(text) or (text in locals_ and all(is_hf(v) for v in locals_[text])) for text in held
        )

    def drafter_condition(self, crash: DrafterCrash) -> tuple[Requirement, ...]:
        """The launch options the crash needs: the read's own (PP off) and the runner's."""
        load = self.vllm.drafter_load if self.vllm else None
        runner = load.runner_condition() if load is not None else None
        return (*crash.read.condition, *(runner or ()))

    def _allow_list_note(self, model: ModelClass) -> str:
        """What the model-type allow-list of older releases does to the model's checkpoints, as
        far as the tables of architectures and types prove it (``type_judgement``)."""
        judgement = self.type_judgement(model)
        allow = self.vllm.allow_list if self.vllm else None
        if judgement is None or allow is None:
            return ""
        where = f"{allow.path}:{allow.line}"
        name = model.summary.name
        if judgement.refused:
            if judgement.all_refused:
                return f"; besides, this vLLM refuses EAGLE-3 for `{name}` checkpoints before the weights load: {refused_phrase(judgement)} at {where} (E3L017)"
            return f"; besides, this vLLM refuses EAGLE-3 before the weights load for `{name}` checkpoints of {checkpoints_phrase(judgement.refused)}: not in the allow-list at {where} (E3L017)"
        if judgement.undetermined and not judgement.allowed:
            first = judgement.undetermined[0]
            return (
                f"; whether the model-type allow-list at {where} admits `{name}` checkpoints depends on the model they wrap "
                f"({first.model_type}: {first.text.via}): `eagle3lint verify --preflight-only` reads the real one"
            )
        return ""

    def type_judgement(self, model: ModelClass) -> TypeJudgement | None:
        """The model's checkpoints against the model-type allow-list, where the tree has one and
        the model is a target whose architectures name its checkpoints (the Transformers
        backend serves any type: its architectures say nothing of them)."""
        contract = self.vllm
        if contract is None or contract.allow_list is None or contract.model_types is None or model.kind != TARGET:
            return None
        module_parts = model.ref.module.split(".")
        if any(generic in module_parts for generic in self.vindex.vpack.any_model_type_modules):
            return None
        key = (model.ref, model.variant)
        if key not in self._types:
            self._types[key] = contract.model_types.judge(model.architectures, contract.allow_list.model_types)
        return self._types[key]

    # ---- launch options -----------------------------------------------------------------------
    def pp_condition(self, runner: str = "") -> tuple[Requirement, ...]:
        """Pipeline parallelism on (with this model-runner generation, when one is named)."""
        return (("pp", "on"), ("runner", runner)) if runner else (("pp", "on"),)

    def pp_flag(self, ref: ClassRef) -> tuple[bool | None, ClassRef | None]:
        """The decoder's ``supports_aux_hidden_states_over_pp`` as its class sees it (the nearest
        class attribute along the MRO, read from its line), and the class that sets it."""
        flag = self.vindex.vpack.pp_flag
        for current in self.index.mro(ref).classes:
            summary = self.index.class_summary(current)
            module = self.index.module(current.module)
            if summary is None or module is None or flag not in summary.class_attrs:
                continue
            line = summary.class_attrs[flag]
            stmt = self.vindex.snippets.statement_at(module.path, line, line, line)
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                return value.value, current
            return None, current
        return False, None

    def refused_over_pp(self, model: ModelClass) -> bool:
        """Whether the runner that reads the PP flag refuses EAGLE-3 with pipeline parallelism
        for this model (a holder whose decoder does not set it)."""
        guard = self.vllm.pp_guard if self.vllm else None
        if guard is None or model.kind != TARGET or not self.claims_support(model.ref):
            return False
        holder = self.holder(model.ref)
        if holder.status != RESOLVED or not holder.classes:
            return False
        if holder.kind == RECORDED and holder.recording is not None:
            # The runner asks the decoder for the flag; here that is the model the recorders
            # are registered in (``self.model``). One from outside the engine (the library's)
            # cannot carry vLLM's flag.
            recording_model = [
                held for cls in holder.classes for held in self.index.attribute_classes(cls, holder.recording.store[0])
            ]
            if not recording_model or not all(isinstance(held, ClassRef) for held in recording_model):
                return True
            return any(self.pp_flag(held)[0] is not True for held in recording_model if isinstance(held, ClassRef))
        return any(self.pp_flag(cls)[0] is not True for cls in holder.classes)

    def engine_effects(self, model: ModelClass) -> list[Effect]:
        effects = list(super().engine_effects(model))
        guard = self.vllm.pp_guard if self.vllm else None
        if guard is not None and self.refused_over_pp(model):
            evidence = Related(str(self.index.engine.source_root / guard.path), guard.line, f"the runner refuses EAGLE-3 with PP unless the decoder sets `{guard.flag}`")
            effects.append(
                Effect(REFUSED, STAGE_RUNNER, evidence, self.pp_condition(guard.runner), f"its decoder does not set `{guard.flag}`")
            )
        return effects

    # ---- supports_eagle3() --------------------------------------------------------------------
    def declared(self, ref: ClassRef) -> Declaration:
        cached = self._declared.get(ref)
        if cached is not None:
            return cached
        proto = self.protocol
        if proto is None:
            result = Declaration(UNKNOWN, reason="this tree has no protocol")
        else:
            missing: list[str] = []
            unknown = ""
            for member in proto.members:
                lookup = self.index.lookup(ref, member.name)
                if lookup.status == "missing":
                    missing.append(member.name)
                elif lookup.status != "found" and not unknown:
                    unknown = lookup.reason or f"cannot tell whether it has {member.name}"
            if missing:
                result = Declaration(NO, missing)
            elif unknown:
                result = Declaration(UNKNOWN, reason=unknown)
            else:
                result = Declaration(YES)
        self._declared[ref] = result
        return result

    def implements_setter(self, ref: ClassRef) -> bool:
        """The class (or a base that is not the protocol) defines the setter with a real body."""
        lookup = self.holders.setter_lookup(ref)
        fn = lookup.function
        return lookup.status == "found" and fn is not None and not fn.is_stub and not self.holders.is_protocol_class(lookup.owner)

    def claims_support(self, ref: ClassRef) -> bool:
        """The runner will call the setter: the protocol holds, or (older trees) the method exists."""
        if self.protocol is not None:
            return self.declared(ref).value == YES
        return self.implements_setter(ref)

    # ---- holder facts -------------------------------------------------------------------------
    def holder(self, ref: ClassRef, assume_default: bool = False) -> Holder:
        return self.holders.holder(ref, assume_default)

    def mixin_ref(self) -> ClassRef | None:
        proto = self.protocol
        if self._mixin_ref is None and proto is not None and proto.mixin is not None:
            self._mixin_ref = ClassRef(proto.module, proto.mixin.name)
        return self._mixin_ref

    def inherits_mixin(self, ref: ClassRef) -> str:
        mixin = self.mixin_ref()
        if mixin is None:
            return UNKNOWN
        mro = self.index.mro(ref)
        if mixin in mro.classes:
            return YES
        return UNKNOWN if mro.unknown_bases else NO

    def collects(self, ref: ClassRef) -> Verdict:
        """Whether ``ref``'s decoder loop collects the ids recorded on it (an attribute holder)."""
        return self.collect.collects(ref)

    def holder_collects(self, holder: Holder, ref: ClassRef) -> Verdict:
        """Whether ``ref``, one of ``holder``'s classes, hands the runner the aux hidden states:
        its decoder loop collects (an attribute holder), or its ``forward`` returns what the
        setter's recorder recorded (a recorded one)."""
        if holder.kind == RECORDED and holder.recording is not None:
            if self._recorded is None:
                self._recorded = RecordedCollect(self.vindex)
            return self._recorded.collects(ref, holder.recording)
        return self.collects(ref)


def checkpoints_phrase(checkpoints: list[Checkpoint]) -> str:
    """``MistralModel`` (mistral), ``Phi3ForCausalLM`` (phi3) ..., one entry per architecture."""
    by_arch: dict[str, list[str]] = {}
    for checkpoint in checkpoints:
        by_arch.setdefault(checkpoint.architecture, []).append(checkpoint.describe())
    return ", ".join(f"`{arch}` ({', '.join(types)})" for arch, types in by_arch.items())


def refused_phrase(judgement: TypeJudgement) -> str:
    """``model type mistral is not in the allow-list`` (the effect's reason)."""
    types = list(dict.fromkeys(c.text.model_type or c.model_type for c in judgement.refused))
    return f"model type{'s' if len(types) > 1 else ''} {', '.join(types)} {'are' if len(types) > 1 else 'is'} not in the allow-list"
