"""The release cache: a release is downloaded once, said once, and never half-installed, also
when several callers (a test suite on several cores) ask for it together. The package index is
replaced by a wheel built here (``tests/test_release_history.py`` serves one over HTTP)."""

from __future__ import annotations

import json
import os
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from eagle3lint.fetch import pip_index, releases, remote_zip

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
    # (The index is asked whether it has the release before "fetching" is said: it has.)
    monkeypatch.setattr(releases, "_wheel_link", lambda name, version: None)
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


# Stands for ``python -m pip download``: says what it fetches and draws a "bar" on its stdout,
# as pip does, and leaves a wheel in --dest; its arguments are kept for the test.
FAKE_PIP = """\
import json, sys, zipfile
from pathlib import Path

args = sys.argv[1:]
Path(__file__).with_suffix(".args").write_text(json.dumps(args))
dest = Path(args[args.index("--dest") + 1])
dest.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(dest / "sglang-9.9.9-py3-none-any.whl", "w") as archive:
    archive.writestr("sglang/__init__.py", "")
if "--quiet" not in args:
    print("Downloading sglang-9.9.9-py3-none-any.whl (330.0 MB)")
    print("PROGRESS-BAR 330.0/330.0 MB", flush=True)
"""


@pytest.fixture()
def fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import sys

    script = tmp_path / "fakepython"
    script.write_text(f"#!{sys.executable}\n" + "import runpy, sys\nsys.argv = sys.argv[2:]\n"
                      f"runpy.run_path({str(tmp_path / 'pip.py')!r}, run_name='__main__')\n")
    script.chmod(0o755)
    (tmp_path / "pip.py").write_text(FAKE_PIP)
    monkeypatch.setattr(pip_index, "PIP", [str(script), "-m", "pip"])
    return tmp_path / "pip.args"


def test_a_download_on_a_terminal_shows_pips_progress_on_stderr(
    fake_pip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import io
    import pty

    master, replica = pty.openpty()
    terminal = io.TextIOWrapper(os.fdopen(replica, "wb", buffering=0), write_through=True)
    monkeypatch.setattr(pip_index.sys, "stderr", terminal)
    try:
        wheel = pip_index.download("sglang", "9.9.9", tmp_path / "wheel")
        os.set_blocking(master, False)
        shown = os.read(master, 1 << 16).decode()
    finally:
        terminal.close()
        os.close(master)
    assert wheel.name == "sglang-9.9.9-py3-none-any.whl"
    args = json.loads(fake_pip.read_text())
    assert "--quiet" not in args and args[args.index("--progress-bar") + 1] == "on"
    assert "Downloading sglang-9.9.9" in shown and "PROGRESS-BAR 330.0/330.0 MB" in shown
    assert capfd.readouterr().out == ""  # stdout is the report's: nothing of pip's reaches it


def test_a_download_elsewhere_stays_quiet(fake_pip: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    wheel = pip_index.download("sglang", "9.9.9", tmp_path / "wheel")
    assert wheel.is_file()
    assert "--quiet" in json.loads(fake_pip.read_text())
    assert capfd.readouterr() == ("", "")


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
