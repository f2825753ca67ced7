"""Everything one `verify` run is told (shared by `eagle3lint verify` and `fix --apply --verify`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3lint.verify.pair.context import Launch

# Big models load for tens of minutes (the seed's Kimi-K2.5 on 8 GPUs took over 20).
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_CONCURRENCY = (1, 16)


@dataclass
class VerifyOptions:
    model_path: str
    draft_model_path: str | None  # None: EAGLE-3 without a drafter (the pre-flight says what follows)
    engine: str | None = None
    engine_root: Path | None = None
    # A published release (NAME==VERSION) whose source the pre-flight's static check reads.
    release: str | None = None
    preflight_only: bool = False
    ignore_preflight: bool = False  # launch even when the pre-flight predicts a crash
    tp: int = 1
    pp: int = 1  # pipeline-parallel size: the pre-flight's verdicts assume PP when it is over 1
    # Launch options the verdicts assume besides --pp (`--engine-option`, as for check/models).
    engine_options: tuple[str, ...] = ()
    gpus: list[int] | None = None
    engine_args: list[str] = field(default_factory=list)
    # Replaces `python -m sglang.launch_server` / `vllm serve`; the engine arguments follow it.
    launcher: str | None = None
    num_steps: int | None = None
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None
    # What the drafter's layer ids mean, where the user says so ("output" | "hidden_states").
    drafter_ids: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    baseline: bool = True
    prompts_file: Path | None = None
    max_new_tokens: int = 256
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    log_dir: Path | None = None
    output_format: str = "human"  # "human" | "json": json keeps the progress display quiet
    poll_interval_s: float = 2.0
    teardown_grace_s: float = 30.0  # SIGTERM -> SIGKILL
    teardown_timeout_s: float = 120.0  # port closed and GPU memory freed
    request_timeout_s: float = 600.0
    host: str = "127.0.0.1"

    def launch_options(self, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The option set `check` and `models` take, from this run's launch flags: one answer
        for the three commands. ``environ``: the environment the server would start in; an
        engine option set there (vLLM's ``VLLM_USE_V2_MODEL_RUNNER``) counts unless the command
        line sets it."""
        chosen = (f"pp={self.pp}", *self.engine_options) if self.pp > 1 else tuple(self.engine_options)
        return (*self.environment_options(environ), *chosen) if environ is not None else chosen

    def environment_options(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """``--engine-option`` words for the engine options the environment sets (the server
        inherits it): ``runner=v2`` for ``VLLM_USE_V2_MODEL_RUNNER=1``."""
        from eagle3lint.model.launch_options import options_from_environment
        from eagle3lint.source.rulepack import load_pack

        if self.engine is None:
            return ()
        given = {o.partition("=")[0].strip().lower() for o in self.engine_options}
        return tuple(o for o in options_from_environment(load_pack(self.engine).options, environ) if o.partition("=")[0] not in given)

    def launch(self) -> Launch:
        """The launch the pair pre-flight judges."""
        from eagle3lint.verify.pair.context import Launch

        return Launch(
            tp=self.tp, pp=self.pp, engine_args=tuple(self.engine_args), num_steps=self.num_steps,
            eagle_topk=self.eagle_topk, num_draft_tokens=self.num_draft_tokens,
        )
