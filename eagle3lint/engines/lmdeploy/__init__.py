"""LMDeploy's PyTorch engine: the models its architecture map names, the EAGLE-3 contract read
from its config builders, build context, proposer and CUDA-graph output path, the rules that
follow the captured hidden states from the config to the drafter, its fixes and its server
(``adapter`` is what the core sees; the rest is read only through it)."""
