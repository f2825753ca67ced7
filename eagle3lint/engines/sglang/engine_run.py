"""SGLang's own start-up on CPU as the ground truth for the interface verdicts: how
``eagle3lint engine-run --engine sglang`` launches it.

SGLang publishes no CPU build of its kernels for machines without AMX, yet its start-up runs on
CPU as far as the EAGLE-3 interface calls on the target: the scheduler builds the real target
class, asks it to capture the auxiliary layers (``set_eagle3_layers_to_capture``: 0.5.9
``model_executor/model_runner.py``, 0.5.23 ``model_runner_components/attention_backend_setup.py``
after a ``hasattr`` check), loads the drafter and hands it the target's embedding and head
(``get_embed_and_head``), then stops at a wall common to every class: ``speculative/draft_utils.py``
has no CPU attention backend for drafting. Reaching the wall is ``works`` for what CPU can show;
an exception before it is the class's ``crash``, or ``refused`` where it is the engine's own message.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from eagle3lint.enginerun.spec import EngineRunSpec

# 0.5.23's own refusal (attention_backend_setup.py): the model lacks the interface, said before the call.
REFUSALS = (
    re.compile(r"does not implement set_eagle3_layers_to_capture"),
    re.compile(r"EAGLE3? is not supported for model", re.IGNORECASE),
)

# What a CPU start-up cannot show, written beside every SGLang run.
LIMITS = (
    "no EAGLE-3 generation on CPU: a `silent` outcome (the target captures the wrong states) cannot be seen; "
    "`works` means every interface call on the target passed and the launch reached the drafting wall",
    "the CUDA-graph path's second `set_eagle3_layers_to_capture()` call (cuda_graph_runner.py) is not run "
    "(CUDA graphs are off on CPU); a class failing only there is predicted `crash` and runs `works`",
    "MLA forward passes (DeepSeek-style targets) are not reached: torch_native attention has no MLA path",
)


def _default_pythons() -> list[Path]:
    named = os.environ.get("EAGLE3LINT_SGLANG_ENGINE_PYTHON")
    if named:
        return [Path(named)]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eagle3lint" / "engines"
    found = sorted(root.glob("sglang-cpu-*/bin/python"), key=lambda p: _version_key(p.parent.parent.name), reverse=True) if root.is_dir() else []
    return [p for p in found if (p.parent.parent / ".eagle3lint-ready").exists()]


def _version_key(folder: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", folder.rsplit("-", 1)[-1]))


# A model module that handles multimodal inputs (its classes are wrappers, launched language-model-only).
_MULTIMODAL = re.compile(r"MultimodalInputs|mm_utils|general_mm_embed_routine")


def _text_only(package_root: Path) -> frozenset[str]:
    """The architectures registered (``EntryClass``) by model modules that handle no multimodal input."""
    found: set[str] = set()
    for path in sorted((package_root / "srt" / "models").glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        if _MULTIMODAL.search(text):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
                values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                found.update(v.id for v in values if isinstance(v, ast.Name))
    return frozenset(found)


SPEC = EngineRunSpec(
    engine="sglang",
    probe=Path(__file__).with_name("cpu_probe.py"),
    refusals=REFUSALS,
    default_pythons=_default_pythons,
    install_hint="bash .ci/install-sglang-cpu [VERSION] (a venv of its own: torch==2.13.0, the sglang wheel without "
    "its CUDA dependencies, the pure-Python ones start-up imports), or name an engine interpreter with --engine-python",
    runner="SGLang's scheduler and ModelRunner on CPU (torch_native attention, no CUDA graphs), up to the drafting wall",
    env={
        "SGLANG_USE_CPU_ENGINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    },
    text_only=_text_only,
    distributions=("sglang",),
    # The inert sgl_kernel stand-in (torchvision's comes from enginerun.stubs).
    pythonpath=(Path(__file__).with_name("stubs"),),
    limits=LIMITS,
)
