"""Inputs that once exhausted the resolver or the summariser (``/work/shared/robustness``): each
ends as a finding or a per-file error, the rest of the tree still checked, in bounded work."""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run.runner import build_index
from eagle3lint.source.index import LOOKUP_BUDGET, ClassRef, ProjectIndex, Unknown
from eagle3lint.source.summary_types import ModuleSummary
from eagle3lint.source.summary_walk import dotted
from tests.helpers import FIXTURES, SGLANG_SKELETON, make_tree, release_root
from tests.robust_helpers import assert_clean_exit, run_bounded

# The model files of /work/shared/robustness, stored as .py.txt so that linters of this
# repository leave them as they are.
DATA = Path(__file__).resolve().parent / "data" / "robustness"
MODELS = "sglang/srt/models"


def _index(root: Path) -> ProjectIndex:
    return build_index(discover_engine([root / "sglang"]))


class _CountingModule:
    """Counts module-level lookups (``ProjectIndex.module``), failing fast past ``limit``: an
    exponential search shows as a count, not as a hung test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        self.calls = 0
        self.limit = limit
        real = ProjectIndex.module

        def counted(index: ProjectIndex, name: str) -> ModuleSummary | None:
            self.calls += 1
            if self.calls > self.limit:
                raise AssertionError(f"more than {self.limit} module lookups: the search is not bounded")
            return real(index, name)

        monkeypatch.setattr(ProjectIndex, "module", counted)


# ---- the constructor parameter that defaults to itself ------------------------------------


def test_parameter_defaulting_to_an_undefined_name_of_its_own_is_unknown(tmp_path: Path) -> None:
    make_tree(tmp_path, {**SGLANG_SKELETON, f"{MODELS}/probe.py": (DATA / "param_default_self.py.txt").read_text()})
    index = _index(tmp_path)
    index.load_files([tmp_path / MODELS / "probe.py"])
    (held,) = index.attribute_classes(ClassRef("sglang.srt.models.probe", "ProbeForCausalLM"), "language_model")
    assert isinstance(held, Unknown)
    assert "model_cls" in held.reason


def test_parameter_defaults_resolve_in_the_module_not_among_the_parameters(tmp_path: Path) -> None:
    """``a=b, b=a`` names the module's ``b`` and ``a`` (a default is evaluated where the function
    is defined); the module's ``b`` is a class here."""
    source = (
        "class Inner:\n    pass\n\n"
        "b = Inner\n\n"
        "class Model:\n"
        "    def __init__(self, a=b, b=a):\n"
        "        self.first = a()\n"
        "        self.second = b()\n"
    )
    make_tree(tmp_path, {**SGLANG_SKELETON, f"{MODELS}/m.py": source})
    index = _index(tmp_path)
    index.load_files([tmp_path / MODELS / "m.py"])
    ref = ClassRef("sglang.srt.models.m", "Model")
    assert index.attribute_classes(ref, "first") == [ClassRef("sglang.srt.models.m", "Inner")]
    (second,) = index.attribute_classes(ref, "second")
    assert isinstance(second, Unknown)  # the module has no ``a``


# ---- star imports of one another ------------------------------------------------------------


def _star_tree(root: Path) -> Path:
    files = {f"{MODELS}/{name}": (DATA / f"{name}.txt").read_text() for name in ("star_a.py", "star_b.py", "star_c.py")}
    return make_tree(root, {**SGLANG_SKELETON, **files})


def test_star_import_triangle_resolves_in_bounded_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _star_tree(tmp_path)
    index = _index(tmp_path)
    counter = _CountingModule(monkeypatch, limit=500)
    (base,) = index.bases(ClassRef("sglang.srt.models.star_a", "StarForCausalLM"))
    assert isinstance(base, Unknown)
    assert counter.calls < 100
    lookup = index.lookup(ClassRef("sglang.srt.models.star_a", "StarForCausalLM"), "get_embed_and_head")
    assert lookup.status == "unknown"


def test_a_clique_of_star_imports_stays_within_the_lookup_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten modules that each star-import all the others: the routes to a missing name number
    in the millions; one lookup stops after the budget, the next is answered from memory."""
    names = [f"clique_{n}" for n in range(10)]
    files: dict[str, str | bytes] = {}
    for name in names:
        lines = [f"from .{other} import *" for other in names if other != name]
        if name == "clique_0":
            lines.append("class CliqueForCausalLM(Nowhere):\n    pass")
        files[f"{MODELS}/{name}.py"] = "\n".join(lines) + "\n"
    make_tree(tmp_path, {**SGLANG_SKELETON, **files})
    index = _index(tmp_path)
    counter = _CountingModule(monkeypatch, limit=20 * LOOKUP_BUDGET)
    ref = ClassRef("sglang.srt.models.clique_0", "CliqueForCausalLM")
    (base,) = index.bases(ref)
    assert isinstance(base, Unknown)
    first = counter.calls
    assert first <= 2 * LOOKUP_BUDGET
    assert index.bases(ref) == [base]
    assert counter.calls - first <= 2  # memoised: the class's module, nothing searched again


def test_a_name_reached_through_a_cycle_resolves_from_every_start(tmp_path: Path) -> None:
    """``a`` star-imports ``b`` then ``d``; ``b`` star-imports ``a``; ``d`` defines ``X``. Asked
    first in ``a``, the route ``a -> b -> a`` is cut short; ``b``'s answer then must not be
    remembered as "not defined": from ``b``, ``X`` is ``d.X`` through ``a``."""
    make_tree(
        tmp_path,
        {
            **SGLANG_SKELETON,
            f"{MODELS}/a.py": "from .b import *\nfrom .d import *\n",
            f"{MODELS}/b.py": "from .a import *\n",
            f"{MODELS}/d.py": "class X:\n    pass\n",
        },
    )
    index = _index(tmp_path)
    expected = ClassRef("sglang.srt.models.d", "X")
    assert index.resolve("sglang.srt.models.a", "X") == expected
    assert index.resolve("sglang.srt.models.b", "X") == expected


# ---- a 1000-deep attribute chain, and nesting the summariser cannot follow -----------------


def test_dotted_follows_a_chain_deeper_than_the_recursion_limit() -> None:
    node: ast.expr = ast.Name("a")
    for _ in range(5000):
        node = ast.Attribute(node, "b")
    node = ast.Subscript(ast.Call(node, [], []), ast.Name("T"))
    text = dotted(node)
    assert text is not None and text.startswith("a.b.b") and text.endswith(".b()")
    assert text.count(".b") == 5000


def test_deep_dotted_base_is_summarised(tmp_path: Path) -> None:
    make_tree(tmp_path, {**SGLANG_SKELETON, f"{MODELS}/deep.py": (DATA / "deep_dotted_base.py.txt").read_text()})
    index = _index(tmp_path)
    (summary,) = index.load_files([tmp_path / MODELS / "deep.py"])
    assert summary.classes["ZzDeepForCausalLM"].bases[0].count(".") >= 999
    assert not index.errors


def test_nesting_the_summariser_cannot_follow_is_that_file_s_error(tmp_path: Path) -> None:
    deep = "class Model:\n    def __init__(self, c):\n        self.x = " + " if c else ".join(["A()"] * 1500) + "\n"
    make_tree(tmp_path, {**SGLANG_SKELETON, f"{MODELS}/deep.py": deep, f"{MODELS}/fine.py": "class Fine:\n    pass\n"})
    index = _index(tmp_path)
    loaded = index.load_files([tmp_path / MODELS / "deep.py", tmp_path / MODELS / "fine.py"])
    assert [m.module for m in loaded] == ["sglang.srt.models.fine"]
    (error,) = index.errors.values()
    assert error.path.endswith("deep.py") and "nested too deeply" in error.message


# ---- the whole command, on the fixture tree and on a real release --------------------------

ROBUST_MODELS = {"ProbeForCausalLM", "StarForCausalLM", "ZzDeepForCausalLM"}


def _drop_inputs(models: Path) -> None:
    for path in sorted(DATA.glob("*.py.txt")):
        shutil.copy(path, models / path.name.removesuffix(".txt"))


def _check_json(tree: Path) -> tuple[int, dict, str]:
    done = run_bounded("check", "--no-cache", "--format", "json", tree)
    assert_clean_exit(done)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_fixture_tree_with_every_input_is_checked(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    before_code, before, _ = _check_json(tree)
    _drop_inputs(tree / MODELS)
    code, data, stderr = _check_json(tree)
    assert (before_code, code) == (1, 1), stderr
    assert data["errors"] == []
    classes = {m["class"] for m in data["models"]}
    assert classes >= ROBUST_MODELS
    others = [f for f in data["findings"] if f["class"] not in ROBUST_MODELS]
    assert others == before["findings"]  # the rest of the tree reads as it did


@pytest.mark.release
def test_sglang_0_5_23_with_every_input_is_checked(tmp_path: Path) -> None:
    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    tree = tmp_path / "sglang-0.5.23"
    shutil.copytree(release_root("sglang==0.5.23"), tree / "sglang", copy_function=link_or_copy)
    _drop_inputs(tree / MODELS)  # new files: the hard links to the cache are never written
    code, data, stderr = _check_json(tree)
    assert code == 1, stderr
    assert data["errors"] == []
    classes = {m["class"] for m in data["models"]}
    assert classes >= ROBUST_MODELS
    assert len(classes) > 200  # every other model of the release is still there
    # One finding per class that never claimed EAGLE-3 (info) plus the real causes: well over a hundred.
    assert sum(f["class"] not in ROBUST_MODELS for f in data["findings"]) > 100
