"""The vLLM CPU engine probe: run inside the *engine's* interpreter, one launch per process.

    ENGINE_PYTHON cpu_probe.py SPEC.json

SPEC names the architecture (or a model folder), the mode (``base``: the target alone; ``eagle``:
with a one-layer EAGLE-3 drafter) and where to write the record. The probe builds a shrunken config
from the architecture's own config class (transformers' or vLLM's), launches ``vllm.LLM`` offline
with dummy weights, and records what the runner asked of the target (the aux layer ids), what the
target's forward returned (how many auxiliary states, their widths) and which decoder layer's
residual stream each state equals (hooks on the decoder layers and their norms). On failure: the
exception, its innermost frames and the phase it happened in.

This file is never imported by eagle3lint (it imports vllm and torch); the linter only runs it.
The record is rewritten at every phase, so a run killed at its time limit still says how far it got.
What the probes share (the record, loading the shrinker, a config class's defaults) is
``eagle3lint_probe``, on the launch's PYTHONPATH (``enginerun/probe_path/``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import eagle3lint_probe as common
from eagle3lint_probe import STAND_IN_HOW, Record

# The Transformers modeling backend's classes wrap a transformers model: they are launched with a
# transformers architecture and model_impl="transformers" (the class vLLM then picks).
BACKEND_STAND_INS = {
    "TransformersForCausalLM": "LlamaForCausalLM",
    "TransformersMoEForCausalLM": "Qwen3MoeForCausalLM",
    "TransformersMultiModalForCausalLM": "Qwen2VLForConditionalGeneration",
    "TransformersMultiModalMoEForCausalLM": "Qwen3VLMoeForConditionalGeneration",
}

STEPS_RECORDED = 6  # forward passes whose states are matched (the profile run and the first steps)


# ---- the config ---------------------------------------------------------------------------------

def _config_class(architecture: str) -> tuple[str, Any, str]:
    """(model type, config class, how it was found) for an architecture."""
    try:
        return _own_config_class(architecture)
    except LookupError:
        pass
    # A class whose config lives only in its hub repository (remote code): the config of the
    # first registered architecture among its vLLM class's bases that has one.
    from vllm.model_executor.models.registry import ModelRegistry

    cls = ModelRegistry._try_load_model_cls(architecture)
    supported = ModelRegistry.get_supported_archs()
    for base in getattr(cls, "__mro__", ())[1:]:
        if base.__name__ in supported and base.__name__ != architecture:
            try:
                model_type, config_cls, _how = _own_config_class(base.__name__)
            except LookupError:
                continue
            return model_type, config_cls, f"its vLLM base class {base.__name__} (no config class of its own)"
    # Remote code only (InternLM2, Exaone, BailingMoe...): Llama's config under the architecture's
    # own model type, registered with transformers in this process (a checkpoint's config.json
    # gives such a class every key it reads; what Llama's lacks, the launch names and the sweep
    # adds on its retry).
    stem = common.stem(architecture).lower()
    if not stem:
        raise LookupError(f"no config class found for {architecture} (none of its own, none of its vLLM bases')")
    return stem, _stand_in_config(stem), "no config class of its own or its bases': " + STAND_IN_HOW


def _stand_in_config(model_type: str) -> Any:
    from transformers import AutoConfig, LlamaConfig

    stand_in = type(f"StandIn_{model_type}_Config", (LlamaConfig,), {"model_type": model_type})
    AutoConfig.register(model_type, stand_in, exist_ok=True)
    return stand_in


def _own_config_class(architecture: str) -> tuple[str, Any, str]:
    from transformers import CONFIG_MAPPING
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    model_type = common.arch_model_types().get(architecture)
    how = "transformers' auto tables"
    if model_type is None:
        # vLLM-only architectures: the model type whose name the architecture starts with.
        best = common.model_type_by_name(architecture, [*_CONFIG_REGISTRY.keys(), *CONFIG_MAPPING.keys()])
        if best is None:
            raise LookupError(f"no config class found for {architecture}")
        model_type, how = best, "the architecture's name"
    if model_type in _CONFIG_REGISTRY:
        return model_type, _CONFIG_REGISTRY[model_type], how + " (vLLM's config)"
    return model_type, CONFIG_MAPPING[model_type], how


def is_multimodal(target: str, shrink: Any) -> bool:
    """The registry's own word (its inspection of the class), else a tower in the config."""
    config = json.loads((Path(target) / "config.json").read_text(encoding="utf-8"))
    architectures = config.get("architectures") or []
    try:
        from vllm.model_executor.models.registry import ModelRegistry

        info = ModelRegistry._try_inspect_model_cls(architectures[0]) if architectures else None
        if info is not None:
            return bool(info.supports_multimodal)
    except Exception:  # the inspection is a convenience: the launch reports its own failure
        pass
    return any(isinstance(config.get(key), dict) for key in shrink.TOWER_KEYS)


def _launched_config_class(architecture: str) -> tuple[str, str, Any, str]:
    """The architecture a launch builds (a Transformers-backend class's stand-in), its model type,
    config class and how it was found."""
    launched = BACKEND_STAND_INS.get(architecture, architecture)
    return (launched, *_config_class(launched))


def build_folders(spec: dict[str, Any], record: Record, shrink: Any) -> tuple[str, str | None]:
    return common.build_folders(spec, record, shrink, _launched_config_class)


# ---- observing the target -----------------------------------------------------------------------

class Observer:
    """Hooks on the target: the ids the runner sets, and per forward pass the streams and the aux
    states, matched at the end of the pass."""

    def __init__(self, record: Record, matcher: Any, layers_wanted: int | None) -> None:
        self.record = record
        self.matcher = matcher
        self.layers_wanted = layers_wanted
        self.ids: list[int] | None = None
        self.passes: list[dict[str, Any]] = []
        self.streams: dict[int, Any] = {}
        self.partials: dict[str, Any] = {}
        self.final: Any = None
        self.attached = False

    def attach(self, model: Any) -> None:
        import torch

        self.attached = True
        if hasattr(type(model), "set_aux_hidden_state_layers"):
            original = model.set_aux_hidden_state_layers

            def set_layers(layers: Any) -> Any:
                self.ids = [int(x) for x in layers]
                self.record.data["ids"] = self.ids
                self.record.write()
                return original(layers)

            model.set_aux_hidden_state_layers = set_layers
        lists = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m) > 0]
        if self.layers_wanted:
            lists = [(n, m) for n, m in lists if len(m) == self.layers_wanted] or lists
        lists.sort(key=lambda nm: (not nm[0].endswith("layers"), -len(nm[1]), len(nm[0])))
        if not lists:
            self.record.data["layers_found"] = None
            return
        name, layers = lists[0]
        self.record.data["layers_found"] = f"{name} ({len(layers)})"
        for i, layer in enumerate(layers):
            self._hook_layer(i, layer)
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        for child_name, child in parent.named_children():
            if "norm" in child_name.lower() and child_name != name:
                child.register_forward_hook(self._final_norm_hook(len(layers)), with_kwargs=True)
                break
        original_forward = model.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            self.streams, self.partials, self.final = {}, {}, None
            out = original_forward(*args, **kwargs)
            if len(self.passes) < STEPS_RECORDED:
                self._end_pass(out, len(layers))
            return out

        model.forward = forward

    def _hook_layer(self, i: int, layer: Any) -> None:
        import torch

        norms = [m for n, m in layer.named_children() if "norm" in n.lower() or "norm" in type(m).__name__.lower()]
        seen = {"first": True}

        def layer_pre(_module: Any, args: Any, kwargs: Any) -> None:
            residual = kwargs.get("residual", args[2] if len(args) > 2 else None)
            if isinstance(residual, torch.Tensor):
                # vLLM's split stream (hidden, residual): the first norm tells how they combine
                # (a fused add returns the sum; a parallel-residual block's norm reads the stream).
                seen["first"] = True
                return
            # One stream in (transformers' layers, or vLLM's first layer): the input is the
            # stream, whatever the block does with its norms (post-norm blocks norm a sublayer's
            # output, not the stream).
            seen["first"] = False
            hidden = kwargs.get("hidden_states")
            if not isinstance(hidden, torch.Tensor):
                hidden = next((a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point() and a.dim() >= 2), None)
            if hidden is not None:
                self.streams[i] = hidden.detach().clone()
            else:
                seen["first"] = True

        def norm_hook(_module: Any, args: Any, kwargs: Any, out: Any) -> None:
            if not seen["first"]:
                return
            seen["first"] = False
            residual = args[1] if len(args) > 1 else kwargs.get("residual")
            if isinstance(out, tuple) and len(out) > 1 and isinstance(out[1], torch.Tensor) and isinstance(residual, torch.Tensor):
                self.streams[i] = out[1].detach().clone()  # a fused add-and-norm returns the stream it formed
            elif args and isinstance(args[0], torch.Tensor):
                self.streams[i] = args[0].detach().clone()

        def layer_out(_module: Any, _args: Any, _kwargs: Any, out: Any) -> None:
            if isinstance(out, tuple) and out and isinstance(out[0], torch.Tensor):
                self.partials[f"layer {i}'s output without its residual"] = out[0].detach().clone()
                if len(out) > 1 and isinstance(out[1], torch.Tensor) and out[1].shape == out[0].shape:
                    self.partials[f"layer {i}'s residual output"] = out[1].detach().clone()
            elif isinstance(out, torch.Tensor):
                self.partials[f"layer {i}'s output"] = out.detach().clone()

        layer.register_forward_pre_hook(layer_pre, with_kwargs=True)
        layer.register_forward_hook(layer_out, with_kwargs=True)
        if norms:
            norms[0].register_forward_hook(norm_hook, with_kwargs=True)
        self.record.data.setdefault("norms_hooked", 0)
        self.record.data["norms_hooked"] += bool(norms)

    def _final_norm_hook(self, count: int) -> Any:
        import torch

        def hook(_module: Any, args: Any, kwargs: Any, out: Any) -> None:
            residual = args[1] if len(args) > 1 else kwargs.get("residual")
            if isinstance(out, tuple) and len(out) > 1 and isinstance(residual, torch.Tensor):
                self.final = out[1].detach().clone()
            elif args and isinstance(args[0], torch.Tensor):
                self.final = args[0].detach().clone()

        return hook

    def _end_pass(self, out: Any, count: int) -> None:
        import torch

        aux = None
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (list, tuple)):
            aux = [t for t in out[1] if isinstance(t, torch.Tensor)]
        summary: dict[str, Any] = {"aux_count": None if aux is None else len(aux)}
        if aux is not None:
            summary["widths"] = [int(t.shape[-1]) for t in aux]
            streams = [self.streams.get(k) for k in range(count)] + [self.final]
            recording = self.matcher.Recording(streams=streams, partials=self.partials)

            def same(a: Any, b: Any) -> bool:
                # Dummy weights are tiny (a layer adds ~1e-3 to the stream): only a near-exact
                # match tells one layer's stream from the next.
                # The Transformers backend drops the batch dimension its model keeps: compare
                # as (tokens, width).
                a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
                if a.shape != b.shape or a.numel() == 0:
                    return False
                scale = float(b.float().abs().max())
                return bool((a.float() - b.float()).abs().max() <= 1e-6 * max(scale, 1e-12))

            matches = self.matcher.match_states(aux, recording, same)
            summary["matches"] = [{"index": m.index, "streams": m.streams, "partials": m.partials} for m in matches]
            summary["streams_seen"] = sum(s is not None for s in streams)
            summary["indistinct"] = self.matcher.indistinct_streams(recording, same)
            if self.ids is not None:
                judged = self.matcher.judge_capture(self.ids, matches)
                summary["right"] = judged.right
                summary["problems"] = judged.problems
        self.passes.append(summary)
        self.record.data["passes"] = self.passes
        self.record.write()


# ---- the run --------------------------------------------------------------------------------------

def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    record = Record(spec["out"])
    record.data["mode"] = spec["mode"]
    shrink = common.load("eagle3lint_probe_shrink", spec["shrink_path"])
    matcher = common.load("eagle3lint_probe_matcher", spec["matcher_path"])
    try:
        record.phase("setup")
        target, drafter = build_folders(spec, record, shrink)
        record.phase("import")
        import vllm
        import vllm.v1.worker.cpu_model_runner as cpu_runner
        from vllm import LLM, SamplingParams

        record.data["engine_version"] = vllm.__version__
        layers_wanted = spec.get("layers")
        observer = Observer(record, matcher, layers_wanted)
        original_get_model = cpu_runner.get_model

        def get_model(*args: Any, **kwargs: Any) -> Any:
            model = original_get_model(*args, **kwargs)
            if not observer.attached:  # the runner's first load is the target
                record.data["target_class"] = type(model).__name__
                observer.attach(model)
            return model

        cpu_runner.get_model = get_model
        record.phase("init")
        speculative = None
        if drafter is not None:
            speculative = {"method": "eagle3", "model": drafter, "num_speculative_tokens": spec.get("num_speculative_tokens", 3)}
        # A multimodal target runs its language model only: its processor needs a tokenizer and
        # a text prompt reaches the same EAGLE-3 plumbing (the drafter load still reads the
        # target's multimodal config, as in a full launch).
        extra: dict[str, Any] = {"language_model_only": True} if is_multimodal(target, shrink) else {}
        if spec.get("architecture") in BACKEND_STAND_INS:
            extra["model_impl"] = "transformers"
        record.data["language_model_only"] = bool(extra)
        llm = LLM(
            **extra,
            model=target, skip_tokenizer_init=True, load_format="dummy", enforce_eager=True, dtype="float32",
            max_model_len=256, max_num_seqs=4, trust_remote_code=False, speculative_config=speculative,
        )
        record.phase("generate")
        outputs = llm.generate([{"prompt_token_ids": list(range(3, 19))}], SamplingParams(max_tokens=spec.get("max_tokens", 8), ignore_eos=True))
        record.data["tokens"] = len(outputs[0].outputs[0].token_ids)
        record.data["ok"] = True
        record.phase("done")
    except BaseException as exc:
        record.data["failed_in"] = record.data["phase"]
        record.data["error"] = common.error(exc)
        record.phase("failed")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    sys.exit(main())
