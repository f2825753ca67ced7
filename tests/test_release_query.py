"""``--release`` values read as pip reads them (PEP 440), and the index's listing read from pip."""

from __future__ import annotations

import io

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.fetch import pip_index
from eagle3lint.fetch.release_query import parse_query, parse_release_spec, select
from eagle3lint.fetch.releases import _Progress
from eagle3lint.fetch.remote_zip import Transfer

PUBLISHED = ["0.5.10", "0.5.9", "0.5.8.post1", "0.5.8", "0.5.7", "0.4.10"]


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ("sglang==0.5.9", ["0.5.9"]),
        ("sglang==0.5.10,0.5.8", ["0.5.8", "0.5.10"]),
        ("sglang>=0.5.8,<=0.5.10", ["0.5.8", "0.5.8.post1", "0.5.9", "0.5.10"]),
        ("sglang~=0.5.8", ["0.5.8", "0.5.8.post1", "0.5.9", "0.5.10"]),
        ("sglang==0.5.*", ["0.5.7", "0.5.8", "0.5.8.post1", "0.5.9", "0.5.10"]),
        ("SGLang < 0.5", ["0.4.10"]),
        ("sglang>=0.5.9,!=0.5.10", ["0.5.9"]),
    ],
)
def test_releases_a_query_selects(text: str, chosen: list[str]) -> None:
    assert select([parse_query(text)], PUBLISHED, prereleases=False) == chosen


def test_pre_releases_only_when_asked_or_named() -> None:
    published = ["0.6.0rc1", *PUBLISHED]
    assert select([parse_query("sglang>=0.5.10")], published, prereleases=False) == ["0.5.10"]
    assert select([parse_query("sglang>=0.5.10")], published, prereleases=True) == ["0.5.10", "0.6.0rc1"]
    # A range that names a pre-release asks for them (PEP 440).
    assert select([parse_query("sglang>=0.6.0rc1")], published, prereleases=False) == ["0.6.0rc1"]


def test_several_queries_add_up_and_a_single_release_is_told_apart() -> None:
    queries = [parse_query("sglang==0.4.10"), parse_query("sglang>0.5.9")]
    assert select(queries, PUBLISHED, prereleases=False) == ["0.4.10", "0.5.10"]
    assert parse_query("sglang==0.5.9").single == "0.5.9"
    assert parse_query("sglang == 0.5.09").single == "0.5.9"
    assert parse_query("sglang>=0.5").single is None and parse_query("sglang==0.5.8,0.5.9").single is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("sglang", "expected NAME==VERSION, a list or a range"),
        ("sglang-0.5.9", "expected NAME==VERSION, a list or a range"),
        ("tensorrt==1.0", "unknown engine 'tensorrt'"),
        ("sglang>>0.5", "not a release, a list or a PEP 440 range"),
        ("sglang==0.5.8,banana", "not a release, a list or a PEP 440 range"),
        ("", "expected NAME==VERSION"),
    ],
)
def test_bad_queries_are_usage_errors(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem.replace("?", r"\?")):
        parse_query(text)


def test_a_command_of_one_release_refuses_a_range() -> None:
    with pytest.raises(UsageError, match="`eagle3lint models` lays several side by side"):
        parse_release_spec("sglang>=0.5.2")
    assert parse_release_spec("vllm==0.11.0") == ("vllm", "0.11.0")


# pip 23's `index versions -vv`, shortened: every file the finder saw, and its list.
PIP_OUTPUT = """\
Looking in indexes: https://mirror.example/simple
  Found link https://files.example/p/sglang-0.5.9-py3-none-any.whl#sha256=%s (from https://mirror.example/simple/sglang/) (requires-python:>=3.10), version: 0.5.9
  Found link https://files.example/p/sglang-0.5.9.tar.gz (from https://mirror.example/simple/sglang/) (requires-python:>=3.10), version: 0.5.9
  Found link https://files.example/p/sglang-0.1.3.tar.gz (from https://mirror.example/simple/sglang/), version: 0.1.3
  Skipping link: none of the wheel's tags (cp38-abi3-manylinux2014_aarch64) are compatible (run pip debug --verbose to show compatible tags): https://files.example/p/sglang-0.5.8-cp38-abi3-manylinux2014_aarch64.whl (from https://mirror.example/simple/sglang/) (requires-python:>=3.9)
  Skipping link: yanked for reason: A bug: in TP: https://files.example/p/sglang-0.5.7-py3-none-any.whl (from https://mirror.example/simple/sglang/)
  Found link https://user:****@private.example/p/sglang-0.5.6-py3-none-any.whl (from https://private.example/simple/sglang/), version: 0.5.6
  Found link file:///srv/wheels/sglang-0.5.5-py3-none-any.whl, version: 0.5.5
sglang (0.5.9)
Available versions: 0.5.9, 0.5.8, 0.5.6, 0.5.5, 0.1.3
""" % ("ab" * 32)


def test_the_listing_is_read_from_pips_own_words() -> None:
    found = pip_index.parse_listing("sglang", PIP_OUTPUT)
    assert found.versions == ["0.5.9", "0.5.8", "0.5.6", "0.5.5", "0.1.3"]
    wheel = found.wheel_for("0.5.9", allow_yanked=False)
    assert wheel is not None and wheel.compatible and wheel.sha256 == "ab" * 32
    assert wheel.url == "https://files.example/p/sglang-0.5.9-py3-none-any.whl"
    # Another platform's wheel holds the same source: it serves.
    other = found.wheel_for("0.5.8", allow_yanked=False)
    assert other is not None and not other.compatible
    # A yanked release only when named exactly.
    assert found.wheel_for("0.5.7", allow_yanked=False) is None
    yanked = found.wheel_for("0.5.7", allow_yanked=True)
    assert yanked is not None and yanked.yanked == "A bug: in TP" and found.yanked == {"0.5.7": "A bug: in TP"}
    # Credentials pip hides are pip's to use: the link is not readable directly.
    private = found.wheel_for("0.5.6", allow_yanked=False)
    assert private is not None and not private.readable
    local = found.wheel_for("0.5.5", allow_yanked=False)
    assert local is not None and local.url == "file:///srv/wheels/sglang-0.5.5-py3-none-any.whl"
    assert found.wheel_for("0.1.3", allow_yanked=True) is None and "0.1.3" in found.sources


def test_progress_is_shown_on_a_terminal_only() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()
    progress = _Progress("vllm==0.11.0", shown)
    progress(1_500_000, 3_400_000)
    progress.finish(Transfer(received=3_400_000, requests=9, size=438_217_982))
    assert "vllm==0.11.0: 1.5 MB of 3.4 MB" in shown.getvalue()
    assert shown.getvalue().endswith("vllm==0.11.0: 3.4 MB of a 438.2 MB wheel, 9 requests\n")
    plain = io.StringIO()
    quiet = _Progress("vllm==0.11.0", plain)
    quiet(1, 2)
    quiet.finish(Transfer(received=1, size=2))
    assert plain.getvalue() == ""
