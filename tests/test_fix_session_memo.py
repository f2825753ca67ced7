"""A later round of a fix run (after fixes were rejected) edits and proves again only the files
whose text or edits changed: the others' outcomes are the earlier round's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from eagle3lint.fix.edits import InsertMembers
from eagle3lint.fix.texts import SourceSet
from eagle3lint.run import fix_session
from eagle3lint.source.parallel import WorkerPool

METHOD = "def get_embed_and_head(self):\n    return self.inner.get_embed_and_head()\n"


def _plan(path: Path, cls: str) -> Any:
    return SimpleNamespace(edits=(InsertMembers(str(path), (cls,), None, METHOD, "get_embed_and_head"),))


def test_a_file_edited_in_an_earlier_round_is_not_edited_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("class A:\n    x = 1\n")
    b.write_text("class B:\n    y = 2\n")
    edited: list[str] = []
    real = fix_session._edit_files
    monkeypatch.setattr(fix_session, "_edit_files", lambda jobs: (edited.extend(j[0].path for j in jobs), real(jobs))[1])
    done: dict[Any, Any] = {}
    pool = WorkerPool(1)
    first, failed = fix_session._build_files([_plan(a, "A"), _plan(b, "B")], SourceSet(), None, {}, pool, done)
    assert not failed and sorted(first) == [str(a), str(b)] and sorted(edited) == [str(a), str(b)]
    # The next round: the same edit of a.py, another of b.py; only b.py is edited again.
    edited.clear()
    other = SimpleNamespace(edits=(InsertMembers(str(b), ("B",), None, METHOD.replace("get_embed", "set_embed"), "set_embed_and_head"),))
    second, failed = fix_session._build_files([_plan(a, "A"), other], SourceSet(), None, {}, pool, done)
    assert not failed and edited == [str(b)]
    assert second[str(a)] == first[str(a)] and "set_embed_and_head" in second[str(b)]
    # Without the memo every file is edited.
    edited.clear()
    fix_session._build_files([_plan(a, "A"), other], SourceSet(), None, {}, pool)
    assert sorted(edited) == [str(a), str(b)]
