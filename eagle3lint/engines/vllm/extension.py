"""What vLLM adds to the call-site scan: its ``SupportsEagle3`` protocol and the facts around it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagle3lint.model.contract_types import CheckCall, ContractExtension

if TYPE_CHECKING:
    from eagle3lint.common.findings import FileError
    from eagle3lint.engines.vllm.protocol import VllmProtocol
    from eagle3lint.source.engine import Engine


class VllmContractExtension(ContractExtension):
    """The protocol read from ``interfaces.py``: ``supports_eagle3(model)`` vouches for every
    protocol member, and ``Contract.extra["vllm"]`` keeps the protocol, the check function's call
    sites and the old model-type allow-list."""

    def __init__(self, engine: Engine) -> None:
        from eagle3lint.engines.vllm.protocol import read_protocol

        self.engine = engine
        protocol, error = read_protocol(engine)
        self.protocol: VllmProtocol | None = protocol
        self._errors = [error] if error is not None else []

    def check_functions(self) -> dict[str, frozenset[str]]:
        proto = self.protocol
        if proto is None or not proto.check_function:
            return {}
        return {proto.check_function: frozenset(m.name for m in proto.members)}

    def errors(self) -> list[FileError]:
        return list(self._errors)

    def extra(self, check_calls: list[CheckCall]) -> dict[str, Any]:
        from eagle3lint.engines.vllm.drafter_load import read_drafter_load
        from eagle3lint.engines.vllm.model_types import read_model_types
        from eagle3lint.engines.vllm.pack import vllm_pack
        from eagle3lint.engines.vllm.protocol import VllmContract, read_allow_list, read_pp_guard
        from eagle3lint.engines.vllm.runners import runner_of

        vpack = vllm_pack(self.engine.pack)
        guard = read_pp_guard(self.engine, vpack.pp_flag, vpack.pp_guard_files, lambda rel: runner_of(rel, vpack))
        allow = read_allow_list(self.engine)
        load = read_drafter_load(self.engine, vpack)
        # The allow-list (E3L017) and the drafter load's copy off the config (E3L019) judge by them.
        wanted = allow is not None or (load is not None and bool(load.config_reads))
        types = read_model_types(self.engine, vpack) if wanted else None
        return {"vllm": VllmContract.from_scan(self.protocol, check_calls, allow, guard, types, load)}
