"""`fix` on real SGLang releases (cached downloads; nothing is written into the cache)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3lint.fetch.releases import fetch_package
from tests.fix_helpers import apply_dry_run
from tests.helpers import release_json, release_root, run_cli, run_json

pytestmark = pytest.mark.release

KIMI = "sglang/srt/models/kimi_k25.py"
DELEGATED = {
    "set_eagle3_layers_to_capture": "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
    "get_embed_and_head": "return self.language_model.get_embed_and_head()",
    "set_embed_and_head": "self.language_model.set_embed_and_head(embed, head)",
}


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@pytest.fixture(scope="module")
def sglang_059_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole 0.5.9 package, hard-linked (the fixer replaces files, never writes into them)."""
    root = tmp_path_factory.mktemp("sglang-0.5.9")
    shutil.copytree(release_root("sglang==0.5.9"), root / "sglang", copy_function=_link_or_copy)
    return root


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def test_kimi_k25_gets_the_three_delegation_methods(sglang_059_copy: Path) -> None:
    kimi = sglang_059_copy / KIMI
    cached = release_root("sglang==0.5.9") / "srt" / "models" / "kimi_k25.py"
    original = cached.read_bytes()
    done = run_cli("fix", "--apply", kimi)
    assert done.returncode == 0, done.stderr
    assert "Fixed 1 of 1 finding in 1 file." in done.stderr  # one cause: the delegation
    assert cached.read_bytes() == original  # the shared cache is untouched

    old_cls = _class(ast.parse(original), "KimiK25ForConditionalGeneration")
    new_cls = _class(ast.parse(kimi.read_bytes()), "KimiK25ForConditionalGeneration")
    added = new_cls.body[len(old_cls.body) :]
    assert [ast.dump(s) for s in new_cls.body[: len(old_cls.body)]] == [ast.dump(s) for s in old_cls.body]
    assert [f.name for f in added if isinstance(f, ast.FunctionDef)] == list(DELEGATED)
    for fn in added:
        assert isinstance(fn, ast.FunctionDef) and len(fn.body) == 1
        assert ast.unparse(fn.body[0]) == DELEGATED[fn.name]
    # 0.5.9 calls the setter with the ids and with none, and DeepSeek's takes `layer_ids=None`.
    setter = next(f for f in added if isinstance(f, ast.FunctionDef) and f.name == "set_eagle3_layers_to_capture")
    assert ast.unparse(setter.args) == "self, layer_ids=None"

    check = run_cli("check", kimi)
    assert check.returncode == 0, check.stdout
    compiled = subprocess.run([sys.executable, "-m", "py_compile", str(kimi)], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    again = run_cli("fix", kimi)
    assert (again.returncode, again.stdout) == (0, "")


def test_sglang_0_5_23_dry_run_diffs_apply_and_parse(tmp_path: Path) -> None:
    changed = apply_dry_run("sglang==0.5.23", "sglang/srt/models", tmp_path)
    # Only fixes that make a model supported: wrappers that delegate, leaves given the getter
    # they lack. Models with no EAGLE-3 code get no safe half (they were most of the files).
    assert len(changed) >= 20
    assert "sglang/srt/models/kimi_vl.py" in changed


def test_sglang_0_5_9_unsafe_dry_run_diffs_apply_and_parse(tmp_path: Path) -> None:
    changed = apply_dry_run("sglang==0.5.9", "sglang/srt/models", tmp_path, "--unsafe-fixes")
    assert "sglang/srt/models/mixtral.py" in changed  # leaf capture on a real decoder loop


def test_sglang_0_4_8_llama4_wrapper_gets_the_no_argument_delegation() -> None:
    # 0.4.8.post1 calls the setter with no argument and its Llama setter takes none: the
    # delegation follows (as the SGLang developers wrote it), not 0.5's `layer_ids=None`.
    _, report = release_json("check", "--release", "sglang==0.4.8.post1", "sglang/srt/models/mllama4.py")
    found = [f for f in report["findings"] if f["class"] == "Llama4ForConditionalGeneration" and f["code"] == "E3L004"]
    assert len(found) == 1
    fix = found[0]["fix"]
    assert fix["applicability"] == "safe", fix
    added = [line[1:].strip() for line in fix["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert "def set_eagle3_layers_to_capture(self):" in added
    assert "self.language_model.set_eagle3_layers_to_capture()" in added
    assert not any("layer_ids" in line for line in added)


def test_sglang_kt_glm5_next_is_offered_no_fix_that_fix_does_not_make() -> None:
    # A fork (sglang-kt 0.7.2): its decoder's text passes the capture's first test, its parsed
    # loop does not. The check says why there is no fix; `fix --unsafe-fixes` has none either.
    root = fetch_package("sglang-kt==0.7.2") / "sglang"
    model = root / "srt" / "models" / "glm5_next.py"
    _, report = run_json("check", model, "--engine-root", root)
    (finding,) = [f for f in report["findings"] if f["class"] == "Glm5NextForConditionalGeneration"]
    assert finding["code"] == "E3L020"
    assert "unsafe fix" not in finding["message"]
    assert "no automatic fix: the loop in `Glm5NextModel.forward`" in finding["message"]
    assert finding["fix"]["applicability"] == "display-only"
    shown = run_cli("fix", "--unsafe-fixes", model, "--engine-root", root)
    assert shown.stdout == ""


def test_sglang_0_5_23_glm_wrappers_that_capture_get_the_setter_not_a_capture_by_hand() -> None:
    # Their decoders capture (`layers_to_capture`), their forward unpacks: only the setter and
    # the hand-off to the logits processor are missing, and that is what the fix says and adds.
    _, report = release_json("check", "--release", "sglang==0.5.23")
    found = {f["class"]: f for f in report["findings"] if f["code"] == "E3L001" and f["method"] == "set_eagle3_layers_to_capture"}
    for name in ("GlmOcrForConditionalGeneration", "Glm4vMoeForConditionalGeneration", "Glm4vForConditionalGeneration"):
        fix = found[name]["fix"]
        assert "by hand" not in fix["description"], fix
        assert fix["applicability"] == "unsafe"
        assert "captures already" in fix["description"]
        assert "+    def set_eagle3_layers_to_capture(self, layer_ids=None):" in fix["diff"]
    assert "aux_hidden_states=aux_hidden_states" in found["Glm4vForConditionalGeneration"]["fix"]["diff"]
