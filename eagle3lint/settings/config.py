"""``[tool.eagle3lint]`` in ``pyproject.toml``: found by walking up, validated strictly.

An unknown key, a wrong type or an unknown rule code is a :class:`ConfigError` naming the key
and the file (exit code 2): a typo in a linter's configuration must never silently disable it.
The words it is validated against (the engines, the rule codes, the output formats) come from
the caller as a :class:`Vocabulary`, so the settings depend on nothing above the lower half
(``eagle3lint.run.settings_load.vocabulary`` is the one the commands use).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from eagle3lint.common.errors import UsageError
from eagle3lint.common.safe_io import (  # noqa: F401 - the readers' names, kept where callers import them
    FileTooLarge,
    NotRegularFile,
    file_kind,
    open_regular_file,
    os_problem,
    read_regular_file,
    read_upto,
)

OUTPUT_FORMATS_KEY = "output-format"
DEFAULT_OUTPUT_FORMAT = "concise"
SEVERITIES = ("error", "warning", "info")
DEFAULT_FAIL_ON = "warning"
CACHE_DIR_NAME = ".eagle3lint_cache"
# The cache's folder in the user cache folder, for runs that find no settings file.
USER_CACHE_NAME = "check-cache"
# A settings file is a few hundred bytes; anything this large is not one.
MAX_CONFIG_BYTES = 16 * 1024 * 1024


class ConfigError(UsageError):
    """A configuration file that cannot be used as written."""


@dataclass(frozen=True)
class Vocabulary:
    """What a settings file may name: the engines (each has its own table), the rule codes and
    the output formats."""

    engines: tuple[str, ...]
    codes: Mapping[str, str]  # every rule code, with its name (settings may name rules by either)
    formats: tuple[str, ...]


@dataclass(frozen=True)
class ExtraMember:
    name: str
    kind: str = "method"
    role: str = "target"
    summary: str = ""
    required: bool = False


@dataclass(frozen=True)
class EngineOverrides:
    extra_members: tuple[ExtraMember, ...] = ()
    # Folders or files (relative to the config file) holding out-of-tree models to check too.
    extra_models: tuple[Path, ...] = ()


@dataclass
class Settings:
    path: Path | None = None  # the file the settings came from
    engine: str | None = None
    engine_root: Path | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    # Glob patterns of files not to report on (``--exclude`` replaces ``exclude``; both extend).
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    unsafe_fixes: bool = False
    output_format: str | None = None
    baseline: Path | None = None
    cache_dir: Path | None = None
    # ``check`` (and ``fix``) exit 1 for findings at or above this severity.
    fail_on: str = DEFAULT_FAIL_ON
    # Severity per rule code (or code prefix), overriding the rule's: ``E3L020 = "error"``.
    severity: dict[str, str] = field(default_factory=dict)
    engines: dict[str, EngineOverrides] = field(default_factory=dict)
    # The launch configuration runs assume (``--engine-option`` adds to it): ``["pp", "runner=v1"]``.
    engine_options: tuple[str, ...] = ()
    # The keys the file sets (``engine``, ``sglang.extra-models``, ...); the rest are defaults.
    from_file: frozenset[str] = frozenset()

    @property
    def root(self) -> Path:
        """Where relative paths in the settings (and the cache) are anchored."""
        return self.path.parent if self.path else Path.cwd()

    @property
    def cache_folder(self) -> Path:
        """The cache folder a run uses: ``cache-dir``, else beside the settings file, else one
        folder in the user cache (never the working directory: a checkout, a downloaded
        checkpoint folder or any folder a user runs in would each get one)."""
        if self.cache_dir:
            return self.cache_dir
        if self.path:
            return self.path.parent / CACHE_DIR_NAME
        from eagle3lint.common.cache_dir import cache_root

        return cache_root() / USER_CACHE_NAME

    def digest(self) -> str:
        """What in the settings changes analysis results (keys the cache)."""
        data = {
            name: [
                [[m.name, m.kind, m.role, m.required] for m in o.extra_members],
                [str(p) for p in o.extra_models],
            ]
            for name, o in sorted(self.engines.items())
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {
            "config-file": str(self.path) if self.path else None,
            "engine": self.engine,
            "engine-root": str(self.engine_root) if self.engine_root else None,
            "select": self.select,
            "extend-select": self.extend_select,
            "ignore": self.ignore,
            "per-file-ignores": self.per_file_ignores,
            "exclude": self.exclude,
            "extend-exclude": self.extend_exclude,
            "unsafe-fixes": self.unsafe_fixes,
            "output-format": self.output_format,
            "baseline": str(self.baseline) if self.baseline else None,
            "cache-dir": str(self.cache_dir) if self.cache_dir else None,
            "fail-on": self.fail_on,
            "severity": self.severity,
            "engine-options": list(self.engine_options),
            **{
                name: {
                    "extra-members": [m.__dict__ for m in o.extra_members],
                    "extra-models": [str(p) for p in o.extra_models],
                }
                for name, o in self.engines.items()
            },
        }


_TOP_KEYS: dict[str, type] = {
    "engine": str,
    "engine-root": str,
    "select": list,
    "extend-select": list,
    "ignore": list,
    "per-file-ignores": dict,
    "exclude": list,
    "extend-exclude": list,
    "unsafe-fixes": bool,
    OUTPUT_FORMATS_KEY: str,
    "baseline": str,
    "cache-dir": str,
    "fail-on": str,
    "severity": dict,
    "engine-options": list,
}
_ENGINE_KEYS: dict[str, type] = {"extra-members": list, "extra-models": list}
_MEMBER_KEYS: dict[str, type] = {"name": str, "kind": str, "role": str, "summary": str, "required": bool}
_TYPE_NAMES = {str: "a string", list: "an array", dict: "a table", bool: "a boolean"}


def _tool_table(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``[tool]`` of a parsed pyproject.toml (empty when absent); anything but a table there is
    the file's error, never a crash or a silent skip."""
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table, not {_toml_type(tool)}")
    return tool


def _toml_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array"}.get(
        type(value), type(value).__name__
    )


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.eagle3lint]`` table, walking up."""
    folder = (start or Path.cwd()).resolve()
    for candidate in [folder, *folder.parents]:
        path = candidate / "pyproject.toml"
        if path.is_file() and "eagle3lint" in _tool_table(path, _read_toml(path)):
            return path
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = read_regular_file(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {os_problem(exc)}") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc


def _check_keys(path: Path, where: str, table: dict[str, Any], allowed: dict[str, type]) -> None:
    for key, value in table.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, list(allowed), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{path}: {where}: unknown key '{key}'{hint}")
        expected = allowed[key]
        if not isinstance(value, expected):
            raise ConfigError(f"{path}: {where}: '{key}' must be {_TYPE_NAMES[expected]}, not {type(value).__name__}")


def _codes(path: Path, where: str, key: str, values: list[Any], known: dict[str, str]) -> list[str]:
    """Rule codes, prefixes or names (``wrapper-delegation-gap``), as codes."""
    from eagle3lint.common.rule_codes import did_you_mean, resolve_code

    out = []
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: {where}: '{key}' must hold strings, found {value!r}")
        code = resolve_code(value, known)
        if code is None:
            raise ConfigError(
                f"{path}: {where}: '{key}' names unknown rule code '{value}'{did_you_mean(value, known)} "
                "(a code, a prefix of one, or a rule's name: `eagle3lint rules`)"
            )
        out.append(code)
    return out


def _patterns(path: Path, where: str, key: str, values: list[Any]) -> list[str]:
    if not all(isinstance(v, str) and v.strip() for v in values):
        raise ConfigError(f"{path}: {where}: '{key}' must hold glob patterns (non-empty strings)")
    return [v.strip() for v in values]


def _severity(path: Path, where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or value not in SEVERITIES:
        raise ConfigError(f"{path}: {where}: '{key}' must be one of {', '.join(SEVERITIES)}, not {value!r}")
    return value


def load_settings(vocabulary: Vocabulary, config: Path | None = None, start: Path | None = None) -> Settings:
    """Settings from ``config`` (``--config``), else the nearest pyproject.toml, else defaults,
    checked against ``vocabulary``."""
    engine_names, known, formats = vocabulary.engines, dict(vocabulary.codes), vocabulary.formats
    path = config or find_config(start)
    if path is None:
        return Settings()
    if config is not None:
        try:
            mode = os.stat(config).st_mode
        except FileNotFoundError:
            raise ConfigError(f"--config {config}: no such file") from None
        except OSError as exc:
            raise ConfigError(f"--config {config}: {os_problem(exc)}") from exc
        if not stat.S_ISREG(mode):
            raise ConfigError(f"--config {config}: is not a regular file ({file_kind(mode)})")
    data = _read_toml(path)
    if path.name == "pyproject.toml" or "tool" in data:
        table = _tool_table(path, data).get("eagle3lint")
        if table is None:
            raise ConfigError(f"{path}: has no [tool.eagle3lint] table")
        where = "[tool.eagle3lint]"
    else:
        table, where = data, "top level"
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {where} must be a table, not {_toml_type(table)}")
    # One table per engine besides the plain keys: [tool.eagle3lint.sglang], [tool.eagle3lint.vllm].
    _check_keys(path, where, table, {**_TOP_KEYS, **{name: dict for name in engine_names}})
    settings = Settings(path=path.resolve())
    base = path.resolve().parent
    if "engine" in table:
        if table["engine"] not in engine_names:
            raise ConfigError(f"{path}: {where}: 'engine' must be one of {', '.join(engine_names)}, not '{table['engine']}'")
        settings.engine = table["engine"]
    if "engine-root" in table:
        settings.engine_root = base / table["engine-root"]
        if not settings.engine_root.is_dir():
            raise ConfigError(f"{path}: {where}: 'engine-root' names '{table['engine-root']}', which is not a folder")
    if "select" in table:
        settings.select = _codes(path, where, "select", table["select"], known)
    settings.extend_select = _codes(path, where, "extend-select", table.get("extend-select", []), known)
    settings.ignore = _codes(path, where, "ignore", table.get("ignore", []), known)
    for pattern, codes in table.get("per-file-ignores", {}).items():
        if not isinstance(codes, list):
            raise ConfigError(f"{path}: {where}: 'per-file-ignores' values must be arrays of codes ('{pattern}')")
        settings.per_file_ignores[pattern] = _codes(path, where, f"per-file-ignores.{pattern}", codes, known)
    settings.exclude = _patterns(path, where, "exclude", table.get("exclude", []))
    settings.extend_exclude = _patterns(path, where, "extend-exclude", table.get("extend-exclude", []))
    settings.unsafe_fixes = table.get("unsafe-fixes", False)
    if OUTPUT_FORMATS_KEY in table:
        if table[OUTPUT_FORMATS_KEY] not in formats:
            raise ConfigError(
                f"{path}: {where}: 'output-format' must be one of {', '.join(formats)}, not '{table[OUTPUT_FORMATS_KEY]}'"
            )
        settings.output_format = table[OUTPUT_FORMATS_KEY]
    if "baseline" in table:
        settings.baseline = base / table["baseline"]
    if "cache-dir" in table:
        settings.cache_dir = base / table["cache-dir"]
    if "fail-on" in table:
        settings.fail_on = _severity(path, where, "fail-on", table["fail-on"])
    for code, level in table.get("severity", {}).items():
        code = _codes(path, where, f"severity.{code}", [code], known)[0]
        settings.severity[code] = _severity(path, where, f"severity.{code}", level)
    options = table.get("engine-options", [])
    if not all(isinstance(o, str) and o.strip() for o in options):
        raise ConfigError(f"{path}: {where}: 'engine-options' must hold option names (strings: \"pp\", \"runner=v1\")")
    settings.engine_options = tuple(o.strip() for o in options)
    for engine in engine_names:
        if engine in table:
            settings.engines[engine] = _engine_overrides(path, f"[tool.eagle3lint.{engine}]", table[engine], base)
    settings.from_file = frozenset(
        [*(k for k in table if k not in engine_names), *(f"{e}.{k}" for e in engine_names for k in table.get(e, {}))]
    )
    return settings


def _engine_overrides(path: Path, where: str, table: dict[str, Any], base: Path) -> EngineOverrides:
    _check_keys(path, where, table, _ENGINE_KEYS)
    members = []
    for entry in table.get("extra-members", []):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: {where}: 'extra-members' entries must be tables with a 'name'")
        _check_keys(path, f"{where} extra-members", entry, _MEMBER_KEYS)
        if "name" not in entry:
            raise ConfigError(f"{path}: {where}: an 'extra-members' entry lacks 'name'")
        if not str(entry["name"]).isidentifier():
            raise ConfigError(f"{path}: {where}: extra member '{entry['name']}' is not a Python identifier")
        if entry.get("kind", "method") not in ("method", "attribute"):
            raise ConfigError(f"{path}: {where}: extra member '{entry['name']}': 'kind' must be 'method' or 'attribute'")
        if entry.get("role", "target") not in ("target", "draft"):
            raise ConfigError(f"{path}: {where}: extra member '{entry['name']}': 'role' must be 'target' or 'draft'")
        members.append(ExtraMember(**{k.replace("-", "_"): v for k, v in entry.items()}))
    models = []
    for item in table.get("extra-models", []):
        if not isinstance(item, str):
            raise ConfigError(f"{path}: {where}: 'extra-models' must hold paths (strings)")
        if not (base / item).exists():
            raise ConfigError(f"{path}: {where}: 'extra-models' names '{item}', which does not exist")
        models.append(base / item)
    return EngineOverrides(tuple(members), tuple(models))
