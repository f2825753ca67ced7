"""Facts the per-file summary records, which the index and the rules read instead of bodies."""

from __future__ import annotations

import ast
import textwrap

from eagle3lint.source.summary import summarize


def _init_of(source: str) -> object:
    tree = ast.parse(textwrap.dedent(source))
    summary = summarize(tree, module="pkg.m", path="m.py", is_package=False, walk_names=frozenset(), line_count=1)
    return summary.classes["Model"].methods["__init__"]


def test_init_records_attributes_built_inside_a_self_context_manager() -> None:
    init = _init_of(
        """
        class Model:
            def __init__(me, config):
                me.before = 1
                with me._mark_language_model(config):
                    me.language_model = Inner()
                    if config.extra:
                        me.head: Head = Head()
                    try:
                        me.tower = Tower()
                    except ValueError:
                        pass
                with me._mark_tower_model(config), other():
                    me.vision = Vision()
                with other():
                    me.outside = 2
        """
    )
    assert init.with_assigns == {  # type: ignore[attr-defined]
        "_mark_language_model": ["language_model", "head", "tower"],
        "_mark_tower_model": ["vision"],
    }


def test_only_init_records_context_manager_blocks() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            class Model:
                def load(self):
                    with self._mark_language_model(None):
                        self.language_model = Inner()
            """
        )
    )
    summary = summarize(tree, module="pkg.m", path="m.py", is_package=False, walk_names=frozenset(), line_count=1)
    assert summary.classes["Model"].methods["load"].with_assigns == {}


def _always_raises(body: str) -> bool:
    tree = ast.parse(textwrap.dedent(body))
    summary = summarize(tree, module="pkg.m", path="m.py", is_package=False, walk_names=frozenset(), line_count=1)
    return summary.functions["f"].always_raises


def test_always_raises_only_through_straight_line_code() -> None:
    assert _always_raises('def f(self):\n    "Stand-in."\n    super().__init__()\n    raise NotImplementedError("not here")\n')
    assert _always_raises("def f():\n    x = 1\n    raise ValueError(x)\n    y = 2\n")
    assert not _always_raises("def f(ok):\n    if ok:\n        return\n    raise ValueError\n")
    assert not _always_raises("def f():\n    try:\n        raise ValueError\n    except ValueError:\n        pass\n")
    assert not _always_raises("def f():\n    return 1\n")
