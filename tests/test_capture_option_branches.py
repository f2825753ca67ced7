"""Which decoder loops a launch option's branch skips (E3L107's facts), read from one forward."""

from __future__ import annotations

import ast
import textwrap

from eagle3lint.source.capture_facts import capture_facts


def _skips(source: str) -> list[list[tuple[str, tuple[str, ...], int]]]:
    forward = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(forward, ast.FunctionDef)
    facts = capture_facts(
        forward, "self", ("aux_hidden_state",), frozenset(), "", "", frozenset(), (("two-batch-overlap", ("can_run_tbo",)),)
    )
    return [loop.option_skips for loop in facts.loops]


def test_a_branch_that_rebinds_the_loops_range_skips_it() -> None:
    skips = _skips(
        """
        def forward(self, forward_batch):
            end = self.end_layer
            if forward_batch.can_run_tbo:
                end, extra = self.first_k_dense, None
            for i in range(self.start_layer, end):
                hidden_states, residual = self.layers[i](hidden_states, residual)
        """
    )
    assert skips == [[("two-batch-overlap", (), 4)]]


def test_an_attribute_or_item_written_in_the_branch_rebinds_no_name() -> None:
    # `self.tbo_used = True` rebinds no `self`, `flags[i] = 1` no `i`: the loop runs either way.
    skips = _skips(
        """
        def forward(self, forward_batch, flags, i):
            if forward_batch.can_run_tbo:
                self.tbo_used = True
                flags[i] = 1
            for i in range(self.start_layer, self.end_layer):
                hidden_states, residual = self.layers[i](hidden_states, residual)
        """
    )
    assert skips == [[]]
