"""Pre-flight on real config.json and safetensors files the tests write (the issue's Kimi-K2.5 facts)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.engines import knowledge_for as load_knowledge
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run.preflight import ACCEPTANCE, CRASH, PreflightResult, run_preflight
from eagle3lint.verify.configs import REFUSED
from eagle3lint.verify.safetensors_header import HeaderError, read_checkpoint, read_header
from tests.fakes.model_folders import (
    KIMI_AUX_IDS,
    KIMI_HIDDEN,
    kimi_drafter_config,
    kimi_drafter_tensors,
    kimi_target_config,
    write_config,
    write_kimi_pair,
    write_safetensors,
)
from tests.fakes.sglang_tree import write_sglang_tree
from tests.helpers import run_json


def preflight(tmp_path: Path, engine: str = "sglang", target: dict[str, Any] | None = None,
              drafter: dict[str, Any] | None = None, tensors: dict[str, Any] | None = None) -> PreflightResult:
    target_dir, drafter_dir = write_kimi_pair(tmp_path, target, drafter, tensors)
    return run_preflight(str(target_dir), str(drafter_dir), load_knowledge(engine), engine=None)


def item(result: PreflightResult, check: str) -> Any:
    found = [i for i in result.items if i.check == check]
    assert len(found) == 1, [i.to_json() for i in result.items]
    return found[0]


# ---- safetensors headers -----------------------------------------------------------------------


def test_header_reader_reads_names_dtypes_and_shapes(tmp_path: Path) -> None:
    path = write_safetensors(tmp_path / "m.safetensors", {"d2t": ("I64", [32000]), "fc.weight": ("BF16", [8, 24])})
    tensors = read_header(path)
    assert {n: (t.dtype, t.shape) for n, t in tensors.items()} == {"d2t": ("I64", (32000,)), "fc.weight": ("BF16", (8, 24))}


def test_header_reader_detects_a_truncated_download(tmp_path: Path) -> None:
    path = write_safetensors(tmp_path / "m.safetensors", {"d2t": ("I64", [32000])}, truncate_by=100)
    with pytest.raises(HeaderError, match="truncated"):
        read_header(path)


def test_header_reader_rejects_a_file_that_is_not_safetensors(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    with pytest.raises(HeaderError, match="not plausible"):
        read_header(path)
    path.write_bytes(struct.pack("<Q", 5) + b"nope!")
    with pytest.raises(HeaderError, match="not valid JSON"):
        read_header(path)


def test_sharded_checkpoint_index_must_name_existing_shards(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"fc.weight": ("BF16", [4, 12])})
    index = {"weight_map": {"fc.weight": "model-00001-of-00002.safetensors", "d2t": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(HeaderError, match=r"model-00002-of-00002\.safetensors"):
        read_checkpoint(tmp_path)
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"d2t": ("I64", [10])})
    checkpoint = read_checkpoint(tmp_path)
    assert checkpoint is not None and set(checkpoint.tensors) == {"fc.weight", "d2t"}


# ---- the Kimi-K2.5 sample and its variants -------------------------------------------------------


def test_kimi_sample_passes_every_config_and_weight_check(tmp_path: Path) -> None:
    result = preflight(tmp_path, tensors=kimi_drafter_tensors(projections=True))
    assert result.problems == []
    assert result.aux_layer_ids == KIMI_AUX_IDS
    assert result.target is not None and (result.target.hidden_size, result.target.num_hidden_layers) == (7168, 61)
    assert result.target.sizes_from == "text_config"
    for check in ("drafter-architecture", "hidden-size", "vocab-size", "aux-layer-ids", "d2t-mapping", "fc-shape", "lm-head-shape"):
        assert item(result, check).status == "ok"
    assert "adds 1" in item(result, "aux-layer-ids").message  # SGLang's offset convention is explained


def test_hidden_size_mismatch_will_crash(tmp_path: Path) -> None:
    drafter = kimi_drafter_config() | {"hidden_size": 4096}
    result = preflight(tmp_path, drafter=drafter, tensors=kimi_drafter_tensors(hidden=4096))
    hidden = item(result, "hidden-size")
    assert (hidden.status, hidden.impact) == ("problem", CRASH)
    assert "4096" in hidden.message and "7168" in hidden.message
    assert result.predicts_crash


def test_target_hidden_size_declared_by_the_drafter_is_what_counts(tmp_path: Path) -> None:
    drafter = kimi_drafter_config() | {"hidden_size": 4096, "target_hidden_size": KIMI_HIDDEN}
    tensors = kimi_drafter_tensors() | {"fc.weight": ("BF16", [4096, KIMI_HIDDEN * 3]), "lm_head.weight": ("BF16", [32000, 4096])}
    result = preflight(tmp_path, drafter=drafter, tensors=tensors)
    assert item(result, "hidden-size").status == "ok"
    assert item(result, "fc-shape").status == "ok"


def test_missing_d2t_silently_lowers_acceptance(tmp_path: Path) -> None:
    tensors = kimi_drafter_tensors()
    del tensors["d2t"]
    result = preflight(tmp_path, tensors=tensors)
    d2t = item(result, "d2t-mapping")
    assert (d2t.status, d2t.impact) == ("problem", ACCEPTANCE)
    assert "32000" in d2t.message and "163840" in d2t.message
    assert not result.predicts_crash


def test_d2t_with_the_wrong_length_will_crash(tmp_path: Path) -> None:
    tensors = kimi_drafter_tensors() | {"d2t": ("I64", [16000])}
    d2t = item(preflight(tmp_path, tensors=tensors), "d2t-mapping")
    assert (d2t.status, d2t.impact) == ("problem", CRASH)


def test_full_vocabulary_drafter_needs_no_d2t(tmp_path: Path) -> None:
    drafter = kimi_drafter_config()
    del drafter["draft_vocab_size"]
    tensors = kimi_drafter_tensors(draft_vocab=163840)
    del tensors["d2t"]
    assert item(preflight(tmp_path, drafter=drafter, tensors=tensors), "d2t-mapping").status == "ok"


def test_drafter_with_a_smaller_vocabulary_than_the_target_will_crash(tmp_path: Path) -> None:
    drafter = kimi_drafter_config() | {"vocab_size": 128256}
    vocab = item(preflight(tmp_path, drafter=drafter), "vocab-size")
    assert (vocab.status, vocab.impact) == ("problem", CRASH)


def test_aux_layer_beyond_the_target_depth_will_crash_on_sglang_but_not_vllm(tmp_path: Path) -> None:
    drafter = kimi_drafter_config()
    drafter["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 30, 60]
    sglang = item(preflight(tmp_path / "s", drafter=drafter), "aux-layer-ids")
    assert (sglang.status, sglang.impact) == ("problem", CRASH)
    assert "[60]" in sglang.message and "0..59" in sglang.message
    # vLLM's id k is the state after k layers: 60 (and 61) exist in a 61-layer model.
    assert item(preflight(tmp_path / "v", "vllm", drafter=drafter), "aux-layer-ids").status == "ok"
    drafter["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 30, 62]
    vllm = item(preflight(tmp_path / "v2", "vllm", drafter=drafter), "aux-layer-ids")
    assert (vllm.status, vllm.impact) == ("problem", CRASH)
    assert "one layer earlier than in SGLang" in vllm.message


def test_sglang_drafter_takes_exactly_three_aux_layers(tmp_path: Path) -> None:
    drafter = kimi_drafter_config()
    drafter["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 20, 40, 58]
    tensors = kimi_drafter_tensors(aux_count=4, projections=True)
    sglang = item(preflight(tmp_path / "s", drafter=drafter, tensors=tensors), "aux-layer-ids")
    assert (sglang.status, sglang.impact) == ("problem", CRASH)
    vllm = preflight(tmp_path / "v", "vllm", drafter=drafter, tensors=tensors)
    assert item(vllm, "aux-layer-ids").status == "ok"
    assert item(vllm, "fc-shape").status == "ok"  # vLLM sizes fc by the number of ids


def test_top_level_aux_ids_are_ignored_by_sglang_and_read_by_vllm(tmp_path: Path) -> None:
    drafter = kimi_drafter_config()
    del drafter["eagle_config"]
    drafter["eagle_aux_hidden_state_layer_ids"] = [1, 29, 57]
    sglang = preflight(tmp_path / "s", drafter=drafter)
    aux = item(sglang, "aux-layer-ids")
    assert (aux.status, aux.impact) == ("problem", ACCEPTANCE)
    assert sglang.aux_layer_ids == [2, 30, 58]  # the default it captures instead
    vllm = preflight(tmp_path / "v", "vllm", drafter=drafter)
    assert item(vllm, "aux-layer-ids").status == "ok"
    assert vllm.aux_layer_ids == [1, 29, 57]


def test_no_aux_ids_means_the_engine_default_for_the_target_depth(tmp_path: Path) -> None:
    drafter = kimi_drafter_config()
    del drafter["eagle_config"]
    result = preflight(tmp_path, drafter=drafter)
    aux = item(result, "aux-layer-ids")
    assert aux.status == "note"
    assert result.aux_layer_ids == [2, 30, 58]  # [2, 61 // 2, 61 - 3]


def test_fc_and_lm_head_shapes_are_checked_against_the_configs(tmp_path: Path) -> None:
    tensors = kimi_drafter_tensors() | {"fc.weight": ("BF16", [KIMI_HIDDEN, KIMI_HIDDEN * 2]), "lm_head.weight": ("BF16", [1000, KIMI_HIDDEN])}
    result = preflight(tmp_path, tensors=tensors)
    assert (item(result, "fc-shape").status, item(result, "fc-shape").impact) == ("problem", CRASH)
    assert (item(result, "lm-head-shape").status, item(result, "lm-head-shape").impact) == ("problem", CRASH)


def test_a_truncated_drafter_checkpoint_will_crash(tmp_path: Path) -> None:
    target_dir, drafter_dir = write_kimi_pair(tmp_path)
    write_safetensors(drafter_dir / "model.safetensors", kimi_drafter_tensors(), truncate_by=4096)
    result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("sglang"), engine=None)
    weights = item(result, "drafter-weights")
    assert (weights.status, weights.impact) == ("problem", CRASH)
    assert "truncated" in weights.message


def test_a_non_eagle3_drafter_architecture(tmp_path: Path) -> None:
    drafter = kimi_drafter_config() | {"architectures": ["LlamaForCausalLM"]}
    sglang = item(preflight(tmp_path / "s", drafter=drafter), "drafter-architecture")
    assert (sglang.status, sglang.impact) == ("problem", CRASH)
    # vLLM renames LlamaForCausalLM to Eagle3LlamaForCausalLM for method eagle3.
    vllm = item(preflight(tmp_path / "v", "vllm", drafter=drafter), "drafter-architecture")
    assert vllm.status == "ok" and "Eagle3LlamaForCausalLM" in vllm.message


def test_unreadable_or_missing_configs_are_problems_not_tracebacks(tmp_path: Path) -> None:
    target_dir = tmp_path / "t"
    target_dir.mkdir()
    (target_dir / "config.json").write_text("{not json")
    drafter_dir = tmp_path / "d"
    drafter_dir.mkdir()
    result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("sglang"), engine=None)
    assert item(result, "target-config").status == "problem" and "not valid JSON" in item(result, "target-config").message
    assert item(result, "drafter-config").status == "problem" and "no such file" in item(result, "drafter-config").message


def test_hub_ids_are_skipped_not_failed(tmp_path: Path) -> None:
    result = run_preflight("moonshotai/Kimi-K2.5", "AQ-MedAI/Kimi-K25-eagle3", load_knowledge("sglang"), engine=None)
    assert {i.status for i in result.items} == {"skipped"}
    assert not result.problems


# ---- the static check of the target class ---------------------------------------------------------


def test_static_check_reports_the_kimi_wrapper_gap_for_the_target_class_only(tmp_path: Path) -> None:
    root = write_sglang_tree(tmp_path / "tree")
    engine = discover_engine([], engine_root=root)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("sglang"), engine)
    static = [i for i in result.items if i.check == "target-class"]
    assert {(i.rule, i.impact) for i in static} == {("E3L004", CRASH)}
    # One finding for the cause, naming both members the wrapper does not delegate.
    (finding,) = result.target_findings
    assert finding.data["members"] == ["set_eagle3_layers_to_capture", "get_embed_and_head"]
    assert result.target_class_path is not None and result.target_class_path.endswith("kimi_k25.py")
    # The drafter architecture is judged from the tree's EntryClass lists, not the built-in list.
    assert "sglang 0.5.9 can load" in item(result, "drafter-architecture").message


def test_static_check_passes_once_the_wrapper_delegates(tmp_path: Path) -> None:
    root = write_sglang_tree(tmp_path / "tree", fixed=True)
    engine = discover_engine([], engine_root=root)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("sglang"), engine)
    assert item(result, "target-class").status == "ok"
    assert result.problems == []


def test_static_check_reports_an_architecture_the_tree_lacks(tmp_path: Path) -> None:
    root = write_sglang_tree(tmp_path / "tree")
    engine = discover_engine([], engine_root=root)
    target = kimi_target_config() | {"architectures": ["GlmMoeDsaForCausalLM"]}
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models", target=target)
    result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("sglang"), engine)
    static = item(result, "target-class")
    assert (static.status, static.impact) == ("problem", CRASH)
    assert "GlmMoeDsaForCausalLM" in static.message


def test_preflight_only_cli_json(tmp_path: Path) -> None:
    root = write_sglang_tree(tmp_path / "tree")
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    code, report = run_json("verify", "--preflight-only", "--engine-root", root, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert code == 1
    assert report["verdict"]["status"] == "preflight-failed"
    assert report["engine"]["name"] == "sglang"
    assert report["launches"] == []
    assert {i["rule"] for i in report["preflight"] if i["status"] == "problem"} == {"E3L004"}
    assert report["aux_layer_ids"] == KIMI_AUX_IDS

    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    code, report = run_json("verify", "--preflight-only", "--engine-root", fixed, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert (code, report["verdict"]["status"]) == (0, "preflight-ok")


@pytest.mark.release
def test_real_sglang_0_5_9_kimi_k25_target_class() -> None:
    from tests.helpers import release_root

    engine = discover_engine([], engine_root=release_root("sglang==0.5.9"))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        target_dir = write_config(Path(tmp) / "t", kimi_target_config())
        drafter_dir = write_config(Path(tmp) / "d", kimi_drafter_config())
        write_safetensors(drafter_dir / "model.safetensors", kimi_drafter_tensors(projections=True))
        result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("sglang"), engine)
    methods = {f.method for f in result.target_findings}
    assert "set_eagle3_layers_to_capture" in methods
    assert {f.class_name for f in result.target_findings} == {"KimiK25ForConditionalGeneration"}
    assert item(result, "drafter-architecture").status == "ok"


def test_model_type_outside_an_old_vllm_allow_list_is_refused(tmp_path: Path) -> None:
    """The speculative config's own ValueError naming the list: a clear refusal, not a crash."""
    from tests.helpers import FIXTURES

    legacy = discover_engine([FIXTURES / "vllm_legacy"])  # refuses EAGLE-3 unless "llama" is in the model_type
    kimi = kimi_target_config()
    kimi["text_config"]["model_type"] = "kimi_k2"
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "kimi", target=kimi)
    refused = item(run_preflight(str(target_dir), str(drafter_dir), load_knowledge("vllm"), legacy), "model-type")
    assert (refused.status, refused.impact) == ("problem", REFUSED)
    assert "only for model types containing llama" in refused.message and "'kimi_k2'" in refused.message
    assert refused.path is not None and refused.path.endswith("config.py") and refused.line == 3

    nested = kimi_target_config()
    nested["text_config"]["model_type"] = "llama"  # what vLLM reads: the text config's type
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "nested", target=nested)
    allowed = item(run_preflight(str(target_dir), str(drafter_dir), load_knowledge("vllm"), legacy), "model-type")
    assert allowed.status == "ok" and "text_config.model_type 'llama'" in allowed.message

    # A diff-only multimodal config: the text config names its type but none of its sizes.
    llava = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": {"model_type": "llama"}}
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "llava", target=llava)
    judged = item(run_preflight(str(target_dir), str(drafter_dir), load_knowledge("vllm"), legacy), "model-type")
    assert judged.status == "ok" and "text_config.model_type 'llama'" in judged.message
    # A text config without a type: its class's default decides, which config.json does not say.
    unnamed = llava | {"text_config": {"vocab_size": 32064}}
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "unnamed", target=unnamed)
    unknown = item(run_preflight(str(target_dir), str(drafter_dir), load_knowledge("vllm"), legacy), "model-type")
    assert (unknown.status, unknown.impact) == ("note", None)

    modern = discover_engine([FIXTURES / "vllm_modern"])  # no allow-list: nothing to say
    result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("vllm"), modern)
    assert not [i for i in result.items if i.check == "model-type"]


@pytest.mark.release
def test_real_vllm_allow_lists_judge_the_kimi_target() -> None:
    """vLLM 0.11.0 allows llama, qwen, minicpm, gpt_oss; 0.18.0 adds kimi_k25; 0.33.0 has no list."""
    import tempfile

    from tests.helpers import release_root

    kimi = kimi_target_config()
    kimi["text_config"]["model_type"] = "kimi_k2"  # what vLLM's hf_text_config reports
    with tempfile.TemporaryDirectory() as tmp:
        target_dir, drafter_dir = write_kimi_pair(Path(tmp), target=kimi)
        statuses = {}
        for spec in ("vllm==0.11.0", "vllm==0.18.0", "vllm==0.33.0"):
            engine = discover_engine([], engine_root=release_root(spec))
            result = run_preflight(str(target_dir), str(drafter_dir), load_knowledge("vllm"), engine)
            statuses[spec] = [(i.status, i.impact) for i in result.items if i.check == "model-type"]
    assert statuses == {"vllm==0.11.0": [("problem", REFUSED)], "vllm==0.18.0": [("ok", None)], "vllm==0.33.0": []}
