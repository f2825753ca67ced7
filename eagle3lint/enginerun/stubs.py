"""Inert stand-ins for packages a model module imports but a text-only CPU launch never calls.

The CPU engine's environment has no torchvision (PyPI's builds fail to import beside the CPU
torch), yet multimodal model modules import it at module level, and vLLM imports every model
module while it inspects an architecture (in a subprocess, so the stand-in goes on PYTHONPATH,
not only into this process). Every name resolves to a placeholder that fails only when used.
"""

from __future__ import annotations

from pathlib import Path

_PLACEHOLDER = '''"""An inert stand-in written by eagle3lint engine-run: names resolve, nothing works."""
__version__ = "0.0.0+eagle3lint.stub"


class _Inert:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("eagle3lint engine-run: an inert stand-in was called")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __getitem__(self, key):
        return _Inert()

    def __mro_entries__(self, bases):
        return (object,)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Inert()
'''

STUBBED = {
    "torchvision": ("transforms", "transforms/v2", "transforms/functional", "transforms/v2/functional", "io", "ops", "models", "utils", "datasets"),
}


def write_stubs(root: Path) -> Path:
    """The stand-in packages under ``root`` (made once); the folder to put first on PYTHONPATH."""
    for package, modules in STUBBED.items():
        for module in ("", *modules):
            folder = root / package / module
            folder.mkdir(parents=True, exist_ok=True)
            init = folder / "__init__.py"
            if not init.exists():
                init.write_text(_PLACEHOLDER, encoding="utf-8")
            if module.endswith("functional"):
                (folder.parent / "functional.py").unlink(missing_ok=True)
    return root
