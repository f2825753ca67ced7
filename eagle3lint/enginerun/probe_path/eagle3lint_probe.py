"""What every engine probe (``engines/<engine>/cpu_probe.py``) shares: loading a linter module by
path, the record file, an exception's innermost frames, and a config class's defaults as a plain
dict.

Standard library only, and no ``eagle3lint`` import: the probes run inside the *engine's*
interpreter, which has no eagle3lint installed. The sweep puts this file's folder first on a
launch's PYTHONPATH (``enginerun/sweep.py``: ``PROBE_PATH``), so a probe and every process the
engine spawns from it (SGLang's scheduler child re-imports the probe) import it by this one name.
The folder holds nothing else, so no engine module is shadowed.

The inert stand-ins the engines' environments lack (torchvision for both, ``sgl_kernel`` for
SGLang) are made from ``Inert`` and ``inert_getattr`` below.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


def load(name: str, path: str) -> Any:
    """A module of the linter (the shrinker, the matcher) from its file, under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Record:
    """The record file of one launch, rewritten at every phase, so that a launch killed at its
    time limit still says how far it got. Processes of one launch may share it (SGLang's probe and
    its scheduler child): each rereads it before a write (``fresh=False``), and writes go through
    a file of its own, renamed into place."""

    def __init__(self, path: str, fresh: bool = True) -> None:
        self.path = path
        # Wall-clock: a child process's phases count from the probe's start too.
        self.data: dict[str, Any] = {"phase": "start", "ok": False, "timings": {}, "started_at": time.time()}
        if not fresh:
            self.reload()

    def reload(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.data = json.loads(Path(self.path).read_text(encoding="utf-8"))

    def phase(self, name: str) -> None:
        self.data.setdefault("timings", {})[self.data["phase"]] = round(time.time() - self.data["started_at"], 2)
        self.data["phase"] = name
        self.write()

    def write(self) -> None:
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, default=str)
        os.replace(tmp, self.path)


def frames(exc: BaseException) -> list[str]:
    """The innermost frames, as ``file:line in function`` (paths from site-packages on)."""
    found = traceback.extract_tb(exc.__traceback__)
    return [f"{f.filename.split('site-packages/')[-1]}:{f.lineno} in {f.name}" for f in found][-8:]


def error(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "frames": frames(exc)}


# ---- the config ---------------------------------------------------------------------------------

def arch_model_types() -> dict[str, str]:
    """transformers' architecture -> model type, from its auto-model tables."""
    from transformers.models.auto import modeling_auto

    found: dict[str, str] = {}
    for attr in dir(modeling_auto):
        table = getattr(modeling_auto, attr)
        if attr.endswith("_MAPPING_NAMES") and isinstance(table, dict):
            for model_type, archs in table.items():
                for arch in archs if isinstance(archs, (list, tuple)) else [archs]:
                    if isinstance(arch, str):
                        found.setdefault(arch, model_type)
    return found


def norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


ARCH_SUFFIX = re.compile(r"(For(CausalLM|ConditionalGeneration)|LMHeadModel|Model)$")


def stem(architecture: str) -> str:
    """The architecture without its head (``Exaone4ForCausalLM`` -> ``Exaone4``)."""
    return ARCH_SUFFIX.sub("", architecture)


def model_type_by_name(architecture: str, model_types: list[str]) -> str | None:
    """The longest model type the architecture's name starts with (engine-only architectures)."""
    wanted = norm(stem(architecture))
    return max((t for t in model_types if norm(t) and wanted.startswith(norm(t))), key=lambda t: len(norm(t)), default=None)


STAND_IN_HOW = "Llama's, as a stand-in"

# What every transformers config carries: written into a nested config, the engines' own config
# classes refuse them as unknown arguments.
COMMON_KEYS = {"output_attentions", "output_hidden_states", "return_dict", "transformers_version", "torchscript", "use_return_dict", "dtype", "torch_dtype"}


def plain(config: dict[str, Any], nested: bool = False) -> dict[str, Any]:
    """A config's ``to_dict()`` without private keys, nor the common ones in nested configs."""
    out = {}
    for key, value in config.items():
        if isinstance(key, str) and (key.startswith("_") or (nested and key in COMMON_KEYS)):
            continue
        out[key] = plain(value, True) if isinstance(value, dict) and key not in ("id2label", "label2id") else value
    return out


def levels(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The config and the nested configs that have sizes of their own."""
    return [config, *(v for v in config.values() if isinstance(v, dict) and "hidden_size" in v)]


def add_attributes(config: dict[str, Any], added: dict[str, Any]) -> None:
    """What the engine read and the class default lacks (or leaves None): at every level that has
    sizes."""
    for key, value in added.items():
        for level in levels(config):
            if level.get(key) is None:
                level[key] = value


def build_folders(
    spec: dict[str, Any],
    record: Record,
    shrink: Any,
    config_class: Callable[[str], tuple[str, str, Any, str]],
    fit: Callable[[dict[str, Any], dict[str, Any]], list[str]] | None = None,
) -> tuple[str, str | None]:
    """The target folder (the model folder a launch names, or a shrunken config of the
    architecture's config class) and, for an EAGLE-3 launch, a one-layer drafter's folder to
    match. ``config_class``: the engine's (architecture launched, model type, config class, how it
    was found); ``fit``: the engine's own fitting of the built config to what a launch needs, given
    the attributes the sweep asks to add (it adds them), returning what it changed."""
    work = Path(spec["workdir"])
    target = work / "target"
    if spec.get("model_path"):
        target = Path(spec["model_path"])
        config = json.loads((target / "config.json").read_text(encoding="utf-8"))
        text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        hidden = text.get("hidden_size") or shrink.TEXT_HIDDEN
        vocab = text.get("vocab_size") or config.get("vocab_size") or shrink.VOCAB
        record.data["setup"] = {"source": str(target)}
    else:
        architecture, model_type, cls, how = config_class(spec["architecture"])
        defaults = plain(cls().to_dict())
        if how.endswith(STAND_IN_HOW):
            defaults.update(shrink.stand_in_defaults(architecture))
        shrunk = shrink.shrink_config(defaults, layers=spec.get("layers", shrink.TEXT_LAYERS))
        config = shrunk.config
        config["architectures"] = [architecture]
        config["model_type"] = model_type
        for key in ("torch_dtype", "dtype"):
            config.pop(key, None)
        config["torch_dtype"] = "float32"
        added = dict(spec.get("config_added") or {})
        changes = list(shrunk.changes)
        if fit is not None:
            changes += fit(config, added)
        else:
            add_attributes(config, added)
        text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        hidden, vocab = text.get("hidden_size") or shrunk.hidden, shrunk.vocab
        record.data["setup"] = {"model_type": model_type, "config_class": cls.__name__, "found_by": how, "changes": changes}
        target.mkdir(parents=True, exist_ok=True)
        (target / "config.json").write_text(json.dumps(config, indent=1, default=str), encoding="utf-8")
    if spec["mode"] != "eagle":
        return str(target), None
    if spec.get("drafter_path"):
        return str(target), spec["drafter_path"]
    drafter = work / "drafter"
    drafter.mkdir(parents=True, exist_ok=True)
    (drafter / "config.json").write_text(json.dumps(shrink.drafter_config(int(hidden), int(vocab))), encoding="utf-8")
    return str(target), str(drafter)


# ---- inert stand-ins ----------------------------------------------------------------------------

class Inert:
    """Any name of a stand-in package: resolves, and fails only when called."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("eagle3lint engine-run: an inert stand-in was called")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Inert()

    def __getitem__(self, key: Any) -> Any:
        return Inert()

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


def inert_getattr(name: str) -> Any:
    """A stand-in module's ``__getattr__``: every public name is an ``Inert``."""
    if name.startswith("__"):
        raise AttributeError(name)
    return Inert()


class InertSubmodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``package.anything``: an inert module, for a stand-in package whose submodules are many."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(self.package + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = inert_getattr  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass
