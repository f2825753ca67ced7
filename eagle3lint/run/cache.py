"""``.eagle3lint_cache/``: per-file summaries keyed by content, and the engine contract.

* A module summary is stored under the SHA-256 of the file's content and what else shapes it
  (the method names its walk follows, the capture facts it collects, and, for a file with a
  relative import, its module name), in a namespace every tree and every setting shares: a
  file unchanged between two releases, or between an upstream release and a fork, is
  summarised once. Where it lies is not part of the key: a summary is given the path and module
  of the file asking for it. Cross-file facts (inheritance, delegation) are never cached: they
  are linked afresh from the summaries on every run, so editing a base class in another file is
  seen at once.
* The contract (the scan of every engine file outside the models folders) and whole-run results
  are stored per engine tree and settings, the contract with a fingerprint of those files'
  paths, sizes, inodes and modification and change times: re-reading thousands of runner files
  to hash them would cost more than the warm run may take.

Entries are pickles read by a *restricted* unpickler that resolves only eagle3lint's own summary
dataclasses and a few builtins (the approach the ``pickle`` documentation gives for untrusted
data): a cache folder committed by mistake, or planted in a repository, cannot make ``check``
import or call anything else. A corrupt or foreign entry is ignored and rewritten. Every
namespace folder's name holds a per-user secret (the shared one too), so such a cache is never
even found, unless the secret itself could have come with the repository: ``open_cache`` runs
without the cache when the user cache folder lies in a tree the run checks. Only regular files
are read from the cache folder, and nothing is written through a link there.

Each build of eagle3lint and each results-shaping setting has its own namespace folder; those no
run used for a week, and the least recently used beyond ``MAX_NAMESPACES``, are removed, and the
shared summaries keep the most recently used ``MAX_SHARED_ENTRIES`` (``cache_prune``).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import io
import json
import os
import pickle
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eagle3lint import __version__
from eagle3lint.common.escape import line_path
from eagle3lint.common.findings import FileError
from eagle3lint.common.safe_io import write_atomic
from eagle3lint.model.contract_types import Contract, ContractSite, MemberContract
from eagle3lint.model.launch_checks import LaunchRefusal
from eagle3lint.run.cache_prune import open_namespace, room_after_pruning
from eagle3lint.settings.config import CACHE_DIR_NAME, file_kind, read_regular_file
from eagle3lint.source.capture_facts import CaptureSpec
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import ParseRequest, parse_module, read_source
from eagle3lint.source.summary_types import (
    ClassSummary,
    Construction,
    FunctionSummary,
    InstanceAttr,
    ModuleSummary,
    Params,
    ReusableUnit,
)
from eagle3lint.source.suppressions import FileSuppressions, Suppression

Provider = Callable[[list[ParseRequest]], list[ModuleSummary | FileError]]
SECRET_NAME = "cache-secret"  # in the user cache folder (``releases.cache_root``)
MAX_SECRET_BYTES = 4096
MAX_ENTRY_BYTES = 1 << 28  # the largest entries (a whole vLLM run's result) are a few megabytes
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by eagle3lint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)

# Every class an entry may decode to: decoding never instantiates anything else.
_DATACLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        ModuleSummary,
        ReusableUnit,
        ClassSummary,
        FunctionSummary,
        InstanceAttr,
        Construction,
        Params,
        FileSuppressions,
        Suppression,
        ContractSite,
        MemberContract,
        FileError,
    )
}


# A relative import makes a summary depend on the module's place (``from .x import y``): such a
# file's key holds its module name. The test is on bytes and errs on the side of keying.
# (No ``\b``: a literal start lets the search skip ahead, ten times faster on a models folder.)
_RELATIVE_IMPORT = re.compile(rb"from[\s\\]+\.")
_DAY_S = 24 * 3600


def _shape_digest(request: ParseRequest) -> str:
    """The walk and capture a request asks for, in a form that does not depend on the process
    (sets sorted: their order changes with string hashing)."""

    def plain(value: Any) -> Any:
        if isinstance(value, (set, frozenset)):
            return sorted(plain(v) for v in value)
        if isinstance(value, (tuple, list)):
            return [plain(v) for v in value]
        return value

    capture = request.capture
    fields = {f.name: plain(getattr(capture, f.name)) for f in dataclasses.fields(capture)} if capture is not None else None
    text = json.dumps([plain(request.walk_names), fields], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _touch_daily(path: Path) -> None:
    """Mark a shared entry used (what the shared namespace's LRU goes by), at most once a day:
    a warm run reads hundreds of them."""
    with contextlib.suppress(OSError):
        st = os.stat(path, follow_symlinks=False)
        if time.time() - st.st_mtime > _DAY_S and stat.S_ISREG(st.st_mode):
            os.utime(path, follow_symlinks=False)


class CorruptEntry(Exception):
    pass


def store_summary(path: str, name: str, summary: ModuleSummary) -> None:
    """A summary's entry written where it was made (``ParseRequest.keep``)."""
    with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
        write_atomic(Path(path), _dumps({"name": name, "summary": summary}))


def load_previous_summary(path: str, name: str) -> ModuleSummary | None:
    """A stored summary read where a file is parsed (a parse worker: ``ParseRequest.previous``);
    None when it is gone or not one."""
    try:
        data = _loads(read_regular_file(Path(path), MAX_ENTRY_BYTES, follow_symlinks=False))
    except (OSError, CorruptEntry):
        return None
    summary = data.get("summary") if isinstance(data, dict) and data.get("name") == name else None
    return summary if isinstance(summary, ModuleSummary) else None


_ALLOWED_BUILTINS = {"set", "frozenset"}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _ALLOWED_BUILTINS:
            return getattr(builtins, name)
        cls = _DATACLASSES.get(name)
        if cls is not None and cls.__module__ == module:
            return cls
        if module.startswith("eagle3lint.") and "." not in name:
            # Engine-specific contract facts (vLLM's protocol): eagle3lint's own dataclasses only.
            candidate = getattr(importlib.import_module(module), name, None)
            if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
                return candidate
        raise CorruptEntry(f"cache entry refers to {module}.{name}")


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _loads(data: bytes) -> Any:
    try:
        return _RestrictedUnpickler(io.BytesIO(data)).load()
    except CorruptEntry:
        raise
    except Exception as exc:  # any malformed byte stream is a corrupt entry, nothing more
        raise CorruptEntry(str(exc)) from exc


def _is_real_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


@functools.cache
def _code_digest() -> str:
    """The code of the whole package: stored results depend on every rule and analysis, so an
    entry written by another build of eagle3lint (an unreleased commit too) lands in another
    namespace instead of being trusted. Hashing the package costs a few milliseconds: once per
    process, not per cache opened (a history opens one per release)."""
    h = hashlib.sha256()
    for name, cls in sorted(_DATACLASSES.items()):
        h.update(f"{name}:{','.join(f.name for f in dataclasses.fields(cls))};".encode())
    here = Path(__file__).resolve().parent.parent  # the package (this module is in run/)
    for source in sorted(here.rglob("*.py")):
        with contextlib.suppress(OSError):
            h.update(source.read_bytes())
    return h.hexdigest()[:12]


def _secret_path() -> Path:
    from eagle3lint.common.cache_dir import cache_root

    return cache_root() / SECRET_NAME


def _read_secret(path: Path) -> str:
    # A pipe or a device there is not waited on or read without end.
    return read_regular_file(path, MAX_SECRET_BYTES).decode("ascii", "replace").strip()


def _user_secret() -> str:
    """A random key kept in the user's cache folder, outside any repository. It is part of every
    namespace, so a ``.eagle3lint_cache`` planted in (or committed to) a repository is never found:
    it cannot make a check report a crashing model as clean. (``secret_exposed`` refuses a run
    whose secret the repository could have shipped.)"""
    path = _secret_path()
    try:
        return _read_secret(path)
    except OSError:
        pass
    secret = os.urandom(16).hex()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secret)
    except FileExistsError:
        with contextlib.suppress(OSError):
            return _read_secret(path)
    except OSError:
        pass  # a read-only home: this run's namespace is private to it
    return secret


def secret_exposed(checked: list[tuple[Path, str]]) -> str | None:
    """Why this run must not use the cache, when the per-user secret lies in a tree it checks
    (CI jobs often point ``XDG_CACHE_HOME`` into the checkout): a repository can then ship the
    secret with entries made for it, and a forged entry would pass a broken model. ``checked``:
    each tree, with the words that name it. None when the secret is the user's own."""
    from eagle3lint.common.cache_dir import cache_root

    user = cache_root()
    places = {os.path.realpath(user), os.path.realpath(user / SECRET_NAME)}
    for root, named in checked:
        real = os.path.realpath(root)
        if any(p == real or p.startswith(real.rstrip(os.sep) + os.sep) for p in places):
            return (
                f"the user cache folder {line_path(str(user))}, which keys the cache, lies inside {named}: "
                "a repository could have put its secret there, so this run does not use the cache "
                "(point XDG_CACHE_HOME or EAGLE3LINT_CACHE_DIR outside the checkout to use it)"
            )
    return None


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the cache (None when it can, or does not exist yet): a link
    would take every entry elsewhere (a folder of someone else's), a file is no folder."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be used as the cache folder ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link, not a folder: the cache is not read or written through it"
    if not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else file_kind(mode)
        return f"is {kind}, not a folder"
    return None


_said: set[str] = set()


def say_once(message: str) -> None:
    """A note on standard error, once per process (``fix`` runs several checks)."""
    if message not in _said:
        _said.add(message)
        print(f"eagle3lint: {message}", file=sys.stderr)


def open_cache(folder: Path, engine: Engine, settings_digest: str, checked: list[tuple[Path, str]]) -> Cache | None:
    """The run's cache, or None (said once) when it must run without: the cache folder is not a
    real folder, or the secret that keys it could have come from a tree being checked."""
    problem = folder_problem(folder)
    if problem is not None:
        say_once(f"{line_path(str(folder))} {problem}; running without the cache")
        return None
    exposed = secret_exposed(checked)
    if exposed is not None:
        say_once(exposed)
        return None
    return Cache(folder, engine, settings_digest)


def _create_new(path: Path, text: str) -> None:
    """Write a new file, never through what is already there: a dangling link would have the
    write land where it points (anywhere, for root), a named pipe would block it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileExistsError:
        return  # whatever it is, it is left alone
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


class Cache:
    def __init__(self, folder: Path, engine: Engine, settings_digest: str) -> None:
        self.folder = folder
        self.engine = engine
        build = f"{__version__}|{_code_digest()}|{_user_secret()}"
        key = f"{build}|{engine.pack.digest}|{settings_digest}|{engine.root.resolve()}"
        self.namespace = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        # Summaries depend on a file's content and the request's shape, both in their key:
        # one namespace per build serves every tree and setting.
        self.shared = hashlib.sha256(f"{build}|summaries".encode("utf-8", "surrogateescape")).hexdigest()[:20]
        # Opening the cache marks these namespaces used and removes those no run has used lately.
        self.pruned = open_namespace(folder, (self.namespace, self.shared))
        self.hits = 0
        self.misses = 0
        # How many more summaries the shared folder holds before it must be pruned (None: not
        # listed yet in this run).
        self._shared_room: int | None = None
        self._ready: set[str] = set()
        # path -> sha256 of every file served through provider(): the inputs of a run.
        self.served: dict[str, str] = {}
        self._shapes: dict[tuple[frozenset[str], CaptureSpec | None], str] = {}
        self._latest_tables: dict[str, dict[str, str]] = {}

    # ---- layout ----------------------------------------------------------------------
    def _prepare(self, namespace: str) -> bool:
        if namespace in self._ready:
            return True
        try:
            (self.folder / namespace).mkdir(parents=True, exist_ok=True)
            if not _is_real_folder(self.folder / namespace):
                return False  # a link in its place: nothing is written through it
            _create_new(self.folder / ".gitignore", "# Created by eagle3lint automatically.\n*\n")
            _create_new(self.folder / "CACHEDIR.TAG", _CACHEDIR_TAG)
        except OSError:
            return False  # a read-only checkout still gets checked, only slower
        self._ready.add(namespace)
        return True

    def _entry_path(self, name: str, namespace: str | None = None) -> Path:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / (namespace or self.namespace) / f"{digest}.pickle"

    def _load(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        namespace = namespace or self.namespace
        if not _is_real_folder(self.folder / namespace):
            return None
        try:
            # Only a regular file is an entry: a link, a pipe or a device in its place is not read.
            data = _loads(read_regular_file(self._entry_path(name, namespace), MAX_ENTRY_BYTES, follow_symlinks=False))
        except (OSError, CorruptEntry):
            return None
        if not isinstance(data, dict) or data.get("name") != name:
            return None
        return data

    def _store(self, name: str, data: dict[str, Any], namespace: str | None = None) -> None:
        namespace = namespace or self.namespace
        if not self._prepare(namespace):
            return
        with contextlib.suppress(OSError, pickle.PicklingError, TypeError, AttributeError):
            write_atomic(self._entry_path(name, namespace), _dumps({"name": name, **data}))

    # ---- summaries -------------------------------------------------------------------
    def _shape(self, request: ParseRequest) -> str:
        """The request's walk and capture, digested once a run."""
        shape = self._shapes.get((request.walk_names, request.capture))
        if shape is None:
            shape = _shape_digest(request)
            self._shapes[(request.walk_names, request.capture)] = shape
        return shape

    def summary_key(self, request: ParseRequest, digest: str, data: bytes) -> str:
        """What a summary is made from: the content, the walk and capture the run asks for,
        and the module's place only where a relative import could depend on it."""
        shape = self._shape(request)
        place = f"|{request.module}|{int(request.is_package)}" if _RELATIVE_IMPORT.search(data) else ""
        return f"summary:{digest}|{shape}{place}"

    def _latest(self, request: ParseRequest) -> tuple[str, dict[str, str]]:
        """The module's key in its shape's table of the last summary made for each module: the
        earlier version a changed file's summary starts from (``source.reuse``). One entry per
        walk and capture, read once a run."""
        shape = self._shape(request)
        table = self._latest_tables.get(shape)
        if table is None:
            entry = self._load(self._latest_name(shape), self.shared)
            stored = entry.get("keys") if entry is not None else None
            table = stored if isinstance(stored, dict) else {}
            self._latest_tables[shape] = table
        return f"{request.module}|{int(request.is_package)}", table

    @staticmethod
    def _latest_name(shape: str) -> str:
        return f"latest-summaries:{shape}"

    def _parse_request(self, request: ParseRequest, key: str) -> ParseRequest:
        """The request as the parse gets it: told where to store its summary, and where the
        summary of the module's last other version lies."""
        keep = functools.partial(store_summary, str(self._entry_path(key, self.shared)), key) if self._prepare(self.shared) else None
        module, table = self._latest(request)
        previous = table.get(module)
        if not isinstance(previous, str) or previous == key or not previous.startswith("summary:"):
            return dataclasses.replace(request, keep=keep)
        loader = functools.partial(load_previous_summary, str(self._entry_path(previous, self.shared)), previous)
        return dataclasses.replace(request, previous=loader, keep=keep)

    def _load_summary(self, request: ParseRequest, key: str) -> ModuleSummary | None:
        entry = self._load(key, self.shared)
        summary = entry.get("summary") if entry is not None else None
        if not isinstance(summary, ModuleSummary):
            return None
        # The stored summary is this file's whatever tree it was made in: it is given this
        # file's place (the entry was decoded afresh, nobody else holds it).
        summary.path, summary.module, summary.is_package = request.path, request.module, request.is_package
        _touch_daily(self._entry_path(key, self.shared))
        return summary

    def provider(self, fallback: Provider) -> Provider:
        """Wrap a summary provider: cached entries first, the rest parsed (in parallel)."""

        def provide(requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
            results: list[ModuleSummary | FileError | None] = [None] * len(requests)
            missing: list[int] = []
            keys: dict[int, str] = {}
            for i, request in enumerate(requests):
                data = read_source(request.path)
                if isinstance(data, FileError):
                    results[i] = data
                    continue
                digest = hashlib.sha256(data).hexdigest()
                self.served[request.path] = digest
                keys[i] = self.summary_key(request, digest, data)
                summary = self._load_summary(request, keys[i])
                if summary is not None:
                    results[i] = summary
                    self.hits += 1
                else:
                    missing.append(i)
            if missing:
                self.misses += len(missing)
                # The parse stores each summary where it is made (in parallel); this process
                # keeps only which is the module's latest.
                parsed = fallback([self._parse_request(requests[i], keys[i]) for i in missing])
                stored = 0
                changed: set[str] = set()
                for i, result in zip(missing, parsed, strict=False):
                    results[i] = result
                    if isinstance(result, ModuleSummary):
                        module, table = self._latest(requests[i])
                        table[module] = keys[i]
                        changed.add(self._shape(requests[i]))
                        stored += 1
                for shape in changed:
                    self._store(self._latest_name(shape), {"keys": self._latest_tables[shape]}, self.shared)
                # The shared folder is listed when this run's entries may have filled it, not
                # after every batch (a cold run stores a batch per module it loads).
                room = self._shared_room
                if stored and (room is None or stored > room):
                    self._shared_room = room_after_pruning(self.folder / self.shared)
                elif stored and room is not None:
                    self._shared_room = room - stored
            return [r if r is not None else parse_module(requests[i]) for i, r in enumerate(results)]

        return provide

    # ---- contract --------------------------------------------------------------------
    def contract_fingerprint(self) -> str:
        """Name, size, inode and both times of every file the contract scan reads, and the
        libraries read beside the engine (which transformers, and its tables' file). The change
        time is the one no copy can keep: ``cp -p``, ``rsync -a`` and ``tar x`` set a file's
        modification time back, and a same-size edit would otherwise leave the key as it was."""
        h = hashlib.sha256()
        for library in self.engine.libraries:
            h.update(library.fingerprint().encode("utf-8", "surrogateescape") + b"\n")
        for path in self.engine.call_site_files():
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_dev}:{st.st_ino}\n"
            h.update(key.encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def load_contract(self, fingerprint: str) -> Contract | None:
        entry = self._load("contract")
        if entry is None or entry.get("fingerprint") != fingerprint:
            return None
        members, errors = entry.get("members"), entry.get("errors")
        if not isinstance(members, dict) or not all(isinstance(m, MemberContract) for m in members.values()):
            return None
        if not isinstance(errors, list) or not all(isinstance(e, FileError) for e in errors):
            return None
        extra = entry.get("extra", {})
        refusals = entry.get("launch_refusals", [])
        if not isinstance(refusals, list) or not all(isinstance(r, LaunchRefusal) for r in refusals):
            return None
        return Contract(self.engine, members, int(entry.get("scanned_files", 0)), errors, extra if isinstance(extra, dict) else {}, refusals)

    def store_contract(self, fingerprint: str, contract: Contract) -> None:
        data = {
            "fingerprint": fingerprint,
            "members": contract.members,
            "errors": contract.errors,
            "scanned_files": contract.scanned_files,
            "extra": contract.extra,
            "launch_refusals": contract.launch_refusals,
        }
        self._store("contract", data)


__all__ = ["CACHE_DIR_NAME", "Cache", "open_cache"]


class ResultCache:
    """Whole-run results, for a warm run that changed nothing: the run's inputs are every file
    the index read (with its content hash) and every module name it looked for and did not
    find; a hit needs all of them unchanged, so it costs little more than hashing the files."""

    def __init__(self, cache: Cache, key_material: str) -> None:
        self.cache = cache
        self.name = "result:" + hashlib.sha256(key_material.encode()).hexdigest()

    def lookup(self, fingerprint: str, listing: list[str]) -> dict[str, Any] | None:
        """``listing``: the files the run starts from (the model files in scope); one added or
        removed changes the result as surely as an edit does."""
        entry = self.cache._load(self.name)
        if entry is None or entry.get("fingerprint") != fingerprint or entry.get("listing") != listing:
            return None
        inputs, absent = entry.get("inputs"), entry.get("absent")
        if not isinstance(inputs, list) or not isinstance(absent, list):
            return None
        for path, digest in inputs:
            data = read_source(path)
            if isinstance(data, FileError) or hashlib.sha256(data).hexdigest() != digest:
                return None
        if any(os.path.exists(path) for path in absent):
            return None
        result = entry.get("result")
        return result if isinstance(result, dict) else None

    def store(
        self, fingerprint: str, listing: list[str], inputs: list[tuple[str, str]], absent: list[str], result: dict[str, Any]
    ) -> None:
        entry = {"fingerprint": fingerprint, "listing": listing, "inputs": inputs, "absent": absent, "result": result}
        self.cache._store(self.name, entry)
