"""Shapes that work and must stay clean (an outside QA pass found each as a false error): the
flag set by a helper ``__init__`` calls, the flag read through ``getattr(self, ..., default)``,
and the aux states handed off inside ``**kwargs``. Each is the fixture's E3L103 case
(``flag_late.py``: the flag first assigned in the setter) changed one way."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import FIXTURES, run_json

INIT_END = "        self.logits_processor = LogitsProcessor()\n"
FLAG_TEST = "        if self.capture_aux_hidden_states:\n"
HANDOFF = "        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch, aux_hidden_states)\n"
INIT_FLAG = INIT_END + "        self.capture_aux_hidden_states = False\n"

CASES: dict[str, list[tuple[str, str]]] = {
    "HelperInit": [
        (INIT_END, INIT_END + "        self._reset_capture()\n\n    def _reset_capture(self):\n        self.capture_aux_hidden_states = False\n"),
    ],
    "GetattrFlag": [(FLAG_TEST, "        if getattr(self, 'capture_aux_hidden_states', False):\n")],
    "KwargsHandoff": [
        (INIT_END, INIT_FLAG),
        (HANDOFF, '        kw = {"aux_hidden_states": aux_hidden_states}\n'
                  "        return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch, **kw)\n"),
    ],
}


def _variant(models: Path, name: str, edits: list[tuple[str, str]]) -> Path:
    text = (models / "flag_late.py").read_text().replace("LateFlagForCausalLM", f"{name}ForCausalLM")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = models / f"{name.lower()}.py"
    path.write_text(text)
    return path


def _models(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_capture", tree)
    return tree / "sglang" / "srt" / "models"


def test_working_capture_shapes_have_no_finding(tmp_path: Path) -> None:
    models = _models(tmp_path)
    paths = [_variant(models, name, edits) for name, edits in CASES.items()]
    code, report = run_json("check", "--no-cache", *paths)
    assert report["errors"] == []
    statuses = {m["class"]: m["status"] for m in report["models"]}
    assert statuses == {f"{name}ForCausalLM": "supported" for name in CASES}, report["findings"]
    assert report["findings"] == [] and code == 0


def test_the_flag_read_without_default_and_never_initialised_is_still_reported(tmp_path: Path) -> None:
    path = _variant(_models(tmp_path), "Late", [(FLAG_TEST, "        if getattr(self, 'capture_aux_hidden_states'):\n")])
    code, report = run_json("check", "--no-cache", path)
    assert code == 1
    assert [f["code"] for f in report["findings"]] == ["E3L103"]
