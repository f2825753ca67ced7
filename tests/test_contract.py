"""Contract extraction: roles, guards, arities and branches read from engine call sites."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.model.contract import contract_needles, extract_contract
from eagle3lint.model.contract_types import ContractSite
from tests.helpers import FIXTURES, SGLANG_SKELETON, make_tree, run_cli, run_json

GUARDS = '''
class Runner:
    def unguarded(self):
        self.model.set_eagle3_layers_to_capture([1, 2])

    def error_guard(self, model):
        if not hasattr(model, "set_eagle3_layers_to_capture"):
            raise ValueError("model lacks the EAGLE-3 interface")
        model.set_eagle3_layers_to_capture(None)

    def fallback_if(self, target_model):
        if hasattr(target_model, "get_embed_and_head"):
            return target_model.get_embed_and_head()
        return None

    def fallback_getattr(self, model):
        return getattr(model, "capture_aux_hidden_states", False)

    def try_reraise(self, target_model):
        try:
            return target_model.get_embed_and_head()
        except AttributeError:
            raise RuntimeError("target must implement get_embed_and_head")

    def try_swallow(self):
        try:
            self.draft_runner.model.set_embed(None)
        except AttributeError:
            pass

    def and_chain(self):
        return hasattr(self.draft_runner.model, "load_lm_head_from_target") and self.draft_runner.model.load_lm_head_from_target

    def branches(self, algo):
        if algo.is_eagle3():
            self.draft_runner.model.set_embed(None)
        else:
            self.draft_runner.model.set_embed_and_head(None, None)

    def not_a_model(self):
        self.worker.set_eagle3_layers_to_capture()
        self.model_runner.get_embed_and_head()

    def unknown_member(self, model):
        model.set_eagle3_mystery_layers([1])
'''


def _sites(tmp_path: Path) -> list[ContractSite]:
    make_tree(tmp_path, {**SGLANG_SKELETON, "sglang/srt/runner.py": GUARDS})
    engine = discover_engine([tmp_path / "sglang"])
    contract = extract_contract(engine)
    return [s for m in contract.members.values() for s in m.sites]


def _site(sites: list[ContractSite], function: str, access: str = "call") -> ContractSite:
    (site,) = [s for s in sites if s.function == f"Runner.{function}" and s.access == access]
    return site


def test_guard_kinds(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    assert _site(sites, "unguarded").guard == "none"
    assert _site(sites, "error_guard").guard == "error"
    assert _site(sites, "error_guard", "probe").access == "probe"
    assert _site(sites, "fallback_if").guard == "fallback"
    assert _site(sites, "fallback_getattr", "load").guard == "fallback"
    assert _site(sites, "try_reraise").guard == "error"
    assert _site(sites, "try_swallow").guard == "fallback"
    assert _site(sites, "and_chain", "load").guard == "fallback"


def test_roles_arity_and_branches(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    unguarded = _site(sites, "unguarded")
    assert (unguarded.role, unguarded.positional_args, unguarded.receiver) == ("target", 1, "self.model")
    assert _site(sites, "fallback_if").role == "target"
    by_member = {s.member: s for s in sites if s.function == "Runner.branches"}
    assert by_member["set_embed"].role == "draft"
    assert by_member["set_embed"].branch == "eagle3"
    assert by_member["set_embed_and_head"].branch == "not-eagle3"
    assert by_member["set_embed_and_head"].positional_args == 2


def test_receivers_that_are_not_models_are_ignored(tmp_path: Path) -> None:
    sites = _sites(tmp_path)
    assert not [s for s in sites if s.function == "Runner.not_a_model"]


def test_unknown_members_are_listed(tmp_path: Path) -> None:
    make_tree(tmp_path, {**SGLANG_SKELETON, "sglang/srt/runner.py": GUARDS})
    contract = extract_contract(discover_engine([tmp_path / "sglang"]))
    unknown = {m.name for m in contract.unknown_members()}
    assert unknown == {"set_eagle3_mystery_layers"}
    done = run_cli("contract", tmp_path / "sglang")
    assert "unknown members" in done.stdout and "set_eagle3_mystery_layers" in done.stdout


def test_subtrees_the_pack_skips_are_not_scanned(tmp_path: Path) -> None:
    """The engine's tests, kernels and diffusion runtime call no target model: their call sites
    are not the contract (and skipping them halves the scan)."""
    make_tree(
        tmp_path,
        {
            **SGLANG_SKELETON,
            "sglang/srt/runner.py": GUARDS,
            "sglang/test/test_runner.py": GUARDS,
            "sglang/multimodal_gen/runtime/worker.py": GUARDS,
            "sglang/kernels/op.py": GUARDS,
        },
    )
    contract = extract_contract(discover_engine([tmp_path / "sglang"]))
    paths = {s.path for m in contract.members.values() for s in m.sites}
    assert paths == {"sglang/srt/runner.py"}
    assert contract.scanned_files == 1


def test_needles_are_the_fewest_that_say_as_much(tmp_path: Path) -> None:
    make_tree(tmp_path, SGLANG_SKELETON)
    engine = discover_engine([tmp_path / "sglang"])
    needles = contract_needles(engine)
    every = {n.encode() for n in (*engine.pack.members, *engine.pack.scan_needles)}
    # Each member or configured needle still contains one of the needles kept...
    assert all(any(kept in n for kept in needles) for n in every)
    # ...and none kept contains another.
    assert not any(a != b and b in a for a in needles for b in needles)
    assert b"eagle3_" in needles and b"set_eagle3_layers_to_capture" not in needles


def test_members_the_engine_never_touches_are_not_required() -> None:
    contract = extract_contract(discover_engine([FIXTURES / "sglang_basic"]))
    assert contract.members["get_hot_token_id"].sites == []
    assert {m.name for m in contract.required("target")} == {"set_eagle3_layers_to_capture", "get_embed_and_head"}
    assert {m.name for m in contract.required("draft")} == {"set_embed", "set_embed_and_head", "hot_token_id"}


def test_contract_command_text_and_json() -> None:
    done = run_cli("contract", FIXTURES / "sglang_basic")
    assert done.returncode == 0
    assert "set_eagle3_layers_to_capture (method): target: unguarded (required)" in done.stdout
    assert "sglang/srt/model_executor/model_runner.py:9" in done.stdout
    _code, data = run_json("contract", FIXTURES / "sglang_basic")
    members = {m["name"]: m for m in data["members"]}
    assert members["set_eagle3_layers_to_capture"]["required_for"] == ["target"]
    assert members["get_embed_and_head_for_draft"]["guard"] == {"target": "fallback"}
    site = members["get_embed_and_head"]["sites"][0]
    assert {"path", "line", "function", "receiver", "role", "guard", "positional_args"} <= set(site)


CHUNKED_RUNNER = """\
from sglang.srt.models.interfaces import (
    Base,
    set_eagle3_layers_to_capture as _unused,  # eagle3lint: imported, never called here
)


class Runner:
    @property
    def ready(self):
        return True

    @staticmethod
    def get_embed_and_head_of(model):
        return model.get_embed_and_head()

    def load(self):
        if self.is_eagle3():
            self.model.set_eagle3_layers_to_capture([1, 2])
"""


def test_function_chunks_cover_imports_def_lines_and_decorated_methods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member named in a top-level import, in a def line or in a decorated method still lets
    the scan parse only the functions involved, and it finds what a whole-file parse finds."""
    import eagle3lint.model.contract as contract_module

    make_tree(tmp_path, {**SGLANG_SKELETON, "sglang/srt/runner.py": CHUNKED_RUNNER})
    engine = discover_engine([tmp_path / "sglang"])
    lines = CHUNKED_RUNNER.splitlines(keepends=True)
    chunks = contract_module._function_chunks(lines, contract_module._hit_lines(CHUNKED_RUNNER, contract_needles(engine)))
    assert chunks is not None
    assert [name for _, _, _, name in chunks] == ["Runner.get_embed_and_head_of", "Runner.load"]
    chunked = {(s.member, s.line, s.function) for m in extract_contract(engine).members.values() for s in m.sites}
    monkeypatch.setattr(contract_module, "_function_chunks", lambda lines, hits: None)
    whole = {(s.member, s.line, s.function) for m in extract_contract(engine).members.values() for s in m.sites}
    assert chunked == whole
    assert ("set_eagle3_layers_to_capture", 18, "Runner.load") in whole


@pytest.mark.release
@pytest.mark.parametrize("spec", ["sglang==0.5.23", "vllm==0.33.0"])
def test_function_chunks_find_the_same_sites_as_whole_file_parses(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The contract scan parses only the functions that mention a member; on a real release it
    must find exactly what parsing every file whole finds."""
    import eagle3lint.model.contract as contract_module
    from tests.helpers import release_root

    engine = discover_engine([release_root(spec)])
    chunked = extract_contract(engine)
    monkeypatch.setattr(contract_module, "_function_chunks", lambda lines, hits: None)
    whole = extract_contract(engine)
    sites = lambda c: {s for m in c.members.values() for s in m.sites}  # noqa: E731
    assert sites(chunked) == sites(whole)
    assert chunked.to_json() == whole.to_json()  # check-function calls and the rest included
    assert len(sites(whole)) >= (20 if engine.name == "sglang" else 4)
    # Nor do the subtrees the pack skips hold a call site on this release.
    everything = dataclasses.replace(engine, pack=dataclasses.replace(engine.pack, scan_skip=()))
    monkeypatch.undo()
    assert sites(extract_contract(everything)) == sites(chunked)


def test_contract_text_of_engine_facts_is_on_real_lines_with_analysed_text_escaped(tmp_path: Path) -> None:
    """vLLM's protocol block is the tool's text of several lines: real newlines, never a literal
    ``\\n``; a model type read from the tree holding a line break stays escaped on its line."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "vllm_modern", root)
    shutil.copytree(FIXTURES / "vllm_allow_list" / "vllm", root / "vllm", dirs_exist_ok=True)
    spec = root / "vllm" / "config" / "speculative.py"
    spec.write_text(spec.read_text().replace('["llama", "helper"]', '["llama", "evil\\nFORGED line"]'))
    done = run_cli("contract", root / "vllm")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not any("\\n" in line and "evil" not in line for line in lines)
    assert any(line.startswith("vllm: protocol SupportsEagle3") for line in lines)
    assert any(line.startswith("  check: supports_eagle3(model)") for line in lines)
    (allow,) = [line for line in lines if line.startswith("EAGLE-3 only for HF model_types")]
    assert "llama, evil\\nFORGED line (" in allow
    assert not any(line.startswith("FORGED") for line in lines)
