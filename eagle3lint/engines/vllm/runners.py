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
import warnings

from eagle3lint.engine import Engine
from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.sources import decode_source, read_source


def _parse(engine: Engine, rel: str) -> ast.Module | None:
    path = engine.root / rel
    data = read_source(str(path)) if path.is_file() else None
    if not isinstance(data, bytes):
        return None
    text = decode_source(str(path), data)
    if not isinstance(text, str):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _env_default(tree: ast.Module, env: str) -> str | None:
    """The literal default of ``os.getenv(env, default)`` in ``envs.py``: "0", "1", "None"; None
    when the file never reads the variable."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "getenv"):
            continue
        args = node.args
        if args and isinstance(args[0], ast.Constant) and args[0].value == env:
            if len(args) > 1 and isinstance(args[1], ast.Constant):
                return str(args[1].value)
            return "None"
    return None


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
    envs = _parse(engine, "envs.py")
    default = _env_default(envs, vpack.runner_env) if envs is not None else None
    if default is None or default in ("0", "False", "false"):
        return oldest
    if default in ("1", "True", "true"):
        return newest
    config = _parse(engine, "config/vllm.py")
    return newest if config is not None and _property_ends_true(config, "use_v2_model_runner") else oldest


def runner_of(rel_path: str, vpack: VllmPack) -> str:
    """The generation whose files hold ``rel_path`` (relative to the package root), "" if none."""
    for name, files in vpack.runner_files.items():
        for entry in files:
            if rel_path == entry or (entry.endswith("/") and rel_path.startswith(entry)):
                return name
    return ""
