"""vLLM's GPU model-runner generations: which one a release runs by default, and whose files a
guard lives in.

The V2 runner (``v1/worker/gpu/``) reads the decoder's PP flag before it runs EAGLE-3 with
pipeline parallelism; the V1 runner (``v1/worker/gpu_model_runner.py``) never does. Which one
runs is the environment variable the rule pack names (``[runners] env``): its default in the
release's ``envs.py`` (``os.getenv(NAME, "0")``), or, where that default is ``None``, what
``config/vllm.py``'s ``use_v2_model_runner`` ends with.
"""

from __future__ import annotations

import ast
import re
import textwrap

from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.source.engine import Engine
from eagle3lint.source.sources import decode_source, parse_text, read_source


def _text(engine: Engine, rel: str) -> str | None:
    path = engine.root / rel
    data = read_source(str(path)) if path.is_file() else None
    if not isinstance(data, bytes):
        return None
    text = decode_source(str(path), data)
    return text if isinstance(text, str) else None


def _parse(text: str) -> ast.Module | None:
    tree = parse_text("<vLLM source>", text)
    return tree if isinstance(tree, ast.Module) else None


def _function_text(text: str, name: str) -> str | None:
    """The source of ``def name`` cut out of ``text`` by its lines, dedented (every run asks for
    the default: parsing the whole of ``config/vllm.py`` each time would cost a warm run a
    tenth of its time)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        match = re.match(r"([ \t]*)def[ \t]+" + re.escape(name) + r"\b", line)
        if match is None:
            continue
        indent = len(match.group(1))
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        return textwrap.dedent("".join(lines[i:end]))
    return None


_GETENV = r"""os\.getenv\(\s*["']{name}["']\s*(?:,\s*(?P<default>[^)]*?)\s*)?\)"""


def _env_default_text(text: str, env: str) -> str | None:
    """The default of ``os.getenv(env, default)`` in ``envs.py``: "0", "1", "None"; None when the
    file never reads the variable."""
    match = re.search(_GETENV.format(name=re.escape(env)), text)
    if match is None:
        return None
    default = (match.group("default") or "None").strip()
    return default.strip("'\"")


def _property_ends_true(tree: ast.Module, name: str) -> bool:
    """Whether the function ``name`` (``use_v2_model_runner``) ends with ``return True``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name and node.body:
            last = node.body[-1]
            return isinstance(last, ast.Return) and isinstance(last.value, ast.Constant) and last.value.value is True
    return False


def default_runner(engine: Engine, vpack: VllmPack) -> str:
    """The generation this release runs when the user sets nothing ("" if the pack names none)."""
    names = list(vpack.runner_files)
    if not names:
        return ""
    oldest, newest = names[0], names[-1]
    if not vpack.runner_env:
        return oldest
    envs = _text(engine, "envs.py")
    default = _env_default_text(envs, vpack.runner_env) if envs is not None else None
    if default is None or default in ("0", "False", "false"):
        return oldest
    if default in ("1", "True", "true"):
        return newest
    config_text = _text(engine, "config/vllm.py")
    function = _function_text(config_text, "use_v2_model_runner") if config_text else None
    config = _parse(function) if function else None
    return newest if config is not None and _property_ends_true(config, "use_v2_model_runner") else oldest


def runner_of(rel_path: str, vpack: VllmPack) -> str:
    """The generation whose files hold ``rel_path`` (relative to the package root), "" if none."""
    for name, files in vpack.runner_files.items():
        for entry in files:
            if rel_path == entry or (entry.endswith("/") and rel_path.startswith(entry)):
                return name
    return ""
