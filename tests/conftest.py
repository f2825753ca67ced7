from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# Tests run against the checkout, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The releases the tests download go to a cache folder of their own (EAGLE3LINT_TESTS_CACHE_DIR,
# default ~/.cache/eagle3lint-tests/cache): the user's cache keeps its releases and its bound.
# The release tests use more releases than the default bound keeps; with it every run would
# evict some and download them again: the tests' folder keeps 24.
os.environ["EAGLE3LINT_CACHE_DIR"] = os.environ.get("EAGLE3LINT_TESTS_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eagle3lint-tests" / "cache"
)
os.environ.setdefault("EAGLE3LINT_MAX_RELEASES", "24")

from tests import downloads, helpers

if TYPE_CHECKING:
    from tests.engine_helpers import SGLangEngines


def _keep_bytecode() -> None:
    """The CLI runs in hundreds of subprocesses: under PYTHONDONTWRITEBYTECODE each compiled the
    package again (a fifth of its start-up). Bytecode goes to a folder of the user's cache
    instead, never into the checkout, as an installed eagle3lint has it."""
    if not sys.flags.dont_write_bytecode or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = str(base / "eagle3lint-tests" / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix  # the subprocesses, xdist workers included
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


_keep_bytecode()


def pytest_configure(config: pytest.Config) -> None:
    downloads.configure(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU tests run only where a -m expression names them (``-m gpu``): a plain run and the
    quick loop (``-m "not release"``) leave them out rather than skip them."""
    if "gpu" in (config.option.markexpr or ""):
        return
    kept = [item for item in items if item.get_closest_marker("gpu") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("gpu") is not None])
        items[:] = kept


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture of the test runs (a module fixture may fetch a release).
    helpers.allow_releases(item.get_closest_marker("release") is not None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    lines = downloads.take()
    if lines:
        outcome.get_result().user_properties.extend((downloads.PROPERTY, line) for line in lines)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # In the controlling process: the downloads an xdist worker made, one line each.
    config = downloads._config
    if config is None or downloads.is_worker(config):
        return
    for name, value in report.user_properties:
        if name == downloads.PROPERTY:
            downloads.write(config, str(value))


@pytest.fixture(scope="module")
def sglang_engines(tmp_path_factory: pytest.TempPathFactory) -> SGLangEngines:
    """The SGLang engine-run modules' releases and runs, made once per module (a module per
    release: tests/test_sglang_engine_runs*.py)."""
    from tests.engine_helpers import SGLangEngines

    return SGLangEngines(tmp_path_factory.mktemp("sglang-engine-runs"))
