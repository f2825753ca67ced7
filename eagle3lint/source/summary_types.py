"""What a summary holds: plain, picklable data (``ModuleSummary``, ``ClassSummary``,
``FunctionSummary``, constructions, instance attributes, parameters), the cache stores and the
index links (split out of ``summary``; the walk that fills them is in ``summary_walk`` and
``summary``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from eagle3lint.source.capture_facts import CaptureFacts
from eagle3lint.source.layout import TopStatement
from eagle3lint.source.suppressions import FileSuppressions


@dataclass
class Params:
    """What positional/keyword arguments a function accepts (``self`` excluded)."""

    positional: list[str] = field(default_factory=list)
    required_positional: int = 0
    has_varargs: bool = False
    keyword_only: list[str] = field(default_factory=list)
    required_keyword_only: list[str] = field(default_factory=list)
    has_varkw: bool = False

    def accepts_positional(self, count: int) -> bool:
        if self.required_keyword_only:
            return False
        if count < self.required_positional:
            return False
        return self.has_varargs or count <= len(self.positional)

    def render(self) -> str:
        parts = ["self", *self.positional]
        if self.has_varargs:
            parts.append("*args")
        elif self.keyword_only:
            parts.append("*")
        parts.extend(self.keyword_only)
        if self.has_varkw:
            parts.append("**kwargs")
        return "(" + ", ".join(parts) + ")"


@dataclass
class FunctionSummary:
    name: str
    lineno: int
    col: int
    end_lineno: int
    params: Params
    is_stub: bool
    decorators: list[str]
    # ``self.<attr>`` chains reached in the body: ("language_model", "get_embed_and_head") for
    # ``self.language_model.get_embed_and_head()``; ("get_language_model()", "x") for calls.
    self_chains: list[tuple[str, str]] = field(default_factory=list)
    # ``return self.<attr>`` (properties that expose an inner module).
    returns_self_attr: str | None = None
    # Every ``return`` returns ``self`` itself (``get_language_model`` of a class that is its own
    # language model).
    returns_self: bool = False
    # Every ``self.<attr>`` read in the body (capture data-flow rules use it).
    self_reads: set[str] = field(default_factory=set)
    # Names of functions/methods called in the body (``self.helper()`` -> "helper").
    calls: set[str] = field(default_factory=set)
    # ``hasattr(self.<attr>, "<member>")`` probes: a forward the method makes only when present.
    probed_chains: set[tuple[str, str]] = field(default_factory=set)
    # The ``self.a.b...`` chains every call reads before anything can stop it (walked methods
    # only; ``eagle3lint.source.member_reads``): (chain after ``self``, line, column).
    sure_reads: list[tuple[tuple[str, ...], int, int]] = field(default_factory=list)
    walked: bool = False
    # Every call raises: a top-level ``raise`` reached through straight-line code only (the
    # ``__init__`` of a stand-in class for platforms without the model).
    always_raises: bool = False
    # ``__init__`` only: the ``self.<attr>`` assigned inside each ``with self.<cm>(...)`` block,
    # by context-manager method (vLLM builds its language model under one).
    with_assigns: dict[str, list[str]] = field(default_factory=dict)
    # For the methods the rule pack's [capture] names (forward, the setters): what they do with
    # the capture state (``eagle3lint.source.capture_facts``).
    capture: CaptureFacts | None = None
    # ``super(X, self).__init__()`` in an ``__init__``: the class X whose ``__init__`` it skips.
    super_skips: str | None = None
    # ``super().__init__(a, b, c=d)`` in an ``__init__``: the names passed, by position (None for
    # anything but a plain name) and by keyword; a subclass hands a base its constructor classes.
    super_init_args: tuple[tuple[str | None, ...], dict[str, str]] | None = None

    @property
    def is_property(self) -> bool:
        return any(d in ("property", "cached_property", "functools.cached_property") for d in self.decorators)

    @property
    def is_staticmethod(self) -> bool:
        return "staticmethod" in self.decorators


Branch = tuple[tuple[int, int], ...]


# ``self.<attr> = <value>`` as a summary finds it: attribute, line, value, enclosing branches.
SelfAssign = tuple[str, int, "ast.AST | None", Branch]


@dataclass
class Construction:
    """The right-hand side of ``self.<attr> = <value>`` when it names something callable."""

    callee: str  # dotted text of the called object: "DeepseekV3ForCausalLM", "nn.Linear"
    lineno: int
    # Literal keyword/positional string arguments (``architectures=["X"]``), for registries.
    literal_args: dict[str, list[str]] = field(default_factory=dict)
    # Where in ``__init__`` it runs: (line of the enclosing if/for/while/try, branch number) for
    # each enclosing block, outermost first; () at the top of the body. Two constructions in
    # different branches of one ``if`` are alternatives; a later one at the same or an outer
    # level replaces an earlier one (see :func:`final_constructions`).
    branch: Branch = ()
    # ``_TABLE[key](...)`` / ``_TABLE.get(key)(...)``, directly or through local names: the class
    # is picked from a module-level dict literal (``callee`` names it), one entry per config
    # value; ``table_key`` is the key's source text when it is a literal (one entry then).
    table: bool = False
    table_key: str | None = None
    # ``self.<attr> = self.<name>(...)`` calls ``name`` (a factory method, a class kept in a class
    # attribute); ``self.<attr> = self.<name>`` (False) is an alias of another attribute.
    call: bool = True


@dataclass
class InstanceAttr:
    name: str
    lineno: int
    method: str
    constructions: list[Construction] = field(default_factory=list)
    # Assigned in ``__init__`` (not only in a setter or another method).
    in_init: bool = False


@dataclass
class ClassSummary:
    name: str
    qualname: str
    lineno: int
    col: int
    end_lineno: int
    bases: list[str]
    methods: dict[str, FunctionSummary] = field(default_factory=dict)
    duplicate_methods: list[tuple[str, int, int]] = field(default_factory=list)
    class_attrs: dict[str, int] = field(default_factory=dict)
    instance_attrs: dict[str, InstanceAttr] = field(default_factory=dict)
    decorators: list[str] = field(default_factory=list)
    # Imports made inside ``__init__`` (``from .mistral import MistralForCausalLM``), which the
    # constructions there may use.
    local_imports: dict[str, str] = field(default_factory=dict)
    # ``__init__(self, ..., language_model_cls=Qwen3LLMModel)``: parameter -> its default's name.
    init_param_defaults: dict[str, str] = field(default_factory=dict)


@dataclass
class ReusableUnit:
    """A module-level ``class``/``def``, or a method of a module-level class, that a later
    version of the file can take as it is wherever its text recurs unchanged (``source.reuse``):
    where it lay, how to find its text again, and what summarising it made."""

    first: int  # its first line, decorators included
    end: int  # its last line
    end_col: int
    head: str  # its first line's text, ending included: where a search for it starts
    length: int  # characters
    digest: str  # of its text
    # A module-level class: the ``ModuleSummary.classes`` entries it made, nested ones first, in
    # order; a method or a module-level function: its summary.
    classes: list[tuple[str, ClassSummary]] = field(default_factory=list)
    function: FunctionSummary | None = None
    # A module-level statement: its layout entry; a class: its methods that can be taken alone.
    top: TopStatement | None = None
    methods: list[ReusableUnit] = field(default_factory=list)


@dataclass
class ModuleSummary:
    module: str
    path: str
    is_package: bool
    imports: dict[str, str] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    # Module-level classes defined more than once (per platform, or in try/except ImportError):
    # ``classes`` keeps the last definition, which need not be the one that runs.
    redefined_classes: list[str] = field(default_factory=list)
    entry_class: list[str] | None = None
    entry_class_line: int = 0
    # Module-level string/tuple dict literals by variable name (registries).
    dict_literals: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # Module-level dict literals whose values are all names (``{(2, 6): MiniCPMV2_6, ...}``): the
    # tables a dispatcher's ``__init__`` picks its implementation from. Entries are (the key's
    # source text, the dotted name), in order.
    class_tables: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    line_count: int = 0
    suppressions: FileSuppressions = field(default_factory=FileSuppressions)
    # The SHA-256 of the bytes summarised ("" when unknown) and where each module-level
    # statement lies: ``fix`` edits and proves a file without parsing all of it again.
    source_digest: str = ""
    layout: tuple[TopStatement, ...] = ()
    # What the next version of this file can take without parsing it again (``source.reuse``).
    units: list[ReusableUnit] = field(default_factory=list)
