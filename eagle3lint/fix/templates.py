"""Fix templates as data: ``rules/templates/<engine>/<pattern>.toml``.

A template file names its engine, its pattern, the rule codes it answers, its applicability and
a list of ``[[snippet]]`` entries. A snippet is Python source with ``${name}`` placeholders
(``string.Template``; Python code has braces, rarely dollars) filled with names the planner
resolved through the project index, never with anything model-specific written down here.
Entries may carry ``when = [flags]`` / ``unless = [flags]``: the planner passes the facts it
established (``pp_group`` ...) and the first entry whose conditions hold is used. A snippet
named ``*`` answers any member without its own entry.
"""

from __future__ import annotations

import ast
import hashlib
import re
import string
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from eagle3lint.common.errors import UsageError
from eagle3lint.source.rulepack import rules_dir

APPLICABILITIES = ("safe", "unsafe", "display-only")
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Snippet:
    name: str
    code: str
    when: frozenset[str] = frozenset()
    unless: frozenset[str] = frozenset()

    def matches(self, flags: frozenset[str]) -> bool:
        return self.when <= flags and not (self.unless & flags)

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.code))


@dataclass(frozen=True)
class TemplateSet:
    engine: str
    pattern: str
    path: Path
    codes: tuple[str, ...]
    applicability: str
    description: str
    snippets: tuple[Snippet, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)

    def snippet(self, name: str, flags: frozenset[str] = frozenset(), fallback: bool = False) -> Snippet | None:
        for candidate in self.snippets:
            if candidate.name == name and candidate.matches(flags):
                return candidate
        if fallback and name != "*":
            return self.snippet("*", flags)
        return None

    def render(self, name: str, variables: Mapping[str, str], flags: frozenset[str] = frozenset(), fallback: bool = False) -> str | None:
        chosen = self.snippet(name, flags, fallback)
        if chosen is None:
            return None
        return self._substitute(chosen.code, variables, f"snippet {chosen.name!r}")

    def describe(self, variables: Mapping[str, str]) -> str:
        return self._substitute(self.description, variables, "description")

    def setting(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    def _substitute(self, text: str, variables: Mapping[str, str], what: str) -> str:
        try:
            return string.Template(text).substitute(variables)
        except KeyError as exc:
            raise UsageError(f"{self.path}: {what} uses ${{{exc.args[0]}}}, which the planner does not provide") from exc
        except ValueError as exc:
            raise UsageError(f"{self.path}: {what}: bad placeholder: {exc}") from exc


def _parse_snippet(path: Path, entry: Any) -> Snippet:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("code"), str):
        raise UsageError(f"{path}: every [[snippet]] needs a string 'name' and a string 'code'")
    code = textwrap.dedent(entry["code"]).strip("\n") + "\n"
    snippet = Snippet(
        name=entry["name"],
        code=code,
        when=frozenset(entry.get("when", ())),
        unless=frozenset(entry.get("unless", ())),
    )
    # A template must be valid Python whatever names fill it: fill placeholders with identifiers.
    probe = _PLACEHOLDER.sub(lambda m: f"placeholder_{m.group(1)}", code)
    try:
        ast.parse(probe)
    except SyntaxError as exc:
        raise UsageError(f"{path}: snippet {snippet.name!r} is not valid Python (line {exc.lineno}: {exc.msg})") from exc
    return snippet


def parse_template_file(path: Path, data: dict[str, Any], engine: str) -> TemplateSet:
    pattern = data.get("pattern")
    if not isinstance(pattern, str):
        raise UsageError(f"{path}: missing string key 'pattern'")
    declared = data.get("engine", engine)
    if declared != engine:
        raise UsageError(f"{path}: declares engine {declared!r} but lives under templates/{engine}/")
    applicability = data.get("applicability", "display-only")
    if applicability not in APPLICABILITIES:
        raise UsageError(f"{path}: applicability must be one of {', '.join(APPLICABILITIES)}")
    snippets = tuple(_parse_snippet(path, entry) for entry in data.get("snippet", []))
    return TemplateSet(
        engine=engine,
        pattern=pattern,
        path=path,
        codes=tuple(data.get("codes", ())),
        applicability=applicability,
        description=str(data.get("description", pattern)),
        snippets=snippets,
        settings=dict(data.get("settings", {})),
    )


def templates_digest(engine: str) -> str:
    """The bytes of every template of ``engine``: with the code and the rule pack, what a fix's
    text is made from (a fix diff stored with a run's result is only as fresh as these)."""
    folder = rules_dir() / "templates" / engine
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else ():
        try:
            data = path.read_bytes()
        except OSError:
            data = b"\0unreadable"  # load_templates refuses it; the digest only has to differ
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]


@cache
def load_templates(engine: str) -> dict[str, TemplateSet]:
    """Every template of ``engine``, by pattern name (empty when the engine has none yet)."""
    folder = rules_dir() / "templates" / engine
    out: dict[str, TemplateSet] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"{path}: cannot read template: {exc}") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: invalid TOML: {exc}") from exc
        template = parse_template_file(path, data, engine)
        if template.pattern in out:
            raise UsageError(f"{path}: pattern {template.pattern!r} is also defined in {out[template.pattern].path}")
        out[template.pattern] = template
    return out
