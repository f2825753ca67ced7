"""The context vLLM's rules see: the shared vLLM facts, and the remedy a wrapper's message names.

The remedy (``eagle3lint.engines.vllm.remedy``) reads the vLLM context; the messages that name it
live in this subclass, so that the context the remedy reads never imports the remedy.
"""

from __future__ import annotations

from eagle3lint.checks.context import MemberState, guard_phrase
from eagle3lint.engines.vllm.context import VllmCheckContext
from eagle3lint.engines.vllm.remedy import describe_remedy, protocol_remedy
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import ModelClass


class VllmRuleContext(VllmCheckContext):
    def delegation_message(self, model: ModelClass, members: list[str], state: MemberState, sites: list[ContractSite]) -> str | None:
        """A wrapper whose inner model has the protocol's members: the runner refuses it because
        ``supports_eagle3()`` is false, which no forwarding method changes; the message starts
        from the protocol and says what else the remedy needs, as proven."""
        proto = self.protocol
        if proto is None or not set(members) <= {m.name for m in proto.members}:
            return None
        remedy = protocol_remedy(self, model.ref, state.inner_attr, state.inner_class, members)
        if remedy is None:
            return None
        inner = state.inner_class.qualname if state.inner_class else "?"
        lacks = ", ".join(f"`{m}`" for m in members)
        check = proto.check_function or "the protocol check"
        return (
            f"`{model.summary.name}` does not declare {proto.name}, so `{check}()` is false and the runner refuses it "
            f"({guard_phrase(sites)}); it lacks {lacks}, which `self.{state.inner_attr}` ({inner}) has, but forwarding "
            f"them alone never makes `{check}()` true; {describe_remedy(self, remedy)}"
        )
