"""The pair pre-flight against real releases: for each class of pair failure, a pair that fails
on one release (or under one launch option) and the release or option where the same pair works,
with the evidence each answer rests on. Checkpoints are synthetic folders the tests write
(``tests/pair_helpers.py``); the releases are the cached real wheels."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.engines import knowledge_for
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run.preflight import run_preflight
from eagle3lint.verify.configs import PreflightResult
from eagle3lint.verify.pair.context import Launch
from tests.fakes.model_folders import kimi_drafter_config, write_kimi_pair
from tests.helpers import release_root, run_cli
from tests.pair_helpers import eagle_ids, shared_checks, write_pair

pytestmark = [pytest.mark.release, pytest.mark.usefixtures("shared_checks")]
__all__ = ["shared_checks"]

NO_GRAPHS = Launch(engine_args=("--disable-cuda-graph",))


def preflight(
    tmp: Path, release: str, family: str, drafter: dict[str, Any] | None = None, options: tuple[str, ...] = (),
    launch: Launch | None = None, ids: str | None = None, no_drafter: bool = False, **pair: Any,
) -> PreflightResult:
    engine = discover_engine([], engine_root=release_root(release))
    target, drafter_dir = write_pair(tmp / release.replace("==", "-") / "_".join(options or ("default",)), family, drafter, **pair)
    return run_preflight(
        str(target), None if no_drafter else str(drafter_dir), knowledge_for(engine.name), engine,
        engine_options=options, launch=launch or Launch(), drafter_ids=ids,
    )


def item(result: PreflightResult, check: str) -> Any:
    found = [i for i in result.items if i.check == check]
    assert len(found) == 1, [(i.check, i.status, i.message) for i in result.items]
    return found[0]


def whats(entry: Any) -> list[str]:
    return [str(e.get("what", "")) for e in entry.evidence]


# ---- layer ids as the release's code reads them ----------------------------------------------


def test_deepseek_setter_shift_of_explicit_ids(tmp_path: Path) -> None:
    """sgl-project/sglang#25454: 0.5.9 adds 1 to every explicit id; 0.5.23 only when the first is
    1. A drafter whose ids name layer inputs ([2, 30, 58], states 2/30/58) reads one layer too deep
    on 0.5.9 and what it was trained on on 0.5.23."""
    # No --drafter-ids: the list's shape says its ids name layer inputs (the seed's pair).
    pair = {"drafter": eagle_ids([2, 30, 58]), "launch": NO_GRAPHS}
    old = preflight(tmp_path, "sglang==0.5.9", "deepseek", **pair)
    layers = item(old, "layer-ids")
    assert (old.outcome, layers.outcome) == ("silent", "silent")
    assert "EAGLE reference code's default for a 61-layer target" in layers.message or "input-of-layer" in layers.message
    assert [(r["drafter_id"], r["trained_on"], r["reads"]) for r in layers.layers] == [
        (2, "layer 1's output", "layer 2's output"), (30, "layer 29's output", "layer 30's output"), (58, "layer 57's output", "layer 58's output"),
    ]
    assert any("deepseek_v2.py" in e["where"] and e["what"] == "writes `layers_to_capture`" for e in layers.evidence)
    assert any("#25454" in i.message for i in old.items if i.check == "defect")

    new = preflight(tmp_path, "sglang==0.5.23", "deepseek", **pair)
    assert new.outcome == "works", new.outcome_reason
    fixed = item(new, "layer-ids")
    assert "`layer_ids and layer_ids[0] == 1` is false" in whats(fixed)
    assert [r["reads"] for r in fixed.layers] == ["layer 1's output", "layer 29's output", "layer 57's output"]
    # The SpecForge convention (ids name layer outputs, first id 1) works on both releases.
    for release in ("sglang==0.5.9", "sglang==0.5.23"):
        assert preflight(tmp_path / "out", release, "deepseek", eagle_ids([1, 29, 57]), launch=NO_GRAPHS).outcome == "works"


def test_gpt_oss_final_boundary_id(tmp_path: Path) -> None:
    """sgl-project/sglang#32334: ids [24, 30, 36] name hidden-state boundaries of the 36-layer
    GPT-OSS, the last one after every layer. 0.5.9 shifts them to 25/31/37, never reaches 37 and
    hands the drafter two states (a width crash), and ignores norm_before_fc; 0.5.23 keeps a final
    boundary, captures it after the loop, and reads norm_before_fc."""
    drafter = {**eagle_ids([24, 30, 36]), "norm_before_fc": True}
    old = preflight(tmp_path, "sglang==0.5.9", "gpt-oss", drafter, ids="hidden_states", launch=NO_GRAPHS)
    layers = item(old, "layer-ids")
    assert (old.outcome, layers.outcome) == ("crash", "crash")
    assert "receives 2" in layers.message and "capture index 37" in layers.message
    assert item(old, "drafter-keys").outcome == "silent"
    assert "sglang 0.5.21 and later read it" in item(old, "drafter-keys").message

    new = preflight(tmp_path, "sglang==0.5.23", "gpt-oss", drafter, ids="hidden_states", launch=NO_GRAPHS)
    assert new.outcome == "works", new.outcome_reason
    assert [r["reads"] for r in item(new, "layer-ids").layers] == ["layer 23's output", "layer 29's output", "layer 35's output"]
    assert any("capture index 36 is layer 35's output" in w for w in whats(item(new, "layer-ids")))
    assert item(new, "drafter-keys").outcome == "works"


def test_vllm_runner_generation_decides_which_key_is_read(tmp_path: Path) -> None:
    """Ids nested in eagle_config: vLLM 0.18.0 reads only the top-level key and falls back to its
    default; 0.33.0's V1 runner reads the nested key, its V2 runner (the release's default) does
    not (it reads eagle_config.layer_ids)."""
    drafter = eagle_ids([1, 17, 29])
    assert preflight(tmp_path, "vllm==0.18.0", "llama", drafter, ids="hidden_states").outcome == "silent"
    v1 = preflight(tmp_path, "vllm==0.33.0", "llama", drafter, ("runner=v1",), ids="hidden_states")
    assert v1.outcome == "works", v1.outcome_reason
    assert "runner v1" in item(v1, "layer-ids").message and "gpu_model_runner.py" in item(v1, "layer-ids").message
    v2 = preflight(tmp_path, "vllm==0.33.0", "llama", drafter, ids="hidden_states")
    assert v2.outcome == "silent" and "runner v2" in item(v2, "layer-ids").message
    assert "`eagle_config.layer_ids`" in item(v2, "layer-ids").message


def test_launch_checks_are_found_where_each_release_keeps_them(tmp_path: Path) -> None:
    """vLLM 0.10.x keeps SpeculativeConfig in config/__init__.py, later releases in
    config/speculative.py: the checks are found by the engine's import path, not assumed."""
    old = preflight(tmp_path, "vllm==0.10.2", "llama", None)
    launch = item(old, "launch")
    assert launch.status == "ok", launch.message
    assert {e["where"] for e in launch.evidence} == {"vllm/config/__init__.py"}
    assert {e["what"] for e in launch.evidence} >= {"__post_init__", "_verify_args"}
    new = item(preflight(tmp_path / "new", "vllm==0.32.0", "llama", None), "launch")
    assert new.status == "ok" and {e["where"] for e in new.evidence} == {"vllm/config/speculative.py"}


def test_pipeline_parallelism_meets_each_runner_generations_check(tmp_path: Path) -> None:
    """vLLM 0.33.0: the V2 runner (the default) refuses EAGLE-3 with PP for a decoder that does not
    set supports_aux_hidden_states_over_pp (Afmoe); the V1 runner takes it and Afmoe's decoder
    captures by a rank-local index. --pp and the runner option reach both."""
    afmoe = {"target_keys": {"architectures": ["AfmoeForCausalLM"], "model_type": "afmoe"}}
    assert preflight(tmp_path / "one", "vllm==0.33.0", "llama", None, **afmoe).outcome == "works"
    two = preflight(tmp_path / "pp", "vllm==0.33.0", "llama", None, launch=Launch(pp=2), **afmoe)
    assert two.outcome == "refused" and "supports_aux_hidden_states_over_pp" in two.outcome_reason
    v1 = preflight(tmp_path / "v1", "vllm==0.33.0", "llama", None, ("runner=v1",), launch=Launch(pp=2), **afmoe)
    assert v1.outcome == "silent" and "E3L105" in v1.outcome_reason


def test_unrecorded_layers_are_every_trainers_default(tmp_path: Path) -> None:
    """A drafter naming no ids: the release's default ids for the target's depth, computed from
    its code, against the default every known trainer shares."""
    result = preflight(tmp_path, "sglang==0.5.23", "llama", None, launch=NO_GRAPHS)
    layers = item(result, "layer-ids")
    assert (result.outcome, layers.status) == ("works", "ok"), layers.message
    assert "the default of every trainer known here" in layers.message and "32-layer target" in layers.message


def test_shallow_target_default_ids_collide(tmp_path: Path) -> None:
    """Six layers: vLLM's default ids (2, n // 2, n - 3) are (2, 3, 3); the capture records each
    layer once, so a drafter that fuses three states gets two (confirmed by the CPU engine:
    tests/test_engine_runs_more.py)."""
    shallow = preflight(tmp_path / "6", "vllm==0.32.0", "llama", None, target_keys={"num_hidden_layers": 6})
    layers = item(shallow, "layer-ids")
    assert (shallow.outcome, layers.status, layers.outcome) == ("crash", "problem", "crash")
    assert "2 distinct states, the drafter fuses 3" in layers.message
    deep = preflight(tmp_path / "8", "vllm==0.32.0", "llama", None, target_keys={"num_hidden_layers": 8})
    assert item(deep, "layer-ids").status == "ok"  # 2, 4, 5: three states, every trainer's default


# ---- what the release's draft class accepts ----------------------------------------------------------


def test_multi_layer_drafter_refused_by_a_one_layer_draft_class(tmp_path: Path) -> None:
    drafter = {**eagle_ids([1, 15, 28]), "num_hidden_layers": 2}
    old = preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=NO_GRAPHS)
    guard = item(old, "draft-class")
    assert (old.outcome, guard.outcome) == ("refused", "refused")
    assert "EAGLE3 currently only supports 1 layer" in guard.message and guard.evidence[0]["where"].endswith("llama_eagle3.py")
    assert preflight(tmp_path, "sglang==0.5.23", "llama", drafter, launch=NO_GRAPHS).outcome == "works"


def test_fusion_layer_width_read_from_the_draft_class(tmp_path: Path) -> None:
    """Four aux layers: 0.5.9 builds its fusion layer for three states whatever the config says,
    0.5.23 for as many as the drafter names."""
    pair = {"drafter": eagle_ids([1, 8, 15, 28]), "aux_count": 4, "launch": NO_GRAPHS}
    old = preflight(tmp_path, "sglang==0.5.9", "llama", **pair)
    assert (old.outcome, item(old, "draft-class").outcome) == ("crash", "crash")
    assert "builds its fusion layer for 12288 inputs" in item(old, "draft-class").message
    new = preflight(tmp_path, "sglang==0.5.23", "llama", **pair)
    assert new.outcome == "works" and "16384 inputs" in item(new, "draft-class").message


# ---- engine-version defects (rule-pack data, confirmed in the source) ----------------------------------


def test_cuda_graphs_captured_before_the_setter_ran(tmp_path: Path) -> None:
    """sgl-project/sglang#22836: ids other than the default are lost in graph mode on 0.5.9
    (outputs of layers 2, 16, 29 where the default reads those of 1, 15, 28)."""
    drafter = eagle_ids([2, 16, 29])
    # Written by SpecForge, as the thread's drafter was (by shape alone, [2, 16, 29] is the EAGLE
    # reference's input-of-layer default for 32 layers).
    graphs = preflight(tmp_path, "sglang==0.5.9", "llama", drafter, ids="output")
    defect = [i for i in graphs.items if i.check == "defect" and "#22836" in i.message]
    assert graphs.outcome == "silent" and [d.outcome for d in defect] == ["silent"]
    assert defect[0].evidence[0]["where"].endswith("cuda_graph_runner.py")
    assert item(graphs, "layer-ids").outcome == "works"  # eager steps read the right layers
    assert preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=NO_GRAPHS, ids="output").outcome == "works"
    newer = preflight(tmp_path, "sglang==0.5.23", "llama", drafter, ids="output")
    assert newer.outcome == "works" and not [i for i in newer.items if "#22836" in i.message]
    # The default ids are what the graphs capture anyway.
    assert preflight(tmp_path / "default", "sglang==0.5.9", "llama", eagle_ids([1, 15, 28])).outcome == "works"


def test_v2_runner_ignores_use_aux_hidden_state(tmp_path: Path) -> None:
    """vllm-project/vllm#40656: a drafter that takes the final hidden state only."""
    drafter = {"eagle_config": {"use_aux_hidden_state": False}}
    v2 = preflight(tmp_path, "vllm==0.18.0", "llama", drafter, ("runner=v2",))
    assert v2.outcome == "silent" and "#40656" in v2.outcome_reason
    assert preflight(tmp_path, "vllm==0.18.0", "llama", drafter, ("runner=v1",)).outcome == "works"
    assert preflight(tmp_path, "vllm==0.33.0", "llama", drafter, ("runner=v2",)).outcome == "works"


def test_defect_patterns_hold_in_the_releases_they_name() -> None:
    """The rule-pack list cannot drift from the code: each defect's pattern is in a release it
    names and its fix (or its absence) in a later one."""
    from eagle3lint.source.rulepack import load_pack, rules_dir
    from eagle3lint.verify.pair.defects import confirm, parse_defects
    from eagle3lint.verify.pair.source import ReleaseCode

    expected = {
        "sglang-25454": {"sglang==0.5.9": "present", "sglang==0.5.23": "fixed"},
        "sglang-32334": {"sglang==0.5.9": "present", "sglang==0.5.23": "fixed"},
        "sglang-22836": {"sglang==0.5.9": "present", "sglang==0.5.23": "unread"},
        "vllm-40656": {"vllm==0.18.0": "present", "vllm==0.33.0": "fixed"},
        "vllm-46788": {"vllm==0.18.0": "present", "vllm==0.33.0": "fixed"},
    }
    seen = {}
    for engine_name in ("sglang", "vllm"):
        for defect in parse_defects(rules_dir() / f"{engine_name}.toml", load_pack(engine_name).raw.get("defect")):
            seen[defect.id] = defect
    assert set(seen) == set(expected)
    for ident, states in expected.items():
        for release, state in states.items():
            engine = discover_engine([], engine_root=release_root(release))
            assert confirm(ReleaseCode(engine.root), seen[ident]).state == state, (ident, release)


def test_drafter_keys_read_since_the_releases_the_data_names() -> None:
    """Each [[drafter_key]]'s `read_since` release mentions the key; an older cached release does not."""
    knowledge = knowledge_for("sglang")
    older = {"sglang": "sglang==0.5.9", "vllm": "vllm==0.11.0"}
    for key in knowledge.drafter_keys:
        for engine_name, since in key.read_since:
            newer_root, older_root = release_root(f"{engine_name}=={since}"), release_root(older[engine_name])
            assert _mentions(newer_root, key.leaf), (key.name, since)
            if older[engine_name] != f"{engine_name}=={since}":
                assert not _mentions(older_root, key.leaf), (key.name, older[engine_name])


def _mentions(root: Path, leaf: str) -> bool:
    """Whether a release's draft models or runners read a drafter key."""
    needle = re.compile(rf"[.\"']{leaf}\b")
    files = [*root.rglob("*eagle*.py"), *root.rglob("*model_runner*.py"), *root.rglob("spec_aux_hidden_state.py")]
    return any(needle.search(p.read_text(encoding="utf-8", errors="replace")) for p in files)


# ---- d2t content ---------------------------------------------------------------------------------------


def test_d2t_values_past_the_target_vocabulary(tmp_path: Path) -> None:
    vocab = 128256
    bad = [0] * 7 + [vocab]  # draft id 7 -> 7 + 128256
    for release in ("sglang==0.5.9", "vllm==0.33.0"):
        result = preflight(tmp_path / "bad", release, "llama", eagle_ids([1, 15, 28]), d2t=bad, launch=NO_GRAPHS, ids="output")
        d2t = item(result, "d2t-content")
        assert (result.outcome, d2t.outcome) == ("crash", "crash"), release
        assert "draft id 7 maps to 128263" in d2t.message
        assert any(e["kind"] == "release" and "eagle3" in e["where"] for e in d2t.evidence)  # the release adds the id
    absolute = list(range(vocab - 8, vocab))  # target ids stored where the release reads offsets
    result = preflight(tmp_path / "abs", "vllm==0.33.0", "llama", eagle_ids([1, 15, 28]), d2t=absolute)
    assert "look like target ids, not offsets" in item(result, "d2t-content").message
    good = preflight(tmp_path / "good", "sglang==0.5.9", "llama", eagle_ids([1, 15, 28]), d2t=[0, 5, 9, 20, 40, 100, 1000, vocab - 8], launch=NO_GRAPHS)
    assert item(good, "d2t-content").outcome == "works" and good.outcome == "works"


# ---- the launch --------------------------------------------------------------------------------------


def test_speculative_flags_judged_by_the_release_checks(tmp_path: Path) -> None:
    drafter = eagle_ids([1, 15, 28])
    alone = preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=Launch(eagle_topk=4, engine_args=("--disable-cuda-graph",)))
    assert (alone.outcome, item(alone, "launch").outcome) == ("crash", "crash")
    assert "server_args.py" in item(alone, "launch").evidence[0]["where"]
    together = Launch(num_steps=3, eagle_topk=4, num_draft_tokens=8, engine_args=("--disable-cuda-graph",))
    assert preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=together).outcome == "works"
    paged = Launch(num_steps=3, eagle_topk=4, num_draft_tokens=8, engine_args=("--disable-cuda-graph", "--page-size 16 --attention-backend triton"))
    refused = preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=paged)
    assert refused.outcome == "refused" and "page_size > 1" in item(refused, "launch").message
    # 0.5.23's checks take --eagle-topk alone.
    assert preflight(tmp_path, "sglang==0.5.23", "llama", drafter, launch=Launch(eagle_topk=4)).outcome == "works"


def test_eagle3_without_a_draft_path(tmp_path: Path) -> None:
    vllm = preflight(tmp_path, "vllm==0.33.0", "llama", no_drafter=True)
    assert vllm.outcome == "refused" and "without speculative model" in item(vllm, "launch").message
    sglang = preflight(tmp_path, "sglang==0.5.9", "deepseek", no_drafter=True)
    own = item(sglang, "draft-path")
    assert (sglang.outcome, own.outcome) == ("crash", "crash")
    assert "loads the target itself as the drafter" in own.message
    with_drafter = preflight(tmp_path, "sglang==0.5.9", "deepseek", eagle_ids([1, 29, 57]), launch=NO_GRAPHS)
    assert not [i for i in with_drafter.items if i.check == "draft-path"] and with_drafter.outcome == "works"


def test_tensor_parallel_size_must_split_the_drafter_heads(tmp_path: Path) -> None:
    drafter = eagle_ids([1, 15, 28])
    three = preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=Launch(tp=3, engine_args=("--disable-cuda-graph",)))
    assert (three.outcome, item(three, "tensor-parallel").outcome) == ("crash", "crash")
    assert item(three, "tensor-parallel").evidence[-1]["where"].endswith("models/llama.py")
    assert preflight(tmp_path, "sglang==0.5.9", "llama", drafter, launch=Launch(tp=8, engine_args=("--disable-cuda-graph",))).outcome == "works"


# ---- the command, as a user runs it ------------------------------------------------------------------


def test_preflight_command_takes_the_runner_from_the_environment(tmp_path: Path) -> None:
    """VLLM_USE_V2_MODEL_RUNNER picks the runner the server would run; --engine-option wins; exit
    0 only for works; `verify --preflight-only` gives the same outcome."""
    import json
    import os

    from tests.helpers import REPO, run_cli

    release_root("vllm==0.18.0")
    target, drafter = write_pair(tmp_path, "llama", {"eagle_config": {"use_aux_hidden_state": False}})
    base = ["--release", "vllm==0.18.0", "--model-path", str(target), "--draft-model-path", str(drafter), "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    v2 = run_cli("preflight", *base, env={**env, "VLLM_USE_V2_MODEL_RUNNER": "1"})
    report = json.loads(v2.stdout)
    assert (v2.returncode, report["outcome"], report["version"]) == (1, "silent", 2)
    assert report["launch"]["options"]["values"]["runner"] == "v2"
    assert any(i["check"] == "defect" and i["outcome"] == "silent" for i in report["items"])
    v1 = run_cli("preflight", *base, "--engine-option", "runner=v1", env={**env, "VLLM_USE_V2_MODEL_RUNNER": "1"})
    assert (v1.returncode, json.loads(v1.stdout)["outcome"]) == (0, "works")
    alias = run_cli("verify", "--preflight-only", *base, env={**env, "VLLM_USE_V2_MODEL_RUNNER": "1"})
    assert (alias.returncode, json.loads(alias.stdout)["outcome"]) == (1, "silent")


def test_keys_the_draft_class_reads_that_the_config_lacks(tmp_path: Path) -> None:
    """Read without a default by the release's draft class: the transformers config class decides."""
    result = preflight(tmp_path, "sglang==0.5.9", "llama", {**eagle_ids([1, 15, 28]), "rms_norm_eps": None}, launch=NO_GRAPHS)
    notes = [i for i in result.items if i.check == "draft-class-keys"]
    assert len(notes) == 1 and "`rms_norm_eps`" in notes[0].message and notes[0].outcome is None
    assert any(e["where"].endswith("llama.py") for e in notes[0].evidence)


def test_the_seeds_pair_works_on_0_5_23_and_explain_says_why(tmp_path: Path) -> None:
    """Kimi-K2.5 with a drafter naming [2, 30, 58] (the input-of-layer convention, by the list's
    shape): SGLang 0.5.23 reads the ids as written and captures what it was trained on."""
    drafter = kimi_drafter_config()
    drafter["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 30, 58]
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models", drafter=drafter)
    release_root("sglang==0.5.23")
    done = run_cli("preflight", "--release", "sglang==0.5.23", "--model-path", str(target_dir), "--draft-model-path", str(drafter_dir), "--explain")
    assert done.returncode == 0 and "Outcome: works" in done.stdout, done.stdout
    why = done.stdout.split("Why (per drafter input)", 1)[1]
    first = re.search(r"drafter id 2 → the engine captures layer 1's output \(([^)]*)\);", why)
    assert first is not None and "kimi_k25.py:" in first.group(1) and "deepseek_v2.py:" in first.group(1), why
    assert "the drafter was trained on layer 1's output (the list is the EAGLE reference code's default for a 61-layer target" in why


def test_a_forward_that_only_calls_its_bases_runs_the_bases_loop(tmp_path: Path) -> None:
    """vLLM 0.33.0's MistralModel.forward only returns super().forward(...): LlamaModel's loop
    decides what it captures (no longer unknown); 0.18.0's allow-list refuses the type outright."""
    mistral = {"target_keys": {"architectures": ["MistralForCausalLM"], "model_type": "mistral"}}
    new = preflight(tmp_path / "new", "vllm==0.33.0", "llama", None, **mistral)
    assert new.outcome == "works" and item(new, "layer-ids").status == "ok", new.outcome_reason
    old = preflight(tmp_path / "old", "vllm==0.18.0", "llama", None, **mistral)
    assert old.outcome == "refused" and "model types containing" in old.outcome_reason
