"""``--release`` values: one release (``sglang==0.5.9``), a list (``sglang==0.5.8,0.5.10``) or a
PEP 440 range (``sglang>=0.5.2,<=0.5.23``), read with ``packaging``, as pip reads them.

A range is matched against the releases the package index lists (``pip_index``): pre-releases
only where ``--pre`` asks for them or the range names one, yanked releases never. A release named
exactly is fetched even when yanked (PEP 592: an exact pin still selects it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from eagle3lint.common.errors import UsageError
from eagle3lint.common.escape import line_text
from eagle3lint.engines import ENGINE_NAMES, engines_phrase

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

_NAME = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<rest>.*?)\s*$", re.S)
EXAMPLES = "e.g. sglang==0.5.9, sglang==0.5.8,0.5.10 or 'sglang>=0.5.2,<=0.5.23'"


@dataclass(frozen=True)
class ReleaseQuery:
    name: str  # the engine
    text: str  # as given
    pins: tuple[str, ...] = ()  # releases named one by one
    specifier: SpecifierSet | None = None  # a range

    @property
    def single(self) -> str | None:
        """The one release this names, where it names exactly one."""
        return self.pins[0] if len(self.pins) == 1 and self.specifier is None else None

    def wants_prereleases(self) -> bool:
        """Whether the range itself names a pre-release (``>=0.6.0rc1``), which PEP 440 reads as
        asking for them."""
        return bool(self.specifier is not None and self.specifier.prereleases)


def parse_query(text: str) -> ReleaseQuery:
    shown = line_text(_cut(text))
    match = _NAME.match(text)
    if match is None:
        raise UsageError(f"--release {shown}: expected NAME==VERSION, a list or a range ({EXAMPLES})")
    name, rest = match["name"].lower(), match["rest"]
    if not rest:
        raise UsageError(f"--release {shown}: expected NAME==VERSION, a list or a range ({EXAMPLES})")
    if name not in ENGINE_NAMES:
        raise UsageError(f"--release {shown}: unknown engine {line_text(repr(name))}; expected {engines_phrase()}")
    listed = _listed_versions(rest)
    if listed is not None:
        return ReleaseQuery(name, text, tuple(listed))
    # A range: read as pip reads it (loaded only here: one release needs no specifiers).
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        specifier = SpecifierSet(rest)
    except InvalidSpecifier as exc:
        raise UsageError(f"--release {shown}: not a release, a list or a PEP 440 range ({line_text(_cut(str(exc), quote=False))}; {EXAMPLES})") from None
    if any(_too_large(s.version) for s in specifier):
        raise UsageError(f"--release {shown}: not a release, a list or a PEP 440 range (a version with a number of more than 4300 digits; {EXAMPLES})")
    exact = [s for s in specifier if s.operator in ("==", "===") and "*" not in s.version]
    if len(specifier) == 1 and exact:
        try:
            return ReleaseQuery(name, text, (_normal(exact[0].version),))
        except InvalidVersion as exc:
            raise UsageError(f"--release {shown}: not a release, a list or a PEP 440 range ({line_text(str(exc))}; {EXAMPLES})") from None
    return ReleaseQuery(name, text, (), specifier)


def _cut(text: str, quote: bool = True) -> str:
    """``text`` for a message (quoted); one of thousands of characters named by its start and
    its length."""
    if len(text) <= 200:
        return repr(text) if quote else text
    start = repr(text[:100]) if quote else text[:100]
    return f"{start}... ({len(text)} characters)"


def _listed_versions(rest: str) -> list[str] | None:
    """``==0.5.8,0.5.10`` (bare versions after the first pin): the releases, in the order given;
    None for anything else (a range is read as one)."""
    if not rest.startswith("==") or rest.startswith("==="):
        return None
    parts = [p.strip() for p in rest[2:].split(",")]
    try:
        return [_normal(p) for p in parts]
    except InvalidVersion:
        return None


def _too_large(version: str) -> bool:
    """Whether a range's version has a number Python will not read (past 4300 digits): the
    range's comparisons would raise on it."""
    try:
        Version(version.removesuffix(".*"))
    except InvalidVersion:
        return False
    except ValueError:
        return True
    return False


def _normal(version: str) -> str:
    try:
        return str(Version(version))
    except InvalidVersion:
        raise
    except ValueError:  # a number past Python's int-conversion limit (4300 digits) is no version
        raise InvalidVersion(f"a version with a number of more than 4300 digits ({len(version)} characters)") from None


def normal_version(version: str) -> str:
    """A version as PEP 440 normalises it (``0.5.8.POST1`` is ``0.5.8.post1``); as given when it is
    not one."""
    try:
        return _normal(version)
    except InvalidVersion:
        return version


def parse_release_spec(spec: str) -> tuple[str, str]:
    """One release, ``NAME==VERSION``: what ``check``, ``contract``, ``fix`` and ``verify`` take."""
    query = parse_query(spec)
    single = query.single
    if single is None:
        raise UsageError(
            f"--release {line_text(repr(spec))}: this command checks one release (NAME==VERSION); "
            "`eagle3lint models` lays several side by side"
        )
    return query.name, single


def one_engine(queries: Iterable[ReleaseQuery]) -> str:
    names = sorted({q.name for q in queries})
    if len(names) != 1:
        raise UsageError(f"--release names {' and '.join(names)}: a history is of one engine")
    return names[0]


def select(queries: list[ReleaseQuery], published: list[str], prereleases: bool) -> list[str]:
    """The releases the queries name, oldest first: each pin, and each published release a range
    admits (pre-releases only where asked for)."""
    chosen: dict[str, Version] = {}
    for query in queries:
        for pin in query.pins:
            chosen[pin] = Version(pin)
        if query.specifier is None:
            continue
        pre = prereleases or query.wants_prereleases()
        for version in published:
            try:
                parsed = Version(version)
            except InvalidVersion:
                continue
            if query.specifier.contains(parsed, prereleases=pre):
                chosen[str(parsed)] = parsed
    return sorted(chosen, key=lambda v: chosen[v])
