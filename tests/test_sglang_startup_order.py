"""The order an SGLang release reaches the target's members at start-up, read from its scheduler
(eagle3lint/engines/sglang/startup.py), on small trees shaped like 0.5.9's and 0.5.23's."""

from __future__ import annotations

import textwrap
from pathlib import Path

from eagle3lint.engines.sglang.startup import reach_steps, start_up_order
from eagle3lint.model.contract_types import ContractSite

PACK = ["set_eagle3_layers_to_capture", "get_embed_and_head", "set_embed_and_head", "get_embed_and_head_for_draft"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "sglang" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "sglang"


def _site(member: str, path: str, function: str) -> ContractSite:
    return ContractSite(member, f"sglang/{path}", 1, 1, function, "model", "call", "target", "none")


SCHEDULER = """
    class Scheduler:
        def init_tp_model_worker(self):
            from sglang.srt.managers.tp_worker import TpModelWorker
            self.tp_worker = TpModelWorker()

        def maybe_init_draft_worker(self):
            # Launch a draft worker
            DraftWorkerClass = self.spec_algorithm.create_worker(self.server_args)
            self.draft_worker = DraftWorkerClass(target_worker=self.tp_worker)

        def init_all_attention_backends(self):
            self.tp_worker.init_attention_backends()

        def init_model_worker(self):
            self.init_tp_model_worker()
            self.maybe_init_draft_worker()
            self.init_memory_pools()
            self.init_all_attention_backends()
    """
COMMON = {
    "srt/managers/scheduler.py": SCHEDULER,
    "srt/managers/tp_worker.py": """
        class TpModelWorker:
            def __init__(self):
                self.model_runner = ModelRunner()

            def init_attention_backends(self):
                self.model_runner.init_attention_backends()
        """,
    "srt/speculative/spec_info.py": """
        class SpeculativeAlgorithm:
            def create_worker(self, server_args):
                from sglang.srt.speculative.eagle_worker import EAGLEWorker
                return EAGLEWorker
        """,
}


def test_0_5_9_shape_keeps_the_pack_order(tmp_path: Path) -> None:
    """The runner asks the target to capture while it initialises (the target worker, first); the
    draft worker's constructor calls the getter."""
    root = _write(tmp_path, {
        **COMMON,
        "srt/model_executor/model_runner.py": """
            class ModelRunner:
                def __init__(self):
                    self.initialize()

                def initialize(self):
                    self.model.set_eagle3_layers_to_capture([1])

                def init_attention_backends(self):
                    pass
            """,
        "srt/speculative/eagle_worker.py": """
            class EAGLEWorker:
                def __init__(self, target_worker):
                    embed, head = self.target_worker.model_runner.model.get_embed_and_head()
            """,
    })
    sites = {
        "set_eagle3_layers_to_capture": [_site("set_eagle3_layers_to_capture", "srt/model_executor/model_runner.py", "ModelRunner.initialize")],
        "get_embed_and_head": [_site("get_embed_and_head", "srt/speculative/eagle_worker.py", "EAGLEWorker.__init__")],
    }
    assert reach_steps(root, sites) == {"set_eagle3_layers_to_capture": 0, "get_embed_and_head": 1}
    assert start_up_order(PACK, root, sites) == PACK


def test_0_5_23_shape_puts_the_getter_first(tmp_path: Path) -> None:
    """The draft worker (the getter) is built before the attention backends (the setter's check)."""
    root = _write(tmp_path, {
        **COMMON,
        "srt/model_executor/model_runner.py": """
            from sglang.srt.model_executor.model_runner_components.attention_backend_setup import configure_aux_hidden_state_capture

            class ModelRunner:
                def __init__(self):
                    self.initialize()

                def initialize(self):
                    self.load_model()

                def init_attention_backends(self):
                    configure_aux_hidden_state_capture(model=self.model)
            """,
        "srt/model_executor/model_runner_components/attention_backend_setup.py": """
            def configure_aux_hidden_state_capture(*, model):
                if not hasattr(model, "set_eagle3_layers_to_capture"):
                    raise ValueError("does not implement set_eagle3_layers_to_capture")
                model.set_eagle3_layers_to_capture([1])
            """,
        "srt/speculative/eagle_worker.py": """
            from sglang.srt.speculative.pp_draft_embedding import resolve_target_embed_and_head

            class EAGLEWorker:
                def __init__(self, target_worker):
                    self.init_lm_head()

                def init_lm_head(self):
                    embed, head = resolve_target_embed_and_head(self.target_worker.model_runner.model)
            """,
        "srt/speculative/pp_draft_embedding.py": """
            def resolve_target_embed_and_head(target_model):
                return target_model.get_embed_and_head()
            """,
    })
    sites = {
        "set_eagle3_layers_to_capture": [
            _site("set_eagle3_layers_to_capture", "srt/model_executor/model_runner_components/attention_backend_setup.py", "configure_aux_hidden_state_capture"),
        ],
        "get_embed_and_head": [_site("get_embed_and_head", "srt/speculative/pp_draft_embedding.py", "resolve_target_embed_and_head")],
    }
    assert reach_steps(root, sites) == {"set_eagle3_layers_to_capture": 3, "get_embed_and_head": 1}
    assert start_up_order(PACK, root, sites) == ["get_embed_and_head", "set_eagle3_layers_to_capture", *PACK[2:]]


def test_a_tree_without_the_scheduler_keeps_the_pack_order(tmp_path: Path) -> None:
    root = _write(tmp_path, {"srt/speculative/eagle_worker.py": "class EAGLEWorker:\n    pass\n"})
    sites = {"get_embed_and_head": [_site("get_embed_and_head", "srt/speculative/eagle_worker.py", "EAGLEWorker.__init__")]}
    assert reach_steps(root, sites) == {}
    assert start_up_order(PACK, root, sites) == PACK
