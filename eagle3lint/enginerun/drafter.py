"""The one-layer EAGLE-3 drafter a launch uses, written by the linter (not the probe) so that the
pair pre-flight can judge the very pair the engine runs: its config and a safetensors file with
the fusion layer's weight (zeros: the engine loads dummy weights; the pre-flight reads shapes)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from eagle3lint.enginerun.shrink import TEXT_HIDDEN, VOCAB, drafter_config

FUSED_STATES = 3


def target_sizes(config: dict[str, Any]) -> tuple[int, int]:
    """The language model's hidden size and vocabulary of a target config (top level or its
    ``text_config``)."""
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    hidden = text.get("hidden_size")
    vocab = text.get("vocab_size") or config.get("vocab_size")
    return (hidden if isinstance(hidden, int) else TEXT_HIDDEN), (vocab if isinstance(vocab, int) else VOCAB)


def write_drafter(folder: Path, hidden: int, vocab: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(drafter_config(hidden, vocab), indent=1), encoding="utf-8")
    shape = [hidden, hidden * FUSED_STATES]
    size = shape[0] * shape[1] * 4
    header = json.dumps({"fc.weight": {"dtype": "F32", "shape": shape, "data_offsets": [0, size]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(folder / "model.safetensors", "wb") as out:
        out.write(struct.pack("<Q", len(header)))
        out.write(header)
        out.write(bytes(size))
    return folder
