"""verify on a real GPU: the fake engine holds real GPU memory (torch), verify must see it released.

Run on a machine with a CUDA GPU and torch (neither SGLang nor vLLM is needed): `pytest -m gpu`.
Elsewhere these tests skip, saying why.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.run.verify_run import run_verify
from eagle3lint.verify.gpus import (
    RELEASE_TOLERANCE_MIB,
    GpuInfo,
    choose_gpus,
    gpu_inventory,
    visible,
)
from tests.fakes.harness import alive, events, fake_pids, make_options, marked_alive


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _cuda_available(), reason="needs torch with a CUDA GPU (run `pytest -m gpu` on a GPU machine)"),
]

HELD_MIB = 2048


@pytest.fixture
def inventory() -> list[GpuInfo]:
    found = gpu_inventory()
    assert found, "a GPU machine without nvidia-smi or NVML: verify cannot observe GPU memory there"
    return found


@pytest.fixture(autouse=True)
def nothing_left_running(tmp_path: Path) -> Iterator[None]:
    yield
    assert marked_alive(tmp_path) == []


def visible_indices(inventory: list[GpuInfo]) -> list[int]:
    """Physical indices of the GPUs this process may use (CUDA_VISIBLE_DEVICES respected)."""
    return [g.index for g in visible(inventory, os.environ.get("CUDA_VISIBLE_DEVICES"))]


@pytest.mark.parametrize("flags", [(), ("--fake-ignore-sigterm",)], ids=["sigterm", "sigkill"])
def test_gpu_memory_held_by_the_server_is_seen_released_at_teardown(tmp_path: Path, inventory: list[GpuInfo], flags: tuple[str, ...]) -> None:
    options = make_options(tmp_path, "sglang", "--fake-gpu-mib", str(HELD_MIB), *flags, baseline=False, teardown_grace_s=2.0, teardown_timeout_s=60.0)
    report = run_verify(options)
    assert report.verdict.status == "good", report.verdict
    assert events(tmp_path, "gpu"), "the fake server did not allocate GPU memory"
    chosen = report.launches[0].gpus
    assert chosen is not None and len(chosen) == 1
    gpu = chosen[0]
    td = report.teardowns[0]
    assert td.gpu_used_before is not None and td.gpu_used_during is not None and td.gpu_used_after is not None
    # The allocation shows on the GPU verify chose (CUDA and nvidia-smi number GPUs alike)...
    assert td.gpu_used_during[gpu] - td.gpu_used_before[gpu] >= HELD_MIB
    # ...and is gone after teardown.
    assert td.gpu_released is True
    assert td.gpu_used_after[gpu] <= td.gpu_used_before[gpu] + RELEASE_TOLERANCE_MIB
    assert td.ended_by == ("SIGKILL" if flags else "SIGTERM")
    assert alive(fake_pids(tmp_path)) == []


def test_gpus_option_picks_the_gpu_the_server_runs_on(tmp_path: Path, inventory: list[GpuInfo]) -> None:
    last = visible_indices(inventory)[-1]
    options = make_options(tmp_path, "sglang", "--fake-gpu-mib", "1024", gpus=[last], baseline=False, teardown_timeout_s=60.0)
    report = run_verify(options)
    assert events(tmp_path, "started")[0]["cuda_visible_devices"] == str(last)
    td = report.teardowns[0]
    assert td.gpu_used_during is not None and td.gpu_used_before is not None
    assert td.gpu_used_during[last] - td.gpu_used_before[last] >= 1024
    assert td.gpu_released is True


def test_the_gpu_with_most_free_memory_is_chosen(inventory: list[GpuInfo]) -> None:
    indices = visible_indices(inventory)
    if len(indices) == 1:
        assert choose_gpus(1, None, inventory, os.environ.get("CUDA_VISIBLE_DEVICES")) == indices
        return
    # Fill the first visible GPU from another process; the choice must avoid it.
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(indices[0]), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    code = "import torch, sys, time; x = torch.ones(8 * 2**30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize(); print('held', flush=True); time.sleep(120)"
    holder = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        time.sleep(0.5)
        chosen = choose_gpus(1, None, gpu_inventory(), os.environ.get("CUDA_VISIBLE_DEVICES"))
        assert chosen is not None and chosen[0] != indices[0]
    finally:
        holder.kill()
        holder.wait()


def test_a_tp_larger_than_the_visible_gpus_is_refused(tmp_path: Path, inventory: list[GpuInfo]) -> None:
    count = len(visible_indices(inventory))
    with pytest.raises(UsageError, match=f"--tp {count + 1} is more than the {count} GPU"):
        run_verify(make_options(tmp_path, "sglang", tp=count + 1))
    assert events(tmp_path, "started") == []
