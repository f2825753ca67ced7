"""The rule framework: a rule is a small class with its documentation and its check."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from eagle3lint.checks.context import CheckContext
    from eagle3lint.common.findings import Finding

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Fix safety")


class Rule:
    """Subclasses set ``code``, ``name``, ``severity``, ``fix_safety`` and document themselves in
    their docstring with the sections of :data:`DOC_SECTIONS` (``## Title`` headings)."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[str] = "error"
    fix_safety: ClassVar[str] = "display-only"
    family: ClassVar[str] = "presence"
    # The engines a rule is written for; empty: every engine (an adapter may still replace it).
    engines: ClassVar[tuple[str, ...]] = ()
    default_enabled: ClassVar[bool] = True
    # Runs once suppressions are applied (it reasons about them).
    after_suppressions: ClassVar[bool] = False
    # Runs once every model has its verdict (``CheckContext.verdicts``; it reports them).
    after_verdicts: ClassVar[bool] = False
    # Its findings name members a class lacks: for a class with no EAGLE-3 code at all they are
    # one cause, which E3L020 reports once instead.
    member_gap: ClassVar[bool] = False
    # Its findings say something cannot be proven statically: the model's verdict is "unknown".
    unprovable: ClassVar[bool] = False
    # Its finding says the model had EAGLE-3 in the engine and lost it (a plugin's replacement):
    # broken, even though the class itself holds no EAGLE-3 code.
    regression: ClassVar[bool] = False

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        raise NotImplementedError

    @classmethod
    def summary(cls) -> str:
        doc = cls.doc_sections().get("What it does", "")
        return doc.split("\n\n")[0].replace("\n", " ").strip()

    @classmethod
    def doc_parts(cls) -> list[tuple[str, str | None, str]]:
        """The docstring's sections in order: (title, engine or None, body). A section titled
        ``## Example (vLLM)`` is the vLLM part of "Example" (engine ``vllm``)."""
        text = _dedent(cls.__doc__ or "")
        parts = []
        for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.S | re.M):
            title, engine = _engine_part(match.group(1).strip())
            parts.append((title, engine, match.group(2).strip()))
        return parts

    @classmethod
    def documented_engines(cls) -> set[str]:
        """The engines the docstring has parts of its own for (lower case)."""
        return {engine for _, engine, _ in cls.doc_parts() if engine is not None}

    @classmethod
    def doc_sections(cls, engine: str | None = None) -> dict[str, str]:
        """Each section's text: the part every engine shares and, for ``engine``, its own part
        (with no engine, every engine's part, each under its name)."""
        sections: dict[str, list[str]] = {}
        for title, part_engine, body in cls.doc_parts():
            if part_engine is not None and engine is not None and part_engine != engine.lower():
                continue
            labelled = body if part_engine is None or engine is not None else f"{_ENGINE_LABELS.get(part_engine, part_engine)}:\n{body}"
            sections.setdefault(title, []).append(labelled)
        return {title: "\n\n".join(bodies) for title, bodies in sections.items()}

    @classmethod
    def documentation(cls, engine: str | None = None) -> str:
        """``eagle3lint explain``'s text: every section, an engine's parts only for ``engine``
        (every engine's, each headed with its name, when None)."""
        lines = [f"{cls.code} ({cls.name})", "", f"Severity: {cls.severity}. Fix: {cls.fix_safety}.", ""]
        for title, part_engine, body in cls.doc_parts():
            if part_engine is not None and engine is not None and part_engine != engine.lower():
                continue
            heading = title if part_engine is None else f"{title} ({_ENGINE_LABELS.get(part_engine, part_engine)})"
            lines.extend([f"## {heading}", body, ""])
        return "\n".join(lines).rstrip() + "\n"


# How an engine is written in a section title; the part's engine is the name in lower case.
_ENGINE_LABELS = {"sglang": "SGLang", "vllm": "vLLM"}


def _engine_part(title: str) -> tuple[str, str | None]:
    """``Example (vLLM)`` -> ("Example", "vllm"); titles of no engine are kept whole."""
    match = re.fullmatch(r"(.+?) \(([A-Za-z][A-Za-z0-9_.-]*)\)", title)
    if match is None or match.group(1) not in (*DOC_SECTIONS, "References"):
        return title, None
    return match.group(1), match.group(2).lower()


def _dedent(text: str) -> str:
    import textwrap

    first, _, rest = text.partition("\n")
    return (first.strip() + "\n" + textwrap.dedent(rest)).strip() + "\n"


@dataclass(frozen=True)
class RuleRegistry:
    rules: tuple[type[Rule], ...]

    def __iter__(self) -> Iterator[type[Rule]]:
        return iter(sorted(self.rules, key=lambda r: r.code))

    def by_code(self, code: str) -> type[Rule] | None:
        upper = code.upper()
        for rule in self.rules:
            if rule.code == upper or rule.name == code:
                return rule
        return None

    def codes(self) -> set[str]:
        return {r.code for r in self.rules}
