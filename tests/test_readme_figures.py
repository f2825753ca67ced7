"""The README's release table is today's analysis: ``bench/readme_figures.py`` regenerates it, and
this test fails when the analysis has moved and the table was not regenerated."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.release

REPO = Path(__file__).resolve().parent.parent


def _figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_figures", REPO / "bench" / "readme_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
