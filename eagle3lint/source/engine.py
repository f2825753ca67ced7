"""The engine tree being checked: its package folder, version and rule pack.

The engine's adapter is not held here: the value sits below the adapter base (whose hooks take
it), and the code that drives a run asks the registry for the adapter by the engine's name."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.source.plugins import Distribution, PluginPackage, is_version
from eagle3lint.source.rulepack import RulePack

# One quoted string on the assignment's own line: a string that spans lines (a ``_version.py``
# whose docstring holds a forged one) is not a version.
_VERSION_RE = re.compile(r"""^__version__[ \t]*=[ \t]*(?:version[ \t]*=[ \t]*)?['"]([^'"\r\n]+)['"]""", re.M)


@dataclass(frozen=True)
class Library:
    """A package whose source a run reads beside the engine's, never importing it (vLLM's
    model-type allow-list is judged with transformers' tables of architectures and types)."""

    name: str
    root: Path | None  # the package folder (``.../transformers``); None where none could be had
    version: str
    origin: str  # which release and why that one, or why there is none, in words
    tables: Path | None = None  # what was read from it, kept as JSON beside a downloaded release
    # The file whose size and time stand for what is read from it (an installed package may change).
    marker: Path | None = None

    def fingerprint(self) -> str:
        """What a contract built from it depends on: its identity and its marker file's stamp."""
        stamp = ""
        probe = self.tables or self.marker
        if probe is not None:
            try:
                st = probe.stat()
                stamp = f"{st.st_size}:{st.st_mtime_ns}"
            except OSError:
                stamp = "missing"
        return f"{self.name}\0{self.root}\0{self.version}\0{self.origin}\0{self.tables}\0{stamp}"


@dataclass(frozen=True)
class Engine:
    name: str
    root: Path  # the package folder itself: .../sglang
    version: str
    pack: RulePack
    # Out-of-tree packages read as further source roots (plugins, external model packages).
    plugins: tuple[PluginPackage, ...] = ()
    # The distribution that ships this tree when its metadata is beside it: a fork's own name
    # and version (``lsglang 1.6.5`` around an ``sglang`` package).
    distribution: Distribution | None = None
    # Packages whose source the adapter asked for (``EngineAdapter.libraries_wanted``), found by
    # the upper half (a pinned release downloaded once, or the installed one).
    libraries: tuple[Library, ...] = ()

    def library(self, name: str) -> Library | None:
        return next((lib for lib in self.libraries if lib.name == name), None)

    @property
    def source_root(self) -> Path:
        """The folder the engine's module names are relative to (the package's parent)."""
        return self.root.parent

    @property
    def fork(self) -> Distribution | None:
        """The distribution, when it is not the engine's own (a fork that keeps the package)."""
        d = self.distribution
        return d if d is not None and re.sub(r"[-_.]+", "-", d.name).lower() != self.name else None

    @property
    def label(self) -> str:
        """``sglang 0.5.15.dev105`` or, for a fork, ``lsglang 1.6.5 (sglang 0.5.15.dev105)``."""
        return self.label_at("")

    def label_at(self, where: str) -> str:
        """The label with the tree it was read from, when ``where`` says it:
        ``sglang 0.5.23 (./python/sglang)``, ``lsglang 1.6.5 (sglang 0.5.15.dev105; ./sglang)``."""
        fork = self.fork
        if fork is None:
            return f"{self.name} {self.version}" + (f" ({where})" if where else "")
        upstream = f"{self.name} {self.version}" if self.version != "unknown" else f"{self.name}, upstream version unknown"
        return f"{fork.name} {fork.version} ({upstream}{'; ' + where if where else ''})"

    def packages(self) -> dict[str, Path]:
        """Each top-level package the run reads, and the folder its module names start in."""
        roots = {p.name: p.source_root for p in self.plugins}
        roots[self.pack.package] = self.source_root
        return roots

    def source_root_for(self, module: str) -> Path | None:
        return self.packages().get(module.split(".", 1)[0])

    def owns(self, module: str) -> bool:
        return self.source_root_for(module) is not None

    def absolute(self, rel: str) -> Path:
        """A path relative to its package's source root (``vllm/...``, ``vllm_ascend/...``)."""
        root = self.source_root_for(rel.split("/", 1)[0]) or self.source_root
        return root / rel

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "version": self.version, "root": str(self.root)}
        if self.fork is not None:
            out["distribution"] = {"name": self.fork.name, "version": self.fork.version, "metadata": self.fork.origin}
        if self.plugins:
            out["plugins"] = [
                {"package": p.name, "root": str(p.root), "distribution": p.distribution.name if p.distribution else None,
                 "version": p.distribution.version if p.distribution else None}
                for p in self.plugins
            ]
        return out

    def call_site_files(self) -> Iterator[str]:
        """The engine files whose calls on model objects make the contract: every ``*.py`` but
        the models folders' (the index reads those) and the subtrees the rule pack skips,
        sorted, then every plugin's (its model files are told apart when they are read).
        Strings, not paths: there are thousands, and pathlib would cost more than reading them."""
        root = str(self.root)
        skip = {os.path.normpath(os.path.join(root, m)) for m in self._not_scanned()}
        yield from _python_files(root, skip)
        for plugin in self.plugins:
            yield from _python_files(str(plugin.root), set())

    def plugin_files(self) -> Iterator[str]:
        for plugin in self.plugins:
            yield from _python_files(str(plugin.root), set())

    def scans_for_call_sites(self, rel_parts: tuple[str, ...]) -> bool:
        """Whether the file at these parts of its path below ``root`` is one of
        :meth:`call_site_files` (dot folders aside)."""
        rel = "/".join(rel_parts)
        return not any(rel.startswith(m.rstrip("/") + "/") for m in self._not_scanned())

    def _not_scanned(self) -> tuple[str, ...]:
        return (*self.pack.models, *self.pack.scan_skip)


def _python_files(root: str, skip: set[str]) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d != "__pycache__" and os.path.join(dirpath, d) not in skip
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield os.path.join(dirpath, name)


def read_version(root: Path, pack: RulePack) -> str:
    for filename in pack.version_files:
        try:
            text = (root / filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in _VERSION_RE.finditer(text):
            version = match.group(1)
            if version[0].isdigit() and is_version(version):
                return version
    return "unknown"
