"""The per-file cache: warm runs agree with cold ones, cross-file edits are seen, and a bad
cache is never trusted."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import BASIC_ERRORS, BASIC_FINDINGS, FIXTURES, REPO, run_cli, run_json


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "sglang_basic", tmp_path / "t")
    (tmp_path / "t" / "pyproject.toml").write_text("[tool.eagle3lint]\n")  # the cache lies beside it
    return tmp_path / "t"


def _keys(data: dict) -> list[tuple[str, str, str]]:
    return sorted((f["code"], f["class"], f["method"]) for f in data["findings"])


def test_cache_folder_layout_and_warm_equals_cold(tree: Path) -> None:
    _, cold = run_json("check", ".", "--no-cache", cwd=tree)
    assert not (tree / ".eagle3lint_cache").exists()
    _, first = run_json("check", ".", cwd=tree)
    cache = tree / ".eagle3lint_cache"
    assert (cache / ".gitignore").read_text().strip().endswith("*")
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    entries = list(cache.glob("*/*.pickle"))
    assert len(entries) > 10
    _, warm = run_json("check", ".", cwd=tree)
    assert _keys(cold) == _keys(first) == _keys(warm)


def test_cross_file_change_invalidates_dependent_results(tree: Path) -> None:
    run_json("check", ".", cwd=tree)
    _, before = run_json("check", "sglang/srt/models/inherited.py", cwd=tree)
    assert before["findings"] == []
    # The base class lives in another file: remove one of its methods.
    base = tree / "sglang/srt/models/llama_like.py"
    text = base.read_text()
    start = text.index("    def get_embed_and_head(self):")
    end = text.index("    def set_embed_and_head(")
    base.write_text(text[:start] + text[end:])
    _, after = run_json("check", "sglang/srt/models/inherited.py", cwd=tree)
    assert {(f["class"], f["method"]) for f in after["findings"]} == {
        ("InheritedForCausalLM", "get_embed_and_head"),
        ("DottedBaseForCausalLM", "get_embed_and_head"),
    }


def test_engine_call_site_change_invalidates_the_contract(tree: Path) -> None:
    run_json("check", ".", cwd=tree)
    worker = tree / "sglang/srt/speculative/eagle_worker.py"
    worker.write_text(worker.read_text().replace(
        "embed, head = self.target_worker.model_runner.model.get_embed_and_head()",
        "embed, head = getattr(self.target_worker.model_runner.model, 'get_embed_and_head', lambda: (None, None))()",
    ))
    _, data = run_json("check", ".", cwd=tree)
    assert "get_embed_and_head" not in {f["method"] for f in data["findings"] if f["code"] in ("E3L001", "E3L004")}


def test_a_same_size_edit_with_its_modification_time_kept_invalidates_the_contract(tree: Path) -> None:
    """``cp -p``, ``rsync -a`` and ``tar x`` put the old modification time on new content."""
    import os

    _, before = run_json("check", ".", cwd=tree)
    worker = tree / "sglang/srt/speculative/eagle_worker.py"
    old = worker.read_bytes()
    kept = os.stat(worker)
    new = old.replace(b".model.get_embed_and_head()", b".model.get_embed_and_tail()")
    assert len(new) == len(old) and new != old
    worker.write_bytes(new)
    os.utime(worker, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert os.stat(worker).st_size == kept.st_size and os.stat(worker).st_mtime_ns == kept.st_mtime_ns
    _, warm = run_json("check", ".", cwd=tree)
    _, cold = run_json("check", ".", "--no-cache", cwd=tree)
    # The target's get_embed_and_head is no longer called: a stub of it is no longer a finding.
    stub = ("E3L003", "StubForCausalLM", "get_embed_and_head")
    assert stub in _keys(before) and stub not in _keys(cold)
    assert sorted(f["message"] for f in warm["findings"]) == sorted(f["message"] for f in cold["findings"])


def test_corrupt_and_foreign_entries_are_ignored(tree: Path) -> None:
    _, cold = run_json("check", ".", cwd=tree)
    entries = sorted((tree / ".eagle3lint_cache").glob("*/*.pickle"))
    entries[0].write_bytes(b"\x80\x05garbage")
    entries[1].write_bytes(b"")
    entries[2].write_bytes(pickle.dumps({"name": "something else", "summary": 42}))
    code, warm = run_json("check", ".", cwd=tree)
    assert code == 1 and _keys(warm) == _keys(cold) and warm["errors"] == []


def test_a_planted_pickle_cannot_run_code(tree: Path, tmp_path: Path) -> None:
    run_json("check", ".", cwd=tree)
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (Path.write_text, (marker, "pwned"))

    for entry in (tree / ".eagle3lint_cache").glob("*/*.pickle"):
        entry.write_bytes(pickle.dumps({"name": "x", "summary": Exploit()}))
    code, data = run_json("check", ".", cwd=tree)
    assert not marker.exists()
    assert code == 1 and len(data["findings"]) == BASIC_FINDINGS


def test_unwritable_cache_folder_still_checks(tree: Path) -> None:
    (tree / ".eagle3lint_cache").write_text("not a folder")
    code, data = run_json("check", ".", cwd=tree)
    assert code == 1 and len(data["findings"]) == BASIC_FINDINGS


def _heavy_modules_after_check(path: Path) -> str:
    probe = (
        "import sys\n"
        "from eagle3lint.cli import main\n"
        "try:\n"
        f"    main(['check', '--no-cache', {str(path)!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('HEAVY', sorted(m for m in ('libcst', 'astroid') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    return done.stdout + done.stderr


def test_check_path_imports_libcst_never_and_astroid_only_when_inference_is_needed(tree: Path) -> None:
    # Only the wrapper whose language model comes from a factory function needs astroid.
    (tree / "sglang/srt/models/wrapper_factory.py").unlink()
    assert "HEAVY []" in _heavy_modules_after_check(tree)
    assert "HEAVY ['astroid']" in _heavy_modules_after_check(FIXTURES / "sglang_basic")


def test_no_cache_flag_with_cli() -> None:
    done = run_cli("check", FIXTURES / "sglang_basic", "--no-cache")
    assert done.returncode == 1


def test_unchanged_run_reuses_the_whole_result(tree: Path) -> None:
    def entries() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in (tree / ".eagle3lint_cache").glob("*/*.pickle")}

    first = run_cli("check", ".", cwd=tree)
    stored = entries()
    done = run_cli("check", ".", cwd=tree)
    # Nothing was rewritten: the stored result was used, and it is the same report.
    assert entries() == stored
    assert done.returncode == 1 and done.stdout == first.stdout
    # A format that carries fixes has its own stored result, with the same findings.
    _, data = run_json("check", ".", cwd=tree)
    assert len(data["findings"]) == BASIC_FINDINGS


def test_edit_to_a_lazily_loaded_base_invalidates_the_stored_result(tree: Path) -> None:
    run_cli("check", ".", cwd=tree)
    run_cli("check", ".", cwd=tree)
    # stub_base.py lives outside the models folder: it is read only because a model inherits it.
    stub = tree / "sglang/srt/layers/stub_base.py"
    stub.write_text(stub.read_text().replace("        raise NotImplementedError", "        self.layers = layer_ids"))
    _, data = run_json("check", ".", cwd=tree)
    stubs = {f["method"] for f in data["findings"] if f["code"] == "E3L003"}
    assert stubs == {"get_embed_and_head"}


def test_a_module_appearing_where_none_was_found_invalidates_the_stored_result(tree: Path) -> None:
    (tree / "sglang/srt/models/future.py").write_text(
        "from sglang.srt.layers.future_base import FutureBase\n\n\n"
        "class FutureForCausalLM(FutureBase):\n"
        "    def __init__(self):\n"
        "        self.lm_head = None\n\n\n"
        "EntryClass = FutureForCausalLM\n"
    )
    run_cli("check", ".", cwd=tree)
    _, warm = run_json("check", ".", cwd=tree)
    # Its base cannot be found: presence is unknown, so nothing is reported for it.
    assert "FutureForCausalLM" not in {f["class"] for f in warm["findings"] if f["severity"] == "error"}
    (tree / "sglang/srt/layers/future_base.py").write_text("class FutureBase:\n    pass\n")
    done = run_cli("check", ".", cwd=tree)
    assert "`FutureForCausalLM` does not implement EAGLE-3" in done.stdout


def test_baseline_written_while_one_is_configured_records_everything(tree: Path) -> None:
    run_cli("check", ".", "--write-baseline", "base.json", cwd=tree)
    (tree / "pyproject.toml").write_text('[tool.eagle3lint]\nbaseline = "base.json"\n')
    done = run_cli("check", ".", "--write-baseline", "base2.json", cwd=tree)
    assert done.returncode == 0
    import json

    assert json.loads((tree / "base2.json").read_text())["findings"] == json.loads((tree / "base.json").read_text())["findings"]


def test_a_new_model_file_invalidates_the_stored_result(tree: Path) -> None:
    run_cli("check", ".", cwd=tree)
    run_cli("check", ".", cwd=tree)
    (tree / "sglang/srt/models/brand_new.py").write_text(
        "from torch import nn\n\n\nclass BrandNewForCausalLM(nn.Module):\n"
        "    def __init__(self):\n        self.lm_head = None\n\n\nEntryClass = BrandNewForCausalLM\n"
    )
    done = run_cli("check", ".", cwd=tree)
    assert "`BrandNewForCausalLM` does not implement EAGLE-3" in done.stdout


def test_a_cache_planted_by_someone_else_is_never_read(tree: Path, tmp_path: Path) -> None:
    import os

    # Another user's cache (another secret) fills the folder; then its entries are forged to
    # claim every model is clean.
    theirs = {**os.environ, "PYTHONPATH": str(REPO), "EAGLE3LINT_CACHE_DIR": str(tmp_path / "theirs")}
    run_cli("check", ".", cwd=tree, env=theirs)
    for entry in (tree / ".eagle3lint_cache").glob("*/*.pickle"):
        entry.write_bytes(pickle.dumps({"name": "result:forged", "fingerprint": "", "result": {}}))
    ours = {**os.environ, "PYTHONPATH": str(REPO), "EAGLE3LINT_CACHE_DIR": str(tmp_path / "ours")}
    done = run_cli("check", ".", cwd=tree, env=ours)
    assert done.returncode == 1 and f"{BASIC_ERRORS} errors" in done.stdout
    # Two namespaces for each secret: the tree's, and the summaries every tree shares.
    assert len([p for p in (tree / ".eagle3lint_cache").iterdir() if p.is_dir()]) == 4


# ---- a cache the repository supplies -------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    """The CLI's environment with the user cache folder ``extra`` names (and no other)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "EAGLE3LINT_CACHE_DIR"}
    return {**env, "PYTHONPATH": str(REPO), **extra}


def _forge(cache: Path, broken: bytes, tail: str) -> int:
    """As ``round3/harness/forge_cache.py`` does, for summaries keyed by content: the stored
    summary of a fixed file stored again under the key of the broken text, and every stored
    result made from it relabelled with that text's digest."""
    import hashlib

    from eagle3lint.run import cache as C

    digest = hashlib.sha256(broken).hexdigest()
    patched = 0
    for path in cache.glob("*/*.pickle"):
        data = C._loads(path.read_bytes())
        name = data.get("name", "")
        if name.startswith("summary:") and data["summary"].path.endswith(tail):
            forged = f"summary:{digest}{name[len('summary:') + 64:]}"
            target = path.parent / f"{hashlib.sha256(forged.encode()).hexdigest()[:32]}.pickle"
            target.write_bytes(C._dumps({**data, "name": forged}))
        elif name.startswith("result:"):
            data["inputs"] = [(p, digest if p.endswith(tail) else h) for p, h in data["inputs"]]
            path.write_bytes(C._dumps(data))
        else:
            continue
        patched += 1
    return patched


def test_a_cache_secret_inside_the_checkout_is_refused_and_a_forged_entry_never_read(tree: Path, tmp_path: Path) -> None:
    """The repository ships ``.cache/eagle3lint/cache-secret`` and a ``.eagle3lint_cache`` forged
    with it; the CI job points XDG_CACHE_HOME into the checkout."""
    wrapper = tree / "sglang/srt/models/wrapper_attr.py"
    broken = wrapper.read_bytes()
    # The attacker, with the secret it will ship, caches the fixed file and forges the entries.
    attacker = tmp_path / "attacker"
    assert run_cli("fix", "--apply", "sglang/srt/models", cwd=tree, env=_env(EAGLE3LINT_CACHE_DIR=str(attacker))).returncode in (0, 1)
    assert run_cli("check", "sglang/srt/models", cwd=tree, env=_env(EAGLE3LINT_CACHE_DIR=str(attacker))).returncode in (0, 1)
    wrapper.write_bytes(broken)
    assert _forge(tree / ".eagle3lint_cache", broken, "wrapper_attr.py") >= 2
    shipped = tree / ".cache" / "eagle3lint"
    shipped.mkdir(parents=True)
    shutil.copy(attacker / "cache-secret", shipped / "cache-secret")
    # The victim's run: the cache is not used, and says so once.
    victim = _env(XDG_CACHE_HOME=str(tree / ".cache"))
    done = run_cli("check", "sglang/srt/models", cwd=tree, env=victim)
    assert done.returncode == 1
    assert "`WrapperAttrForConditionalGeneration` does not delegate" in done.stdout
    assert done.stderr.count("this run does not use the cache") == 1, done.stderr
    assert "lies inside the project folder ." in done.stderr  # the tree's settings file's folder
    # Inside the engine tree, the PATH and the working directory elsewhere: named as such.
    inner = _env(XDG_CACHE_HOME=str(tree / "sglang" / ".cache"))
    done = run_cli("check", tree / "sglang/srt/models", cwd=tmp_path, env=inner)
    assert done.returncode == 1 and "lies inside the engine tree t/sglang:" in done.stderr, done.stderr


def test_special_files_in_the_cache_folder_are_never_written_through_or_waited_on(tree: Path, tmp_path: Path) -> None:
    import os

    from tests.robust_helpers import TIMEOUT_S, cli_env, run_bounded

    folder = tree / ".eagle3lint_cache"
    folder.mkdir()
    (folder / ".gitignore").symlink_to(tmp_path / "planted-gitignore")
    (folder / "CACHEDIR.TAG").symlink_to(tmp_path / "planted-tag")
    first = run_bounded("check", ".", cwd=tree)
    assert first.returncode == 1 and "Traceback" not in first.stderr
    assert not (tmp_path / "planted-gitignore").exists() and not (tmp_path / "planted-tag").exists()
    assert (folder / ".gitignore").is_symlink() and (folder / "CACHEDIR.TAG").is_symlink()
    # Named pipes for the tag and for every entry: opening or reading one would block forever.
    (folder / "CACHEDIR.TAG").unlink()
    os.mkfifo(folder / "CACHEDIR.TAG")
    entries = list(folder.glob("*/*.pickle"))
    assert entries
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    second = run_bounded("check", ".", cwd=tree)
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert len(json_findings := run_json("check", ".", cwd=tree)[1]["findings"]) == BASIC_FINDINGS, json_findings
    # A named pipe for the per-user secret: the run keys a namespace of its own instead.
    user = tmp_path / "user"
    user.mkdir()
    os.mkfifo(user / "cache-secret")
    third = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "check", "."],
        cwd=tree, env=cli_env(EAGLE3LINT_CACHE_DIR=str(user)), capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    assert third.returncode == 1 and "Traceback" not in third.stderr, third.stderr


@pytest.mark.parametrize("kind", ["symbolic link", "file"])
def test_a_cache_folder_that_is_not_a_real_folder_is_not_used(tree: Path, tmp_path: Path, kind: str) -> None:
    folder = tree / ".eagle3lint_cache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "file":
        folder.write_text("not a folder")
    else:
        folder.symlink_to(elsewhere)
    for _ in range(2):
        done = run_cli("fix", ".", cwd=tree)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.count("running without the cache") == 1, done.stderr
        assert f".eagle3lint_cache is a {kind}" in done.stderr
    assert list(elsewhere.iterdir()) == []
