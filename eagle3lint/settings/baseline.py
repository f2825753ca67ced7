"""Baselines: adopt eagle3lint on a fork with old findings and fail only on new ones.

A finding is keyed by (path, qualname, member, code) — never by line, so edits elsewhere in a
file do not break the baseline. Paths are stored relative to the engine's source root, so a
baseline written in one checkout works in another.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eagle3lint import __version__
from eagle3lint.common.errors import UsageError
from eagle3lint.common.findings import Finding
from eagle3lint.common.safe_io import file_kind, os_problem, read_regular_file
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import tree_path

BASELINE_VERSION = 1
Key = tuple[str, str, str, str]
# A baseline of every finding of the largest engine tree is well under a megabyte.
MAX_BASELINE_BYTES = 64 * 1024 * 1024
TEMP_SUFFIX = ".eagle3lint-tmp"


def _relative(path: str, engine: Engine) -> str:
    try:
        return Path(tree_path(path)).relative_to(engine.source_root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def finding_key(finding: Finding, engine: Engine) -> Key:
    return (_relative(finding.path, engine), finding.qualname, finding.method, finding.code)


def check_baseline_file(path: Path) -> None:
    """Refuse, before a run, a baseline to read that is missing, not a regular file (a folder,
    a named pipe that would block, ``/dev/zero`` that would never end) or too large."""
    try:
        mode, size = _stat(path)
    except FileNotFoundError:
        raise UsageError(f"baseline {path}: no such file (create it with --write-baseline)") from None
    except OSError as exc:
        raise UsageError(f"baseline {path}: {os_problem(exc)}") from exc
    if not stat.S_ISREG(mode):
        raise UsageError(f"baseline {path}: is not a regular file ({file_kind(mode)})")
    if size > MAX_BASELINE_BYTES:
        raise UsageError(f"baseline {path}: is larger than {MAX_BASELINE_BYTES // (1024 * 1024)} MiB; not an eagle3lint baseline")


def _stat(path: Path) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_mode, info.st_size


def baseline_target(path: Path) -> Path:
    """Where ``--write-baseline PATH`` writes: PATH, or the file a symlink there points to (the
    link stays a link). Refused: a folder, a device, a pipe or a socket (writing a temporary
    file beside one and renaming it would replace the node with a regular file), and a folder
    that does not exist (it is not created behind the user's back)."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else path
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UsageError(f"--write-baseline {path}: {exc.strerror or exc}") from exc
    if mode is not None and not stat.S_ISREG(mode):
        what = "is a folder, not a file" if stat.S_ISDIR(mode) else f"is not a regular file ({file_kind(mode)})"
        via = f" (the symlink points to {target})" if target != path else ""
        raise UsageError(f"--write-baseline {path}: {what}{via}; not written")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"--write-baseline {path}: folder {folder} does not exist; create it first")
    return target


def write_baseline(path: Path, reports: Sequence[tuple[list[Finding], Engine]]) -> int:
    """Every finding of each engine's report in one file (two engine trees side by side share
    it: each key's path starts with its own package's name). Returns how many were written."""
    counts = Counter(finding_key(f, engine) for findings, engine in reports for f in findings)
    entries = [
        {"path": p, "qualname": q, "member": m, "code": c, "count": n}
        for (p, q, m, c), n in sorted(counts.items())
    ]
    names = list(dict.fromkeys(engine.name for _, engine in reports))
    which: dict[str, object] = {"engine": names[0]} if len(names) == 1 else {"engines": names}
    target = baseline_target(path)
    # The trees it was written for: it applies to those only (a fork's baseline is not a release's).
    trees = [tree_record(engine, target.parent) for _, engine in reports]
    data = {"version": BASELINE_VERSION, "tool": f"eagle3lint {__version__}", **which, "trees": trees, "findings": entries}
    text = json.dumps(data, indent=2) + "\n"
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)  # a file replaced keeps its mode
    except OSError:
        mode = 0o666 & ~_umask()  # a new one gets what the umask leaves, like a shell's `>`
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX)
    except OSError as exc:
        raise UsageError(f"--write-baseline {path}: cannot create a file in {target.parent}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, target)
    except BaseException as exc:  # an interrupt too: no temporary file is left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(f"--write-baseline {path}: cannot write: {exc.strerror or exc}") from exc
        raise
    return sum(len(findings) for findings, _ in reports)


def tree_record(engine: Engine, folder: Path) -> dict[str, str]:
    """Which tree a baseline written in ``folder`` is for: a published release by its name and
    version; a checkout (or an installed tree) by its package folder, relative to ``folder``
    when inside it (so the baseline goes with the checkout), else absolute."""
    from eagle3lint.common.cache_dir import is_cached_release

    record = {"engine": engine.name, "version": engine.version}
    if is_cached_release(engine.root):
        record["release"] = f"{engine.name}=={engine.version}"
        return record
    root, base = engine.root.resolve(), folder.resolve()
    try:
        record["tree"] = root.relative_to(base).as_posix()
    except ValueError:
        record["tree"] = str(root)
    return record


def _describe(record: dict[str, object]) -> str:
    where = "release" if "release" in record else str(record.get("tree", "?"))
    return f"{record.get('engine', '?')} {record.get('version', '?')} ({where})"


def _around_working_directory(root: Path) -> bool:
    try:
        here = Path.cwd().resolve()
    except OSError:
        return False
    tree = root.resolve()
    return here == tree or here in tree.parents or tree in here.parents


def baseline_skipped(path: Path, engine: Engine) -> str | None:
    """Why the baseline at ``path`` does not apply to ``engine``'s tree; None when it does.

    A baseline applies to the tree it was written for (its ``trees``): the same release, or the
    same package folder (whatever version that tree is at now: a fork moves on). One written
    before baselines recorded their tree applies to the working directory's tree only (the
    checkout standing there or around it), never to a release or an installed engine elsewhere.
    """
    from eagle3lint.common.cache_dir import is_cached_release

    data = _load(path)
    release = is_cached_release(engine.root)
    trees = data.get("trees")
    if not isinstance(trees, list):
        if not release and _around_working_directory(engine.root):
            return None
        return "it records no tree (written by an older eagle3lint) and applies to the working directory's tree only"
    base = path.resolve().parent
    for record in trees:
        if not isinstance(record, dict) or record.get("engine") != engine.name:
            continue
        if "release" in record:
            if release and record.get("version") == engine.version:
                return None
        elif isinstance(record.get("tree"), str) and not release:
            with contextlib.suppress(OSError):
                if (base / record["tree"]).resolve() == engine.root.resolve():
                    return None
    written = ", ".join(_describe(r) for r in trees if isinstance(r, dict)) or "no tree"
    return f"it was written for {written}"


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def baseline_bytes(path: Path) -> bytes:
    """The baseline file's bytes, read safely: a regular file (a folder, a named pipe that would
    block or a device is refused), at most ``MAX_BASELINE_BYTES``."""
    try:
        return read_regular_file(path, MAX_BASELINE_BYTES)
    except FileNotFoundError:
        raise UsageError(f"baseline {path}: no such file (create it with --write-baseline)") from None
    except OSError as exc:
        raise UsageError(f"baseline {path}: {os_problem(exc)}") from exc


def _load(path: Path) -> dict[str, object]:
    try:
        data = json.loads(baseline_bytes(path).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # invalid JSON or UTF-8, or nested past the parser
        raise UsageError(f"baseline {path}: not a readable eagle3lint baseline: {exc or type(exc).__name__}") from exc
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION or not isinstance(data.get("findings"), list):
        raise UsageError(f"baseline {path}: not an eagle3lint baseline (version {BASELINE_VERSION})")
    return data


def read_baseline(path: Path) -> Counter[Key]:
    data: dict[str, Any] = _load(path)
    counts: Counter[Key] = Counter()
    for entry in data["findings"]:
        try:
            key = (entry["path"], entry["qualname"], entry["member"], entry["code"])
            counts[key] += int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"baseline {path}: malformed entry {entry!r}") from exc
    return counts


def filter_new(findings: list[Finding], baseline: Counter[Key], engine: Engine) -> tuple[list[Finding], list[Finding]]:
    """The findings not covered by the baseline, and those that were (SARIF carries them as
    suppressed results)."""
    remaining = Counter(baseline)
    new: list[Finding] = []
    known: list[Finding] = []
    for finding in findings:
        key = finding_key(finding, engine)
        if remaining[key] > 0:
            remaining[key] -= 1
            known.append(finding)
        else:
            new.append(finding)
    return new, known
