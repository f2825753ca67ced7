"""The release cache: a release is downloaded once, said once, and never half-installed, also
when several callers (a test suite on several cores) ask for it together. The package index is
replaced by a wheel built here (``tests/test_release_history.py`` serves one over HTTP)."""

from __future__ import annotations

import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from eagle3lint import releases, remote_zip

SPEC = "sglang==9.9.9"


@dataclass
class FakeIndex:
    asked: list[str] = field(default_factory=list)
    go: threading.Event = field(default_factory=threading.Event)  # lets the downloads finish


def _fake_wheel(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sglang/__init__.py", "")
        archive.writestr("sglang/version.py", '__version__ = "9.9.9"\n')
        archive.writestr("sglang/srt/models/llama.py", "class LlamaForCausalLM:\n    pass\n")
    return wheel


@pytest.fixture()
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeIndex:
    """The fake package index, serving a private release cache."""
    monkeypatch.setenv("EAGLE3LINT_CACHE_DIR", str(tmp_path / "cache"))
    fake = FakeIndex()

    def download(name: str, version: str, wanted: Callable[[str], bool], staging: Path, progress: object = None) -> remote_zip.Transfer:
        fake.asked.append(f"{name}=={version}")
        fake.go.wait(timeout=120)
        # A download takes a while: the other callers arrive meanwhile (without the lock, each
        # would download too). Nothing depends on how long this is.
        time.sleep(0.2)
        wheel = _fake_wheel(staging.parent / "wheel")
        _, transfer = remote_zip.read_members(wheel.as_uri(), wanted, staging, staging.parent, "fake")
        return transfer

    monkeypatch.setattr(releases, "read_wheel_files", download)
    return fake


def test_a_release_is_downloaded_and_announced_once(index: FakeIndex) -> None:
    said: list[str] = []
    index.go.set()
    first = releases.fetch_release(SPEC, announce=said.append)
    again = releases.fetch_release(SPEC, announce=said.append)
    assert first == again and (again / "srt/models/llama.py").is_file()
    assert index.asked == [SPEC]
    assert len(said) == 1 and f"fetching {SPEC}" in said[0]


def test_callers_at_once_share_one_download(index: FakeIndex) -> None:
    said: list[str] = []
    roots: list[Path] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            roots.append(releases.fetch_release(SPEC, announce=said.append))
        except BaseException as exc:  # shown by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    index.go.set()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and len(roots) == 4 and len(set(roots)) == 1
    assert index.asked == [SPEC] and len(said) == 1
    assert (roots[0] / "version.py").read_text() == '__version__ = "9.9.9"\n'
    cache = roots[0].parent.parent
    assert [p.name for p in cache.iterdir() if p.name.startswith(".download-")] == []


def test_a_failed_fetch_leaves_nothing_in_the_cache(index: FakeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    def half(name: str, version: str, wanted: Callable[[str], bool], staging: Path, progress: object = None) -> remote_zip.Transfer:
        (staging / "sglang").mkdir(parents=True)
        (staging / "sglang/__init__.py").write_text("")
        raise releases.ReleaseFetchError(f"{name}=={version}: the wheel is damaged: 'sglang/x.py' is damaged")

    monkeypatch.setattr(releases, "read_wheel_files", half)
    with pytest.raises(releases.ReleaseFetchError, match="damaged"):
        releases.fetch_release(SPEC)
    cache = releases.cache_root() / "releases"
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_the_cache_keeps_the_releases_a_history_still_needs(index: FakeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    index.go.set()
    monkeypatch.setenv("EAGLE3LINT_MAX_RELEASES", "2")
    cache = releases.cache_root() / "releases"

    def kept() -> list[str]:
        return sorted(p.name for p in cache.iterdir() if (p / releases._COMPLETE).exists())

    for version in ("9.9.1", "9.9.2", "9.9.3"):
        releases.fetch_release(f"sglang=={version}", keep=3)
    assert kept() == ["sglang-9.9.1", "sglang-9.9.2", "sglang-9.9.3"]
    releases.fetch_release("sglang==9.9.4")
    # Outside a history, the least recently used go down to the bound.
    assert kept() == ["sglang-9.9.3", "sglang-9.9.4"]
