"""The engine tree being checked: its package folder, version, rule pack and adapter."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.rulepack import RulePack

if TYPE_CHECKING:
    from eagle3lint.adapter import EngineAdapter

_VERSION_RE = re.compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)


@dataclass(frozen=True)
class Engine:
    name: str
    root: Path  # the package folder itself: .../sglang
    version: str
    pack: RulePack
    # What the engine contributes to a run (its models, rules, fixes, verify launcher).
    adapter: EngineAdapter

    @property
    def source_root(self) -> Path:
        """The folder module names are relative to (the package's parent)."""
        return self.root.parent

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "root": str(self.root)}

    def call_site_files(self) -> Iterator[str]:
        """The engine files whose calls on model objects make the contract: every ``*.py`` but
        the models folders' (the index reads those) and the subtrees the rule pack skips,
        sorted. Strings, not paths: there are thousands, and pathlib would cost more than
        reading them."""
        root = str(self.root)
        skip = {os.path.normpath(os.path.join(root, m)) for m in self._not_scanned()}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d != "__pycache__" and os.path.join(dirpath, d) not in skip
            )
            for name in sorted(filenames):
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)

    def scans_for_call_sites(self, rel_parts: tuple[str, ...]) -> bool:
        """Whether the file at these parts of its path below ``root`` is one of
        :meth:`call_site_files` (dot folders aside)."""
        rel = "/".join(rel_parts)
        return not any(rel.startswith(m.rstrip("/") + "/") for m in self._not_scanned())

    def _not_scanned(self) -> tuple[str, ...]:
        return (*self.pack.models, *self.pack.scan_skip)


def read_version(root: Path, pack: RulePack) -> str:
    for filename in pack.version_files:
        try:
            text = (root / filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in _VERSION_RE.finditer(text):
            version = match.group(1)
            if re.match(r"^\d", version):
                return version
    return "unknown"
