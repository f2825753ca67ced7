"""Which GPUs exist, which to use, and how much memory each holds: nvidia-smi, else NVML, else none.

Nothing here creates a CUDA context in this process (that would itself hold GPU memory).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from eagle3lint.common.errors import UsageError

# A freed GPU can keep a few MiB of driver bookkeeping; anything above this is memory still held.
RELEASE_TOLERANCE_MIB = 256


@dataclass(frozen=True)
class GpuInfo:
    index: int
    uuid: str
    used_mib: int
    total_mib: int

    @property
    def free_mib(self) -> int:
        return self.total_mib - self.used_mib


def _from_nvidia_smi() -> list[GpuInfo] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "--query-gpu=index,uuid,memory.used,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    gpus = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            gpus.append(GpuInfo(int(parts[0]), parts[1], int(float(parts[2])), int(float(parts[3]))))
        except ValueError:
            continue
    return gpus


def _from_nvml() -> list[GpuInfo] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            gpus = []
            for i in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
                uuid = pynvml.nvmlDeviceGetUUID(handle)
                uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
                gpus.append(GpuInfo(i, uuid, memory.used // 2**20, memory.total // 2**20))
            return gpus
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # any NVML failure means "unknown", never a crash of verify
        return None


def gpu_inventory() -> list[GpuInfo] | None:
    """Every physical GPU with its memory, or None when neither nvidia-smi nor NVML answers."""
    return _from_nvidia_smi() or _from_nvml()


def visible(inventory: list[GpuInfo], cuda_visible_devices: str | None) -> list[GpuInfo]:
    """The GPUs CUDA_VISIBLE_DEVICES leaves visible (indices or UUIDs), in its order."""
    if cuda_visible_devices is None:
        return list(inventory)
    out: list[GpuInfo] = []
    for token in (t.strip() for t in cuda_visible_devices.split(",")):
        if not token:
            continue
        for gpu in inventory:
            if token == str(gpu.index) or (token.startswith("GPU-") and gpu.uuid.startswith(token)):
                out.append(gpu)
                break
        else:
            break  # CUDA stops at the first invalid entry
    return out


def choose_gpus(
    tp: int,
    requested: list[int] | None,
    inventory: list[GpuInfo] | None,
    cuda_visible_devices: str | None,
) -> list[int] | None:
    """The physical GPU indices to run on: ``tp`` of them, from ``--gpus`` or all visible ones, most
    free memory first. None when the GPUs cannot be listed and none were named (leave it to the engine).
    Raises UsageError when ``tp`` is more than the GPUs available."""
    if tp < 1:
        raise UsageError(f"--tp {tp}: must be at least 1")
    if inventory is None:
        if requested is not None:
            if len(requested) < tp:
                raise UsageError(f"--tp {tp} needs {tp} GPUs but --gpus names {len(requested)}")
            return requested[:tp]
        if cuda_visible_devices is not None:
            count = len([t for t in cuda_visible_devices.split(",") if t.strip()])
            if tp > count:
                raise UsageError(f"--tp {tp} is more than the {count} GPU(s) in CUDA_VISIBLE_DEVICES={cuda_visible_devices}")
        return None
    candidates = visible(inventory, cuda_visible_devices)
    where = f"visible (CUDA_VISIBLE_DEVICES={cuda_visible_devices})" if cuda_visible_devices is not None else "on this host"
    if requested is not None:
        known = {g.index: g for g in candidates}
        unknown = [i for i in requested if i not in known]
        if unknown:
            have = ", ".join(str(g.index) for g in candidates) or "none"
            raise UsageError(f"--gpus {','.join(map(str, requested))}: GPU {unknown[0]} is not {where} (have: {have})")
        candidates = [known[i] for i in requested]
        where = f"named by --gpus ({','.join(map(str, requested))})"
    if tp > len(candidates):
        raise UsageError(f"--tp {tp} is more than the {len(candidates)} GPU(s) {where}")
    chosen = sorted(candidates, key=lambda g: (-g.free_mib, g.index))[:tp]
    return sorted(g.index for g in chosen)


def memory_used(indices: list[int], inventory_fn: Callable[[], list[GpuInfo] | None] = gpu_inventory) -> dict[int, int] | None:
    inventory = inventory_fn()
    if inventory is None:
        return None
    by_index = {g.index: g.used_mib for g in inventory}
    return {i: by_index[i] for i in indices if i in by_index}


def wait_memory_released(
    before: dict[int, int],
    timeout_s: float,
    poll_s: float = 1.0,
    inventory_fn: Callable[[], list[GpuInfo] | None] = gpu_inventory,
) -> tuple[bool, dict[int, int] | None]:
    """Wait until each GPU's used memory is back within the tolerance of ``before``."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = memory_used(list(before), inventory_fn)
        if now is None:
            return False, None
        if all(now.get(i, 0) <= used + RELEASE_TOLERANCE_MIB for i, used in before.items()):
            return True, now
        if time.monotonic() >= deadline:
            return False, now
        time.sleep(poll_s)


def cuda_visible_devices_env() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")
