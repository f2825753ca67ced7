"""A model's EAGLE-3 status across real releases (``models --release RANGE``): the pinned cases
placed on the releases that shipped and fixed them, in one history run each."""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.release


@cache
def _history(query: str) -> dict[str, Any]:
    done = run_cli("models", "--release", query, "--format", "json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _row(data: dict[str, Any], name: str) -> dict[str, Any]:
    (row,) = [m for m in data["models"] if m["class"] == name and not m["variant"]]
    return row


def test_kimi_k25_is_broken_at_0_5_9_and_supported_from_0_5_10() -> None:
    data = _history("sglang>=0.5.8,<=0.5.10")
    assert data["releases"] == ["0.5.8", "0.5.8.post1", "0.5.9", "0.5.10"]
    kimi = _row(data, "KimiK25ForConditionalGeneration")
    # Not in 0.5.8; the wrapper that forwards nothing (E3L004) in 0.5.9; fixed in 0.5.10, where
    # what is left is information: its DeepSeek decoder skips the capture under two-batch
    # overlap, an option off by default (E3L107).
    assert kimi["history"] == {
        "0.5.8": None,
        "0.5.8.post1": None,
        "0.5.9": {"status": "broken", "outcome": "crash", "codes": ["E3L004"]},
        "0.5.10": {"status": "supported", "outcome": "works", "codes": ["E3L107"]},
    }
    assert kimi["first_supported"] == kimi["supported_since"] == "0.5.10"
    assert kimi["last_broken"] == {"release": "0.5.9", "codes": ["E3L004"]}
    assert [(c["release"], c["to"]["status"]) for c in kimi["changes"]] == [("0.5.9", "broken"), ("0.5.10", "supported")]
    # The flagship is supported throughout; the table of the same history says so in a line.
    llama = _row(data, "LlamaForCausalLM")
    assert llama["first_supported"] == "0.5.8" and llama["changes"] == [] and llama["last_broken"] is None
    # A wide terminal: the row in one block, however the test run's environment sizes it.
    table = run_cli(
        "models", "--release", "sglang>=0.5.8,<=0.5.10", "--model", "KimiK25ForConditionalGeneration",
        env={**os.environ, "COLUMNS": "200"},
    )
    assert table.returncode == 0
    (line,) = [t for t in table.stdout.splitlines() if t.startswith("KimiK25ForConditionalGeneration")]
    assert line.split() == ["KimiK25ForConditionalGeneration", "crash", "ok", "0.5.10", "0.5.9", "E3L004"]
