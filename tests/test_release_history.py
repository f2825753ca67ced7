"""``models --release RANGE`` end to end against a package index served here: pip lists the
releases and names each wheel, the range reader fetches only the Python files, and each release
is analysed into one matrix. Bad input: a range matching nothing, a release with no wheel, a
network failure and a damaged wheel part-way through, a server that ignores ``Range``."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_index import FakeIndex, pip_env, running, tree_files, wheel
from tests.helpers import FIXTURES, REPO, run_cli

BASIC = FIXTURES / "sglang_basic" / "sglang"
WRAPPER = "sglang/srt/models/wrapper_attr.py"
DELEGATION = (
    "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
    "        self.language_model.set_eagle3_layers_to_capture(layer_ids)\n\n"
    "    def get_embed_and_head(self):\n"
    "        return self.language_model.get_embed_and_head()\n\n"
)


def _release(version: str, change: str = "") -> bytes:
    """The basic fixture as release ``version`` of sglang; ``change``: "without" leaves the
    wrapper's file out, "fixed" gives the wrapper the delegation it lacks."""
    files = tree_files(BASIC)
    files["sglang/_version.py"] = f'__version__ = "{version}"\n'
    if change == "without":
        del files[WRAPPER]
    elif change == "fixed":
        text = files[WRAPPER]
        assert isinstance(text, bytes)
        head, tail = text.decode().split("    def forward(self, input_ids):\n        return self.language_model(input_ids)\n", 1)
        files[WRAPPER] = (head + DELEGATION + "    def forward(self, input_ids):\n        return self.language_model(input_ids)\n" + tail).encode()
    return wheel("sglang", version, files, blob=1 << 20)


@pytest.fixture(scope="module")
def releases() -> dict[str, bytes]:
    return {
        "9.0.0": _release("9.0.0", "without"),
        "9.1.0": _release("9.1.0"),
        "9.1.1": _release("9.1.1"),  # yanked
        "9.2.0": _release("9.2.0", "fixed"),
        "9.4.0rc1": _release("9.4.0rc1", "fixed"),
    }


@pytest.fixture()
def index(releases: dict[str, bytes]) -> Iterator[FakeIndex]:
    fake = FakeIndex()
    for version, data in releases.items():
        fake.add(f"sglang-{version}-py3-none-any.whl", data, yanked="a bad build" if version == "9.1.1" else None)
    fake.add("sglang-9.3.0.tar.gz", b"not read")  # published as a source distribution only
    with running(fake) as served:
        yield served


def _models(index: FakeIndex, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = pip_env(index, {**os.environ, "PYTHONPATH": str(REPO)})
    env["EAGLE3LINT_CACHE_DIR"] = str(tmp_path / "user-cache")
    done = run_cli("models", *args, cwd=tmp_path, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _history(index: FakeIndex, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = _models(index, tmp_path, *args, "--format", "json")
    return code, json.loads(out), err


def _row(data: dict[str, Any], name: str) -> dict[str, Any]:
    (row,) = [m for m in data["models"] if m["class"] == name]
    return row


def _cached(tmp_path: Path) -> list[str]:
    folder = tmp_path / "user-cache" / "releases"
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.is_dir() else []


def test_a_range_is_one_matrix_fetched_by_ranges(index: FakeIndex, tmp_path: Path) -> None:
    code, data, err = _history(index, tmp_path, "--release", "sglang>=9.0,<9.3")
    assert code == 0, err
    # The yanked 9.1.1 and the pre-release are left out.
    assert data["kind"] == "history" and data["releases"] == ["9.0.0", "9.1.0", "9.2.0"]
    wrapper = _row(data, "WrapperAttrForConditionalGeneration")
    assert wrapper["history"] == {
        "9.0.0": None,
        "9.1.0": {"status": "broken", "outcome": "crash", "codes": ["E3L004"]},
        "9.2.0": {"status": "supported", "outcome": "works", "codes": []},
    }
    assert (wrapper["first_supported"], wrapper["supported_since"]) == ("9.2.0", "9.2.0")
    assert wrapper["last_broken"] == {"release": "9.1.0", "codes": ["E3L004"]}
    assert [(c["release"], c["from"] and c["from"]["status"], c["to"]["status"]) for c in wrapper["changes"]] == [
        ("9.1.0", None, "broken"),
        ("9.2.0", "broken", "supported"),
    ]
    # A model the same in every release has no change.
    missing = _row(data, "MissingForCausalLM")
    assert {c["status"] for c in missing["history"].values()} == {"broken"} and missing["changes"] == []
    # Each wheel was read with range requests, and much less than all of it.
    for version in data["releases"]:
        name = f"sglang-{version}-py3-none-any.whl"
        assert {r.status for r in index.file_requests(name)} == {206}
        assert index.sent_for(name) < len(index.files[name].data) / 2
    assert _cached(tmp_path) == ["sglang-9.0.0", "sglang-9.1.0", "sglang-9.2.0"]


def test_the_table_collapses_what_did_not_change_and_fits_the_terminal(index: FakeIndex, tmp_path: Path) -> None:
    code, out, _ = _models(index, tmp_path, "--release", "sglang==9.1.0,9.1.1,9.2.0")
    assert code == 0
    lines = out.splitlines()
    # 9.1.1 (yanked, but named) shows what 9.1.0 does: one column for both.
    assert lines[0].split()[:4] == ["class", "9.1.0", "9.2.0", "first"]
    assert lines[1].split() == ["..9.1.1"]
    row = next(line for line in lines if line.startswith("WrapperAttrForConditionalGeneration"))
    assert row.split() == ["WrapperAttrForConditionalGeneration", "crash", "ok", "9.2.0", "9.1.1", "E3L004"]
    assert max(len(line) for line in lines) <= 100
    markdown = _models(index, tmp_path, "--release", "sglang==9.1.0,9.1.1,9.2.0", "--format", "markdown")[1]
    assert "| Class | Architectures | 9.1.0 to 9.1.1 | 9.2.0 | First supported | Last broken |" in markdown
    assert "| `WrapperAttrForConditionalGeneration` | WrapperAttrForConditionalGeneration | broken (crash) | supported | 9.2.0 | 9.1.1 (E3L004) |" in markdown


def test_first_ok_says_at_most_where_the_range_starts_after_the_first_release(index: FakeIndex, tmp_path: Path) -> None:
    """Issue 27, item 4: a class supported in the first release of a range that starts after the
    index's first release may have been supported before it: "≤ 9.1.0"."""
    code, data, err = _history(index, tmp_path, "--release", "sglang>=9.1,<9.3")
    assert code == 0, err
    llama = _row(data, "FixLlamaForCausalLM")
    assert (llama["first_supported"], llama["first_supported_or_earlier"]) == ("9.1.0", True)
    wrapper = _row(data, "WrapperAttrForConditionalGeneration")  # broken in 9.1.0: 9.2.0 is its first
    assert (wrapper["first_supported"], wrapper["first_supported_or_earlier"]) == ("9.2.0", False)
    code, out, _ = _models(index, tmp_path, "--release", "sglang>=9.1,<9.3")
    row = next(line for line in out.splitlines() if line.startswith("FixLlamaForCausalLM "))
    assert "≤ 9.1.0" in row
    # From the first release published, the first one analysed is the first there is.
    code, data, err = _history(index, tmp_path, "--release", "sglang>=9.0,<9.3")
    assert code == 0, err
    llama = _row(data, "FixLlamaForCausalLM")
    assert (llama["first_supported"], llama["first_supported_or_earlier"]) == ("9.0.0", False)


def test_model_narrows_and_pre_includes_pre_releases(index: FakeIndex, tmp_path: Path) -> None:
    code, data, _ = _history(index, tmp_path, "--release", "sglang>=9.1", "--pre", "--model", "wrapperattr*", "--model", "PlainForCausalLM")
    assert code == 0
    # 9.3.0 has no wheel: said, and left out of a range (it was not named).
    assert data["releases"] == ["9.1.0", "9.2.0", "9.4.0rc1"]
    assert [s["release"] for s in data["skipped"]] == ["9.3.0"] and "source distribution" in data["skipped"][0]["problem"]
    assert sorted(m["class"] for m in data["models"]) == ["PlainForCausalLM", "WrapperAttrForConditionalGeneration"]
    code, _, err = _models(index, tmp_path, "--release", "sglang>=9.1", "--model", "NoSuchForCausalLM")
    assert code == 2 and "--model 'NoSuchForCausalLM': no model class or architecture of that name in sglang 9.1.0 to 9.2.0" in err


def test_a_range_that_matches_nothing_is_a_usage_error(index: FakeIndex, tmp_path: Path) -> None:
    code, out, err = _models(index, tmp_path, "--release", "sglang>=10")
    assert code == 2 and out == ""
    assert "no published sglang release matches (the latest published is sglang 9.3.0)" in err
    assert "pre-releases are left out unless --pre asks for them" in err
    code, _, err = _models(index, tmp_path, "--release", "sglang>>9")
    assert code == 2 and "not a release, a list or a PEP 440 range" in err


def test_a_release_without_a_wheel_is_named(index: FakeIndex, tmp_path: Path) -> None:
    code, data, err = _history(index, tmp_path, "--release", "sglang==9.2.0,9.3.0")
    assert code == 2 and data["releases"] == ["9.2.0"]
    assert "sglang 9.3.0 is published only as a source distribution, no wheel" in err
    env = pip_env(index, {**os.environ, "PYTHONPATH": str(REPO), "EAGLE3LINT_CACHE_DIR": str(tmp_path / "c")})
    done = run_cli("check", "--release", "sglang==9.3.0", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "only as a source distribution" in done.stderr and "Traceback" not in done.stderr
    assert "fetching" not in done.stderr, done.stderr
    # A release that does not exist at all is said so too.
    done = run_cli("check", "--release", "sglang==9.9.9", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "sglang==9.9.9: no such release on the package index; the latest is 9.3.0" in done.stderr
    # The index is asked first: nothing says "fetching" a release it does not have.
    assert "fetching" not in done.stderr, done.stderr


@pytest.mark.parametrize("failure", ["drop", "error"])
def test_a_network_failure_part_way_shows_what_was_fetched(index: FakeIndex, tmp_path: Path, failure: str) -> None:
    index.failing["sglang-9.2.0-py3-none-any.whl"] = failure
    code, data, err = _history(index, tmp_path, "--release", "sglang>=9.0,<9.3")
    assert code == 2
    assert data["releases"] == ["9.0.0", "9.1.0"] and data["not_reached"] == ["9.2.0"]
    assert "127.0.0.1" in data["failure"] and "fetching sglang==9.2.0 failed" in data["failure"]
    assert "stopped after 2 of 3 releases: fetching sglang==9.2.0 failed" in err
    code, table, _ = _models(index, tmp_path, "--release", "sglang>=9.0,<9.3")
    assert code == 2 and table.splitlines()[0].split()[:3] == ["class", "9.0.0", "9.1.0"]
    assert "not analysed: 9.2.0" in table
    assert _cached(tmp_path) == ["sglang-9.0.0", "sglang-9.1.0"]


def _damage(data: bytes, how: str) -> bytes:
    if how == "truncated":
        return data[: len(data) * 2 // 3]
    damaged = bytearray(data)
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("sglang/srt/models/stub.py")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 4
    damaged[start : start + 6] = bytes(b ^ 0x5A for b in damaged[start : start + 6])
    return bytes(damaged)


@pytest.mark.parametrize("how", ["truncated", "member"])
def test_a_damaged_wheel_is_named_and_never_half_unpacked(index: FakeIndex, tmp_path: Path, how: str) -> None:
    name = "sglang-9.2.0-py3-none-any.whl"
    index.add(name, _damage(index.files[name].data, how))
    code, data, err = _history(index, tmp_path, "--release", "sglang>=9.1,<9.3")
    assert code == 2 and data["releases"] == ["9.1.0"]
    assert "sglang==9.2.0: the wheel is damaged" in data["failure"] and "sglang==9.2.0: the wheel is damaged" in err
    assert ("not a valid zip" if how == "truncated" else "'sglang/srt/models/stub.py' is damaged") in data["failure"]
    # Nothing of 9.2.0 is in the cache, not even a staging folder.
    assert _cached(tmp_path) == ["sglang-9.1.0"]


def test_a_server_without_range_support_gives_the_same_matrix(index: FakeIndex, tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    _, ranged, _ = _history(index, tmp_path / "a", "--release", "sglang>=9.0,<9.3")
    index.ranges = False
    index.requests.clear()
    code, whole, _ = _history(index, tmp_path / "b", "--release", "sglang>=9.0,<9.3")
    assert code == 0 and whole["models"] == ranged["models"]
    for version in whole["releases"]:
        name = f"sglang-{version}-py3-none-any.whl"
        assert [r.status for r in index.file_requests(name)] == [200]
