"""An inert stand-in for ``sgl_kernel`` (SGLang's CUDA kernels), put first on PYTHONPATH by
``eagle3lint engine-run --engine sglang``: SGLang's CPU start-up imports it, and on a target-only
path never calls it. Every name and submodule resolves; every call raises, so nothing this package
replaces can produce a result. The one call a 0.5.23 launch makes (the KV-cache copy warm-up,
slot 0 onto slot 0) is answered by the probe, not here. The placeholder is the probes' shared one
(``eagle3lint_probe``, on the same PYTHONPATH: ``enginerun/probe_path/``)."""

import sys

from eagle3lint_probe import Inert as _Inert  # noqa: F401
from eagle3lint_probe import InertSubmodules
from eagle3lint_probe import inert_getattr as __getattr__  # noqa: F401

__version__ = "0.0.0+eagle3lint.stub"

sys.meta_path.insert(0, InertSubmodules(__name__))
