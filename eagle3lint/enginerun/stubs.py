"""Inert stand-ins for packages a model module imports but a text-only CPU launch never calls.

The CPU engine's environment has no torchvision (PyPI's builds fail to import beside the CPU
torch), yet multimodal model modules import it at module level, and vLLM imports every model
module while it inspects an architecture (in a subprocess, so the stand-in goes on PYTHONPATH,
not only into this process). Every name resolves to a placeholder that fails only when used.
"""

from __future__ import annotations

from pathlib import Path

# The placeholder module: its names come from the probes' shared module (enginerun/probe_path/,
# on the launch's PYTHONPATH beside these stand-ins).
_PLACEHOLDER = '''"""An inert stand-in written by eagle3lint engine-run: names resolve, nothing works."""
from eagle3lint_probe import Inert as _Inert, inert_getattr as __getattr__  # noqa: F401

__version__ = "0.0.0+eagle3lint.stub"
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
            if not init.exists() or init.read_text(encoding="utf-8") != _PLACEHOLDER:
                init.write_text(_PLACEHOLDER, encoding="utf-8")
            if module.endswith("functional"):
                (folder.parent / "functional.py").unlink(missing_ok=True)
    return root
