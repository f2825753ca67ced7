"""A tiny synthetic SGLang-shaped tree (written by us) for the pre-flight's static check.

It has the seed's bug: KimiK25ForConditionalGeneration wraps a DeepseekV3ForCausalLM in
``self.language_model`` but does not delegate the EAGLE-3 methods to it.
"""

from __future__ import annotations

from pathlib import Path

FILES = {
    "sglang/__init__.py": "",
    "sglang/version.py": '__version__ = "0.5.9"\n',
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/deepseek_v2.py": '''
from torch import nn


class DeepseekV2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers_to_capture = []
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList()

    def forward(self, input_ids, positions, forward_batch):
        hidden_states, residual = self.embed_tokens(input_ids), None
        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            layer = self.layers[i]
            hidden_states, residual = layer(positions, hidden_states, forward_batch, residual)
        return hidden_states, aux_hidden_states


class DeepseekV2ForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = DeepseekV2Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
        self.capture_aux_hidden_states = False

    def get_embed_and_head(self):
        return self.model.embed_tokens.weight, self.lm_head.weight

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            n = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, n // 2, n - 3]
        else:
            self.model.layers_to_capture = [i + 1 for i in layer_ids]


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    pass


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM]
''',
    "sglang/srt/models/kimi_k25.py": '''
from torch import nn

from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM


class KimiK25ForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = DeepseekV3ForCausalLM(config.text_config)
%(kimi_methods)s

EntryClass = [KimiK25ForConditionalGeneration]
''',
    "sglang/srt/models/llama_eagle3.py": '''
from torch import nn


class LlamaForCausalLMEagle3(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.lm_head = nn.Linear(config.hidden_size, config.draft_vocab_size)
        self.hot_token_id = None

    def set_embed_and_head(self, embed, head):
        self.embed = embed

    def get_hot_token_id(self):
        return self.hot_token_id


EntryClass = [LlamaForCausalLMEagle3]
''',
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/model_runner.py": '''
class ModelRunner:
    def read_draft_config(self, draft_model_config):
        eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None)
        self.eagle_aux_hidden_state_layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]

    def initialize(self):
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)
''',
    "sglang/srt/model_executor/cuda_graph_runner.py": '''
class CudaGraphRunner:
    def __init__(self, model_runner):
        self.model_runner = model_runner
        if model_runner.eagle_use_aux_hidden_state:
            model_runner.model.set_eagle3_layers_to_capture(model_runner.eagle_aux_hidden_state_layer_ids)
''',
    "sglang/srt/server_args.py": '''
class ServerArgs:
    def _handle_speculative_decoding(self):
        if self.speculative_algorithm in ("EAGLE", "EAGLE3"):
            if self.speculative_num_steps is None:
                assert self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None
            elif self.speculative_eagle_topk > 1 and self.page_size > 1:
                raise ValueError("speculative_eagle_topk > 1 with page_size > 1 is not supported")
''',
    "sglang/srt/speculative/__init__.py": "",
    "sglang/srt/speculative/eagle_worker.py": '''
class EAGLEWorker:
    def __init__(self):
        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
        self.draft_model_runner.model.set_embed_and_head(embed, head)
''',
}

DELEGATING_METHODS = '''
    def get_embed_and_head(self):
        return self.language_model.get_embed_and_head()

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.language_model.set_eagle3_layers_to_capture(layer_ids)
'''


def write_sglang_tree(base: Path, fixed: bool = False) -> Path:
    """The tree under ``base``; returns the package folder (``base/sglang``)."""
    for rel, text in FILES.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if "%(kimi_methods)s" in text:
            text = text % {"kimi_methods": DELEGATING_METHODS if fixed else ""}
        path.write_text(text.lstrip("\n"), encoding="utf-8")
    return base / "sglang"
