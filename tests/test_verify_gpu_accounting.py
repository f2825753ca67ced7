"""GPU choice and GPU-memory release as verify observes them, on a CPU machine.

A scripted nvidia-smi (tests/fakes/fake_nvidia_smi.py, a test double) reports memory that the fake
engine "holds" while it lives. The same checks against real GPU memory are in test_verify_gpu.py.
"""

from __future__ import annotations

import os
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.run import verify_run
from eagle3lint.run.verify_report import write_human
from eagle3lint.run.verify_run import run_verify
from eagle3lint.verify import gpus as verify_gpus
from eagle3lint.verify import teardown as verify_teardown
from eagle3lint.verify.launch import LaunchedServer, launch
from tests.fakes.clock import LeapingClock
from tests.fakes.harness import alive, events, fake_pids, make_options

FAKE_SMI = Path(__file__).resolve().parent / "fakes" / "fake_nvidia_smi.py"


@pytest.fixture
def scripted_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three GPUs; GPU 0 is nearly full, GPU 1 nearly empty. Returns the ledger path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_SMI}" "$@"\n')
    smi.chmod(0o755)
    ledger = tmp_path / "gpu-ledger.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU_COUNT", "3")
    monkeypatch.setenv("FAKE_GPU_BASE_MIB", "70000,100,20000")
    monkeypatch.setenv("FAKE_GPU_LEDGER", str(ledger))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return ledger


@pytest.mark.parametrize("flags", [(), ("--fake-ignore-sigterm",)], ids=["sigterm", "sigkill"])
def test_memory_held_on_the_chosen_gpu_is_released_at_teardown(
    tmp_path: Path, scripted_gpus: Path, flags: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grace period passes once the fake has ignored the SIGTERM, however loaded the machine.
    LeapingClock(lambda: bool(events(tmp_path, "sigterm-ignored"))).install(monkeypatch, verify_teardown)
    options = make_options(tmp_path, "sglang", "--fake-gpu-mib", "2048", "--fake-gpu-ledger", str(scripted_gpus), *flags,
                           baseline=False)
    report = run_verify(options)
    assert report.launches[0].gpus == [1]  # most free memory
    assert events(tmp_path, "started")[0]["cuda_visible_devices"] == "1"
    td = report.teardowns[0]
    assert td.gpu_used_before == {1: 100}
    assert td.gpu_used_during == {1: 2148}
    assert td.gpu_used_after == {1: 100}
    assert td.gpu_released is True and td.clean
    assert td.ended_by == ("SIGKILL" if flags else "SIGTERM")
    assert alive(fake_pids(tmp_path)) == []


def test_tp_two_takes_the_two_emptiest_gpus(tmp_path: Path, scripted_gpus: Path) -> None:
    report = run_verify(make_options(tmp_path, "sglang", tp=2, baseline=False))
    assert report.launches[0].gpus == [1, 2]
    assert events(tmp_path, "started")[0]["cuda_visible_devices"] == "1,2"


def test_memory_that_stays_held_is_reported(tmp_path: Path, scripted_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The wait for the memory to come back runs out at its second look (the first saw it held).
    memory_wait = LeapingClock(lambda: True).install(monkeypatch, verify_gpus)
    options = make_options(tmp_path, "sglang", baseline=False)

    def launch_and_grab(*args: Any, **kwargs: Any) -> LaunchedServer:
        # Something outside the run (here: the test process itself) takes memory on GPU 1.
        server = launch(*args, **kwargs)
        with scripted_gpus.open("a") as handle:
            handle.write(f"{os.getpid()} 1 4096\n")
        return server

    monkeypatch.setattr(verify_run, "launch", launch_and_grab)
    report = run_verify(options)
    assert memory_wait.leapt
    td = report.teardowns[0]
    assert td.gpu_released is False and not td.clean
    assert td.gpu_used_after == {1: 4196}
    assert any("GPU memory" in note for note in report.notes)
    out = StringIO()
    write_human(report, out)
    assert "GPU MEMORY STILL HELD (GPU 1: 100 -> 4196 -> 4196 MiB)" in out.getvalue()
