"""The README's release table is today's analysis: ``bench/readme_figures.py`` regenerates it, and
this test fails when the analysis has moved and the table was not regenerated."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import load_bench_script

pytestmark = pytest.mark.release

REPO = Path(__file__).resolve().parent.parent


def _figures() -> ModuleType:
    return load_bench_script("readme_figures")


def _readme_row(name: str) -> str:
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"| {name} |"):
            return line
    raise AssertionError(f"the README's release table has no row for {name}")


@pytest.mark.parametrize("release", _figures().RELEASES)
def test_the_readme_row_is_what_the_analysis_says_today(release: str) -> None:
    figures = _figures()
    row = figures.row(release)
    name = row.split("|")[1].strip()
    assert _readme_row(name) == row, "regenerate the README's table: python bench/readme_figures.py"
