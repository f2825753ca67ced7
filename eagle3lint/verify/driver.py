"""What ``verify`` needs from an engine: its server's command line, its HTTP client, its log and
crash knowledge, and the pre-flight items only it can judge. Each engine's adapter returns one
(``EngineAdapter.server()``); the rest of ``verify`` is the same for every engine."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.common.errors import UsageError

if TYPE_CHECKING:
    from eagle3lint.model.contract_types import Contract
    from eagle3lint.source.engine import Engine
    from eagle3lint.verify.configs import ModelConfig, PreflightResult
    from eagle3lint.verify.measure import Client
    from eagle3lint.verify.options import VerifyOptions


def path_argument(path: str) -> str:
    """A model path as a server argument: one starting with ``-`` would be read as an option
    (``vllm serve -m`` or ``--model-path -m``), so it gets a ``./`` (the same folder). Neither
    ``--model=PATH`` nor ``--`` is enough: vLLM's argument parser moves ``--model=PATH`` to the
    positional slot before argparse sees it, where ``-m`` is an option again, and a ``--``
    would make the engine arguments after it positional too."""
    return "./" + path if path.startswith("-") else path


class ServerDriver:
    """Subclasses set :attr:`knowledge_file` and implement :meth:`arguments` and :meth:`client`."""

    # The engine's verify knowledge (log lines, endpoints, crash patterns, aux-layer convention).
    knowledge_file: Path

    def validate_options(self, options: VerifyOptions) -> None:
        """Refuse speculative options this engine has no use for (a usage error, exit 2)."""
        for name, value in (("--num-steps", options.num_steps), ("--eagle-topk", options.eagle_topk), ("--num-draft-tokens", options.num_draft_tokens)):
            if value is not None and value < 1:
                raise UsageError(f"{name} {value}: must be at least 1")

    def validate_preflight(self, options: VerifyOptions) -> None:
        """What a pre-flight refuses of the speculative options: only what is never a launch
        (a count below 1, a flag the engine has not); which combinations the release accepts is
        the release's own argument checks' to say (``eagle3lint.verify.pair.launch``)."""
        ServerDriver.validate_options(self, options)

    def default_launcher(self, module: str, script: str) -> list[str]:
        """The command the engine's arguments follow, when ``--launcher`` does not say: the
        knowledge file's launch ``module`` (run by this Python) or console ``script``."""
        return [sys.executable, "-m", module]

    def launcher_available(self, script: str, package: str) -> bool:
        """Whether the default launcher can start here (the engine is installed for this Python,
        or its console ``script`` is on the PATH)."""
        import importlib.util

        found = importlib.util.find_spec(package) is not None
        return found or bool(script and shutil.which(script))

    def arguments(self, options: VerifyOptions, port: int, speculative: bool) -> list[str]:
        """The server's arguments: the target, parallelism, address, and (``speculative``) the
        EAGLE-3 drafter; ``--engine-args`` come last."""
        raise NotImplementedError

    def client(self, base_url: str, model_path: str, timeout_s: float) -> Client:
        raise NotImplementedError

    def preflight(self, result: PreflightResult, engine: Engine, contract: Contract, target: ModelConfig) -> None:
        """Pre-flight items only this engine can judge (what it refuses before any model class
        matters); the default adds none."""
