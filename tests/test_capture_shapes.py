"""Shapes that work and must stay clean (an outside QA pass found each as a false error): the
flag set by a helper ``__init__`` calls, the flag read through ``getattr(self, ..., default)``,
and the aux states handed off inside ``**kwargs``."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import FIXTURES, run_json

HEAD = '''from typing import List, Optional

from torch import nn

from sglang.srt.layers.common import LogitsProcessor
from sglang.srt.models.list_lm import ListDecoder


class {name}(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = ListDecoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
        self.logits_processor = LogitsProcessor()
{init}
    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            self.model.layers_to_capture = [2, 4, 6]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]

    def forward(self, input_ids, positions, forward_batch):
        hidden_states = self.model(input_ids, positions, forward_batch)
        aux_hidden_states = None
        if {test}:
            hidden_states, aux_hidden_states = hidden_states
{handoff}

EntryClass = {name}
'''
PLAIN_HANDOFF = "        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states)"
CASES = {
    "helper_init.py": dict(
        name="HelperInitForCausalLM",
        init="        self._reset_capture()\n\n    def _reset_capture(self):\n        self.capture_aux_hidden_states = False\n",
        test="self.capture_aux_hidden_states",
        handoff=PLAIN_HANDOFF,
    ),
    "getattr_flag.py": dict(
        name="GetattrFlagForCausalLM",
        init="",
        test="getattr(self, 'capture_aux_hidden_states', False)",
        handoff=PLAIN_HANDOFF,
    ),
    "kwargs_handoff.py": dict(
        name="KwargsHandoffForCausalLM",
        init="        self.capture_aux_hidden_states = False\n",
        test="self.capture_aux_hidden_states",
        handoff='        kw = {"aux_hidden_states": aux_hidden_states}\n'
        "        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch, **kw)",
    ),
}


def test_working_capture_shapes_have_no_finding(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_capture", tree)
    models = tree / "sglang" / "srt" / "models"
    for filename, parts in CASES.items():
        (models / filename).write_text(HEAD.format(**parts))
    code, report = run_json("check", "--no-cache", *(models / f for f in CASES))
    assert report["errors"] == []
    statuses = {m["class"]: m["status"] for m in report["models"]}
    assert statuses == {parts["name"]: "supported" for parts in CASES.values()}, report["findings"]
    assert report["findings"] == [] and code == 0


def test_the_flag_read_without_default_and_never_initialised_is_still_reported(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_capture", tree)
    path = tree / "sglang" / "srt" / "models" / "late.py"
    parts = dict(CASES["getattr_flag.py"], name="LateForCausalLM", test="getattr(self, 'capture_aux_hidden_states')")
    path.write_text(HEAD.format(**parts))
    code, report = run_json("check", "--no-cache", path)
    assert code == 1
    assert [f["code"] for f in report["findings"]] == ["E3L103"]
