"""The sweep table's per-class cells: what a CPU `works` does not prove is said on its row."""

from __future__ import annotations

from types import ModuleType

from tests.helpers import load_bench_script


def _sweep() -> ModuleType:
    return load_bench_script("engine_sweep")


def _run(name: str, outcome: str, changes: list[str]) -> dict[str, object]:
    return {
        "architecture": name, "predicted": {"outcome": "works"}, "outcome": outcome, "cause": "interface calls passed",
        "agree": outcome == "works", "seconds": 20.0, "config": {"changes": changes},
    }


def _data(limits: list[str], runs: list[dict[str, object]]) -> dict[str, object]:
    return {
        "engine": "sglang", "engine_version": "0.0.1", "runner": "CPU", "limits": limits, "runs": runs,
        "summary": {},
    }


def test_a_works_row_says_what_the_cpu_build_cannot_show_and_mla_only_where_the_config_is_mla() -> None:
    sweep = _sweep()
    runs = [
        _run("PlainForCausalLM", "works", ["hidden_size: 4096 -> 128"]),
        _run("LatentForCausalLM", "works", ["kv_lora_rank: 512 -> 32"]),
        _run("BrokenForCausalLM", "crash", ["kv_lora_rank: 512 -> 32"]),
    ]
    table = sweep.render(_data(["no generation on CPU"], runs), {}, frozenset(r["architecture"] for r in runs), section=True)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ") and "ForCausalLM" in line}
    assert "not shown on CPU: a generation (a silent capture) and the CUDA-graph path's second setter call |" in rows["PlainForCausalLM"]
    assert "the MLA forward" in rows["LatentForCausalLM"] and "the MLA forward" not in rows["PlainForCausalLM"]
    assert "not shown on CPU" not in rows["BrokenForCausalLM"]


def test_an_engine_whose_cpu_build_shows_everything_adds_nothing() -> None:
    sweep = _sweep()
    runs = [_run("PlainForCausalLM", "works", [])]
    table = sweep.render(_data([], runs), {}, frozenset({"PlainForCausalLM"}), section=True)
    assert "not shown on CPU" not in table
