"""What an engine contributes to a run: the hooks the core calls, and nothing else.

An engine (SGLang, vLLM, ...) lives in ``eagle3lint/engines/<name>/`` as an :class:`EngineAdapter`
subclass. The core drives a run through these hooks only; every default below is what an engine
that needs nothing special gets (a plain project index, no extra contract facts, no extra rules).
Adapters build on the core's lower half (index, summaries, contract types, rule base, fix
machinery) and never on the code that drives a run, so the dependency points one way. The base
itself sits below the rule, fix and verify machinery: what it hands out of those it names by
its ports (``eagle3lint.model.ports``), so nothing it imports, even for type checking, leads back to it.

The hooks, in the order of a run:

1. the tree: :meth:`pack` (``rules/<name>.toml``), :meth:`is_package_root`, :meth:`read_version`,
   :meth:`libraries_wanted` (packages read beside it: transformers' model-type tables for vLLM);
2. the contract: :meth:`contract_extension` (check functions, facts kept in ``Contract.extra``);
3. the index and models: :meth:`build_index`, :meth:`load_models` (while files parse on every
   core), :meth:`check_context` (the models and the context its rules see);
4. rules and fixes: :meth:`rules`, :attr:`replaces_core_rules`, :meth:`fix_patterns`;
5. ``verify``: :meth:`server` (command line, HTTP client, crash knowledge, pre-flight extras).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from eagle3lint.source.engine import read_version
from eagle3lint.source.rulepack import RulePack, load_pack

if TYPE_CHECKING:
    from eagle3lint.model.contract_types import Contract, ContractExtension
    from eagle3lint.model.models import ModelClass, UnresolvedEntry
    from eagle3lint.model.ports import ContextPort, FixPatternPort, RulePort, ServerPort
    from eagle3lint.source.engine import Engine
    from eagle3lint.source.index import ProjectIndex


@dataclass(frozen=True)
class LibraryWanted:
    """A package whose source the adapter's analysis reads (never imports): the release the
    engine pins is downloaded once (the pin read from the engine's metadata, or from these
    requirement files of a checkout, relative to the folder holding the engine's package), else
    the installed one found on ``sys.path``."""

    name: str
    requirement_files: tuple[str, ...] = ()
    # The file, relative to the package folder, without which it is of no use to the analysis.
    marker: str = "__init__.py"


@dataclass
class ModelsInContext:
    """What :meth:`EngineAdapter.check_context` hands the rules: every model class found (in
    the reporting scope or not), the registrations that name no class, and the rule context."""

    models: list[ModelClass]
    unresolved: list[UnresolvedEntry]
    context: ContextPort


class EngineAdapter:
    """One engine. Subclasses set :attr:`name` (the rule pack ``rules/<name>.toml`` and the
    templates ``rules/templates/<name>/`` follow from it) and override the hooks they need."""

    name: ClassVar[str]
    # The codes and names of :meth:`rules`, so that ``--select`` and the settings can be
    # validated without importing any rule (a test keeps the two equal).
    rule_codes: ClassVar[Mapping[str, str]] = {}
    # Core rules this engine's own rules replace (vLLM's holder analysis reports what SGLang's
    # presence-not-provable note would, with more to say).
    replaces_core_rules: ClassVar[frozenset[str]] = frozenset()

    # ---- the tree ------------------------------------------------------------------------
    def pack(self) -> RulePack:
        return load_pack(self.name)

    def is_package_root(self, folder: Path) -> bool:
        pack = self.pack()
        return folder.name == pack.package and (folder / pack.marker).is_dir()

    def read_version(self, root: Path) -> str:
        """The version in the package's version files, else ``"unknown"``."""
        return read_version(root, self.pack())

    def option_defaults(self, engine: Engine) -> dict[str, str]:
        """Launch options whose default the release's own source decides (the rule pack says
        ``default = ""``), by name: vLLM's model-runner generation."""
        return {}

    def libraries_wanted(self, engine: Engine) -> tuple[LibraryWanted, ...]:
        """Packages whose source the analysis of this tree reads beside it (the upper half finds
        them and hands them over as ``Engine.libraries``); cheap, asked on every run."""
        return ()

    # ---- the contract ----------------------------------------------------------------------
    def contract_extension(self, engine: Engine) -> ContractExtension:
        """What the engine adds to the call-site scan (``eagle3lint.model.contract_types.ContractExtension``).
        Called in the worker that scans the call sites, so the reading it does runs beside the
        model parse."""
        from eagle3lint.model.contract_types import ContractExtension

        return ContractExtension()

    # ---- the index and the models ----------------------------------------------------------
    def walk_names(self, engine: Engine) -> frozenset[str]:
        """Methods whose bodies the summaries walk in full: the members, their former names,
        and what the pack's ``walk_methods`` asks for."""
        pack = engine.pack
        return (
            frozenset(pack.members)
            | frozenset(n for spec in pack.members.values() for n in spec.former_names)
            | frozenset(pack.walk_methods)
        )

    def build_index(self, engine: Engine, texts: Mapping[str, str] | None = None) -> ProjectIndex:
        """``texts``: files the fixer edited in memory (path -> text), for analyses that re-read
        function bodies instead of the summaries."""
        from eagle3lint.source.index import ProjectIndex
        from eagle3lint.source.snippets import SnippetReader

        index = ProjectIndex(engine, walk_names=self.walk_names(engine))
        index.snippets = SnippetReader(texts)
        return index

    def load_models(self, index: ProjectIndex, scope: list[Path], extra_files: list[Path]) -> object:
        """Load what model discovery starts from, while the workers that parse files are up
        (one batch parses on every core). The value is handed to :meth:`check_context`."""
        raise NotImplementedError

    def check_context(self, index: ProjectIndex, contract: Contract, scope: list[Path], loaded: object) -> ModelsInContext:
        raise NotImplementedError

    # ---- rules and fixes -------------------------------------------------------------------
    def rules(self) -> tuple[type[RulePort], ...]:
        """The engine's own rules (the core's apply to every engine)."""
        return ()

    def fix_patterns(self) -> tuple[type[FixPatternPort], ...]:
        """The engine's fix patterns, tried in order for each finding."""
        return ()

    # ---- verify ----------------------------------------------------------------------------
    def server(self) -> ServerPort:
        """How ``verify`` starts, talks to and reads this engine's server."""
        raise NotImplementedError(f"verify does not support {self.name}")
