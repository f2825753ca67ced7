"""What the rules know of one LMDeploy target: the builders of its checkpoints and its capture flow."""

from __future__ import annotations

from dataclasses import dataclass

from eagle3lint.engines.lmdeploy.checkpoints import Family
from eagle3lint.engines.lmdeploy.flow import Flow, Graph
from eagle3lint.source.index import ClassRef


@dataclass(frozen=True)
class ModelAnalysis:
    families: list[Family]
    flow: Flow
    graph: Graph | None  # the CUDA-graph path, where the eager path carries the states
    # The first attribute of the chain holds a causal LM: the class wraps a language model.
    wrapper: ClassRef | None = None
