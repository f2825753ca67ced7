"""A changed file summarised from its earlier version's summary (``source.reuse``) gives the
summary a whole parse gives, units included, whether its units are taken, split into methods,
or refused; and the cache hands a module's last summary to the parse of its next version."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path

import pytest

from eagle3lint.common.findings import FileError
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run.cache import Cache
from eagle3lint.run.runner import build_index
from eagle3lint.source import reuse
from eagle3lint.source.capture_facts import CaptureSpec
from eagle3lint.source.sources import ParseRequest, parse_module
from eagle3lint.source.summary_types import ModuleSummary
from tests.helpers import FIXTURES, release_root

BEFORE = '''\
"""A model file."""
import torch
from torch import nn

from .base import Base, make


class Small(nn.Module):
    flag = True

    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([Layer(config) for _ in range(3)])
        self.model = make(config)
        self.layers_to_capture = []

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.layers_to_capture = [2] if layer_ids is None else [i + 1 for i in layer_ids]

    def forward(self, x):
        aux = []
        for i, layer in enumerate(self.layers):
            if i in self.layers_to_capture:
                aux.append(x)
            x = layer(x)
        return x, aux

    @property
    def inner(self):
        return self.model

    def get_embed_and_head(self):
        return self.model.embed, self.model.head


@torch.no_grad()
def helper(a, b=1):
    return a + b


class Tail(Small):
    def load_weights(self, weights):
        for name, w in weights:
            pass

    def last(self):
        return 1
'''


CAPTURE = CaptureSpec(
    functions=frozenset({"forward", "set_eagle3_layers_to_capture"}),
    setters=frozenset({"set_eagle3_layers_to_capture"}),
    eagle3_setter="set_eagle3_layers_to_capture",
)


def _summary(path: Path, text: str, previous: ModuleSummary | None = None) -> ModuleSummary | FileError:
    path.write_text(text, encoding="utf-8", newline="")
    request = ParseRequest(str(path), "pkg.models.m", False, frozenset({"forward", "get_embed_and_head"}), CAPTURE)
    if previous is not None:
        blob = pickle.dumps(previous)  # the parse gets its own copy, as a worker decodes one
        request = dataclasses.replace(request, previous=lambda: pickle.loads(blob))
    return parse_module(request)


def _both(tmp_path: Path, before: str, after: str) -> tuple[ModuleSummary | FileError, ModuleSummary | FileError]:
    previous = _summary(tmp_path / "old.py", before)
    assert isinstance(previous, ModuleSummary)
    whole = _summary(tmp_path / "m.py", after)
    reused = _summary(tmp_path / "m.py", after, previous)
    return whole, reused


def _placed(before: str, after: str, tmp_path: Path) -> list[tuple[str, bool]]:
    previous = _summary(tmp_path / "old.py", before)
    assert isinstance(previous, ModuleSummary)
    planned = reuse.plan_reuse(after, previous)
    return [] if planned is None else [(p.unit.head.strip(), p.method) for p in planned[1]]


CHANGES = {
    "an import added": lambda t: t.replace("import torch\n", "import os\nimport torch\n"),
    "lines removed at the top": lambda t: t.replace('"""A model file."""\n', ""),
    "a method changed": lambda t: t.replace("return x, aux", "x = x * 2\n        return x, aux"),
    "the last method changed": lambda t: t.replace("return 1\n", "return 2\n"),
    "a field added at a class's end": lambda t: t + "    extra: int = 0\n",
    "a method moved to another class": lambda t: t.replace(
        "    def last(self):\n        return 1\n", "    def get_embed_and_head(self):\n        return self.model.embed, self.model.head\n"
    ),
    "a class renamed": lambda t: t.replace("class Tail(Small)", "class Tail2(Small)"),
    "a decorator added": lambda t: t.replace("def helper", "@staticmethod\ndef helper"),
    "a unit quoted in a string": lambda t: t.replace('"""A model file."""\n', '"""\n@torch.no_grad()\ndef helper(a, b=1):\n    return a + b\n"""\n'),
    "a unit under an if": lambda t: t.replace("@torch.no_grad()\ndef helper", "if True:\n  @torch.no_grad()\n  def helper").replace(
        "    return a + b\n", "      return a + b\n"
    ),
    "CRLF line endings": lambda t: t.replace("\n", "\r\n").replace("import torch\r\n", "import os\r\nimport torch\r\n"),
    "CR line endings": lambda t: t.replace("\n", "\r").replace("import torch\r", "import os\rimport torch\r"),
    "a form feed between classes": lambda t: t.replace("\n\n@torch.no_grad()", "\n\x0c\n@torch.no_grad()").replace("import torch\n", "import os\nimport torch\n"),
    "a line separator in a string": lambda t: t.replace('"""A model file."""', '"""A model\u2028file."""'),
    "a class defined twice": lambda t: "import os\n" + t + "\n\nclass Small:\n    pass\n",
    "a method whose body grew deeper": lambda t: t.replace("        return 1\n", "        return 1\n        if x:\n            y = 2\n"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_reused_summary_is_the_whole_parse_s(tmp_path: Path, change: str) -> None:
    after = CHANGES[change](BEFORE)
    assert after != BEFORE
    whole, reused = _both(tmp_path, BEFORE, after)
    assert isinstance(whole, ModuleSummary) and isinstance(reused, ModuleSummary)
    assert reused == whole


def test_what_is_taken_whole_split_or_refused(tmp_path: Path) -> None:
    added = _placed(BEFORE, CHANGES["an import added"](BEFORE), tmp_path)
    assert added == [("class Small(nn.Module):", False), ("@torch.no_grad()", False), ("class Tail(Small):", False)]
    # The class whose last method changed is split: its other method is taken alone.
    split = _placed(BEFORE, CHANGES["the last method changed"](BEFORE), tmp_path)
    assert ("def load_weights(self, weights):", True) in split and ("class Tail(Small):", False) not in split
    # A class that gained a field at its end is not the earlier class, though its text begins so.
    grown = _placed(BEFORE, CHANGES["a field added at a class's end"](BEFORE), tmp_path)
    assert ("class Tail(Small):", False) not in grown and ("def last(self):", True) in grown
    # Methods with self-assignments and __init__ add to the class: never taken alone.
    heads = {h for h, _ in _placed(BEFORE, BEFORE.replace("class Small(nn.Module):", "class Small(nn.Module):  # edited"), tmp_path)}
    assert "def forward(self, x):" in heads and "def __init__(self, config):" not in heads
    assert "def set_eagle3_layers_to_capture(self, layer_ids=None):" not in heads


def test_a_unit_found_where_no_statement_can_stand_is_parsed_whole(tmp_path: Path) -> None:
    previous = _summary(tmp_path / "old.py", BEFORE)
    assert isinstance(previous, ModuleSummary)
    helper = "@torch.no_grad()\ndef helper(a, b=1):\n    return a + b\n"
    # The function's text now lies only inside the module's docstring, on whole lines: its
    # stand-in is no statement there, and the whole text is parsed.
    after = BEFORE.replace(helper, "").replace('"""A model file."""\n', f'"""\n{helper}"""\n')
    assert after.count("def helper") == 1
    assert reuse.reused_tree(after, previous, ast.parse) is None
    whole, reused = _both(tmp_path, BEFORE, after)
    assert reused == whole


def test_a_file_naming_the_stand_in_is_parsed_whole(tmp_path: Path) -> None:
    after = CHANGES["an import added"](BEFORE) + f"\n{reuse.STAND_IN}0 = 1\n"
    assert _placed(BEFORE, after, tmp_path) == []
    whole, reused = _both(tmp_path, BEFORE, after)
    assert reused == whole


def test_a_new_version_that_does_not_parse_reports_its_own_error(tmp_path: Path) -> None:
    after = CHANGES["an import added"](BEFORE).replace("def last(self):", "def last(self:")
    whole, reused = _both(tmp_path, BEFORE, after)
    assert isinstance(whole, FileError) and reused == whole


def test_an_earlier_summary_that_cannot_be_read_is_a_whole_parse(tmp_path: Path) -> None:
    after = CHANGES["an import added"](BEFORE)
    whole = _summary(tmp_path / "m.py", after)
    request = ParseRequest(str(tmp_path / "m.py"), "pkg.models.m", False, frozenset({"forward", "get_embed_and_head"}))
    request = dataclasses.replace(request, capture=CAPTURE, previous=lambda: None)
    assert parse_module(request) == whole


def test_the_cache_hands_the_last_summary_of_a_module_to_its_next_version(tmp_path: Path) -> None:
    engine = discover_engine([FIXTURES / "sglang_basic" / "sglang"])
    tree = tmp_path / "m.py"
    tree.write_text(BEFORE)
    cache = Cache(tmp_path / "cache", engine, "")
    seen: list[ParseRequest] = []

    def parse(requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
        seen.extend(requests)
        return [parse_module(r) for r in requests]

    request = ParseRequest(str(tree), "sglang.srt.models.m", False, frozenset({"forward"}))
    first = cache.provider(parse)([request])[0]
    assert isinstance(first, ModuleSummary) and seen[-1].previous is None
    tree.write_text(CHANGES["an import added"](BEFORE))
    again = Cache(tmp_path / "cache", engine, "")  # the next run
    second = again.provider(parse)([request])[0]
    assert seen[-1].previous is not None
    earlier = seen[-1].previous()
    assert isinstance(earlier, ModuleSummary) and earlier.source_digest == first.source_digest
    assert isinstance(second, ModuleSummary) and second == parse_module(request)
    # Both summaries were stored where they were made, and the second is served from the cache.
    third = Cache(tmp_path / "cache", engine, "")
    assert third.provider(parse)([request])[0] == second and third.hits == 1
    # Another module of the same name in another place is not this one.
    other = dataclasses.replace(request, module="sglang.srt.models.other")
    tree.write_text(CHANGES["a method changed"](BEFORE))
    Cache(tmp_path / "cache", engine, "").provider(parse)([other])
    assert seen[-1].previous is None


def _changed_pairs(before: str, after: str) -> list[tuple[ParseRequest, ParseRequest]]:
    old_root, new_root = release_root(before), release_root(after)
    old_index, new_index = build_index(discover_engine([old_root])), build_index(discover_engine([new_root]))
    pairs = []
    for path in sorted(new_root.rglob("*.py")):
        rel = path.relative_to(new_root)
        if "models" not in rel.parts:
            continue
        old = old_root / rel
        if old.is_file() and old.read_bytes() != path.read_bytes():
            pairs.append((old_index.request_for(old), new_index.request_for(path)))
    return pairs


@pytest.mark.release
@pytest.mark.parametrize(("before", "after"), [("sglang==0.5.22", "sglang==0.5.23"), ("vllm==0.33.0", "vllm==0.34.0")])
def test_every_changed_model_file_of_a_release_is_summarised_as_a_whole_parse_would(before: str, after: str) -> None:
    pairs = _changed_pairs(before, after)
    assert len(pairs) > 50
    taken = 0
    for old_request, request in pairs:
        previous = parse_module(old_request)
        if not isinstance(previous, ModuleSummary):
            continue
        planned = reuse.plan_reuse(Path(request.path).read_text(encoding="utf-8"), previous)
        taken += len(planned[1]) if planned else 0
        blob = pickle.dumps(previous)
        reused = parse_module(dataclasses.replace(request, previous=lambda b=blob: pickle.loads(b)))
        assert reused == parse_module(request), request.path
    assert taken > 500  # the comparison is of reused summaries, not of whole parses again


def test_a_text_repeating_a_unit_thousands_of_times_is_summarised_as_a_whole_parse(tmp_path: Path) -> None:
    # Every copy is a place the unit's head is found: the search stays bounded, and whatever it
    # takes, the summary is the whole parse's.
    unit = "@torch.no_grad()\ndef helper(a, b=1):\n    return a + b\n\n\n"
    after = "import os\n" + unit * 5000 + BEFORE
    whole, reused = _both(tmp_path, BEFORE, after)
    assert isinstance(whole, ModuleSummary) and reused == whole
    previous = _summary(tmp_path / "old.py", BEFORE)
    assert isinstance(previous, ModuleSummary)
    planned = reuse.plan_reuse(after, previous)
    assert planned is not None and len(planned[1]) <= len(previous.units) + sum(len(u.methods) for u in previous.units)
