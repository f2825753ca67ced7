"""Real config.json and safetensors files for the verify tests, written with the standard library.

The facts are the issue's sample: Kimi-K2.5 (hidden 7168, vocab 163840, 61 layers) and its public
EAGLE-3 drafter (LlamaForCausalLMEagle3, hidden 7168, vocab 163840, draft_vocab_size 32000, aux layer
ids [2, 30, 58]). Tensor data are written as sparse regions: the files are valid safetensors (header
and data sizes agree) yet take almost no disk.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

KIMI_HIDDEN, KIMI_VOCAB, KIMI_LAYERS = 7168, 163840, 61
DRAFT_VOCAB = 32000
# SpecForge's default for a 61-layer target ([1, n // 2 - 1, n - 4]: layer outputs, states 2, 30, 58).
KIMI_AUX_IDS = [1, 29, 57]

_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "I32": 4, "BOOL": 1}
_INT_CODES = {"I64": "q", "I32": "i"}


def kimi_target_config() -> dict[str, Any]:
    return {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": {
            "architectures": ["DeepseekV3ForCausalLM"],
            "hidden_size": KIMI_HIDDEN,
            "vocab_size": KIMI_VOCAB,
            "num_hidden_layers": KIMI_LAYERS,
        },
        "vision_config": {"hidden_size": 1152},
    }


def kimi_drafter_config() -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": KIMI_HIDDEN,
        "intermediate_size": 18432,
        "num_hidden_layers": 1,
        "vocab_size": KIMI_VOCAB,
        "draft_vocab_size": DRAFT_VOCAB,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(KIMI_AUX_IDS), "use_aux_hidden_state": True},
    }


def kimi_drafter_tensors(
    hidden: int = KIMI_HIDDEN, aux_count: int = 3, draft_vocab: int = DRAFT_VOCAB, projections: bool = False
) -> dict[str, tuple[str, list[int]]]:
    """The drafter's tensors; the large projections (fc, lm_head: ~770 MB, written sparse) only when
    a test checks their shapes, so a filesystem without sparse files is not filled by the suite."""
    tensors: dict[str, tuple[str, list[int]]] = {
        "d2t": ("I64", [draft_vocab]),
        "t2d": ("BOOL", [KIMI_VOCAB]),
        "norm.weight": ("BF16", [hidden]),
    }
    if projections:
        tensors["fc.weight"] = ("BF16", [hidden, hidden * aux_count])
        tensors["lm_head.weight"] = ("BF16", [draft_vocab, hidden])
    return tensors


def write_config(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return folder


def write_safetensors(
    path: Path, tensors: dict[str, tuple[str, list[int]]], truncate_by: int = 0, values: dict[str, list[int]] | None = None
) -> Path:
    """A valid safetensors file; tensor data are zeros (sparse) except the integer tensors
    ``values`` gives (a small ``d2t``, written for real). ``truncate_by`` cuts the data short, as
    an interrupted download would."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    written: list[tuple[int, bytes]] = []
    for name, (dtype, shape) in tensors.items():
        size = _DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        if values and name in values:
            data = struct.pack(f"<{len(values[name])}{_INT_CODES[dtype]}", *values[name])
            assert len(data) == size, f"{name}: {len(values[name])} values for shape {shape}"
            written.append((offset, data))
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(raw)))
        handle.write(raw)
        handle.truncate(8 + len(raw) + max(0, offset - truncate_by))
        for start, data in written:
            handle.seek(8 + len(raw) + start)
            handle.write(data)
    return path


def write_kimi_pair(base: Path, target: dict[str, Any] | None = None, drafter: dict[str, Any] | None = None,
                    tensors: dict[str, tuple[str, list[int]]] | None = None) -> tuple[Path, Path]:
    """A Kimi-K2.5 target folder and its drafter folder (config + model.safetensors)."""
    target_dir = write_config(base / "kimi-k2.5", target if target is not None else kimi_target_config())
    drafter_dir = write_config(base / "kimi-k2.5-eagle3", drafter if drafter is not None else kimi_drafter_config())
    write_safetensors(drafter_dir / "model.safetensors", tensors if tensors is not None else kimi_drafter_tensors())
    return target_dir, drafter_dir
