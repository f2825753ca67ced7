"""The vocabulary mapping's content: the drafter's ``d2t`` tensor read (it is small: one integer
per draft token; a bounded read through the checkpoint reader's confinement), and every draft
id mapped into the target vocabulary as the release's code reads the tensor. SGLang and vLLM add
the draft id to the stored value (``d2t`` holds offsets: ``hot_token_id = d2t + arange(...)``,
``top + d2t[top]``); the release's own use is found in its draft class's files.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from eagle3lint.verify.configs import CRASH, OK, PROBLEM, UNKNOWN, PreflightResult
from eagle3lint.verify.model_files import ModelFileError, OutsideFolder
from eagle3lint.verify.pair.context import PairContext
from eagle3lint.verify.pair.draft_class import module_files
from eagle3lint.verify.safetensors_header import CheckpointTensors, read_int_tensor

CHECK = "d2t-content"
# A draft vocabulary of millions of tokens is not one: 4M int64 values are 32 MiB.
MAX_D2T = 4 * 1024 * 1024
# The release's use of the tensor: the draft id (an ``arange``, ``top``) added to it.
_OFFSETS = re.compile(r"(loaded_weight|d2t|draft_id_to_target_id)\s*\+\s*torch\.arange|\+\s*(self\.)?(d2t|draft_id_to_target_id)\b|(d2t|draft_id_to_target_id)\s*\[[^\]]*\]\s*\+|\b(top|base|draft_token_ids?)\s*\+\s*(self\.)?(model\.)?(d2t|draft_id_to_target_id)")


def mapping_use(ctx: PairContext) -> tuple[str, int] | None:
    """Where the release adds the draft id to the stored ``d2t`` value (file, line)."""
    if ctx.draft_class is None:
        return None
    for path in module_files(ctx.code, ctx.draft_class.ref, ctx.index, imports=True):
        text = ctx.code.text(path)
        if text is None or ("d2t" not in text and "draft_id_to_target_id" not in text):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if _OFFSETS.search(line):
                return str(path), number
    return None


def check_d2t_content(ctx: PairContext | None, result: PreflightResult, tensors: CheckpointTensors, folder: Path, target_vocab: int | None) -> None:
    d2t = tensors.find("d2t")
    if d2t is None or target_vocab is None or len(d2t.shape) != 1:
        return
    try:
        values = read_int_tensor(folder, d2t, MAX_D2T)
    except OutsideFolder as exc:
        result.add(CHECK, UNKNOWN, f"{exc}: the mapping's values are not read", decides="the d2t values (a copy of the file inside the folder)")
        return
    except ModelFileError as exc:
        result.add(CHECK, PROBLEM, str(exc), CRASH, evidence=[_tensor(d2t.name)])
        return
    offsets = [i + v for i, v in enumerate(values)]
    outside = [i for i, t in enumerate(offsets) if not 0 <= t < target_vocab]
    absolute_ok = all(0 <= v < target_vocab for v in values)
    use = mapping_use(ctx) if ctx is not None else None
    evidence = [_tensor(d2t.name)]
    if use is not None and ctx is not None:
        evidence.append({"kind": "release", "where": ctx.rel(use[0]), "line": use[1], "what": "adds the draft id to the stored value"})
    if not outside:
        duplicates = len(offsets) - len(set(offsets))
        note = f" ({duplicates} draft ids share a target id)" if duplicates else ""
        result.add(CHECK, OK, f"`{d2t.name}`: every one of the {len(values)} draft ids maps inside the target's {target_vocab}-token vocabulary{note}", evidence=evidence)
        return
    example = outside[0]
    what = f"draft id {example} maps to {offsets[example]} (= {example} + {values[example]})"
    if use is None:
        decides = "whether the release adds the draft id to d2t (offsets) or takes it as the target id; its draft class's files do not say"
        if absolute_ok:
            result.add(CHECK, UNKNOWN, f"`{d2t.name}`: read as offsets, {len(outside)} draft ids map past the {target_vocab}-token vocabulary ({what}); read as target ids, all fit", decides=decides, evidence=evidence)
            return
    shape = ""
    if absolute_ok and _increasing(values):
        shape = "; the values look like target ids, not offsets: the checkpoint was written for a reader that takes d2t as absolute ids"
    where = f" ({ctx.rel(use[0])}:{use[1]})" if use is not None and ctx is not None else ""
    result.add(
        CHECK, PROBLEM,
        f"`{d2t.name}`: {len(outside)} of {len(values)} draft ids map outside the target's {target_vocab}-token vocabulary as the release "
        f"reads the tensor{where}: {what}{shape}: a draft token past the vocabulary fails an index (a device-side assert)",
        CRASH, evidence=evidence,
    )


def _increasing(values: list[int]) -> bool:
    return all(b > a for a, b in itertools.pairwise(values))


def _tensor(name: str) -> dict[str, object]:
    return {"kind": "tensor", "where": name, "line": None}
