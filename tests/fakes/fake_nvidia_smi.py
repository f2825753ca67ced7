#!/usr/bin/env python3
"""TEST DOUBLE for `nvidia-smi --query-gpu=index,uuid,memory.used,memory.total --format=csv,noheader,nounits`.

Reports FAKE_GPU_COUNT GPUs of 81920 MiB. A GPU's used memory is its base (FAKE_GPU_BASE_MIB, a comma
list, default 100 each) plus what live processes noted in the ledger (FAKE_GPU_LEDGER: lines
"pid cuda_visible_devices mib", written by fake_engine_server.py --fake-gpu-ledger) hold on it.
A dead process holds nothing, as with the real driver.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def main() -> None:
    if not any(arg.startswith("--query-gpu=") for arg in sys.argv[1:]):
        sys.exit(2)
    count = int(os.environ.get("FAKE_GPU_COUNT", "1"))
    base = [int(v) for v in os.environ.get("FAKE_GPU_BASE_MIB", "").split(",") if v] or [100] * count
    used = list(base) + [100] * (count - len(base))
    ledger = os.environ.get("FAKE_GPU_LEDGER")
    if ledger and Path(ledger).exists():
        for line in Path(ledger).read_text().splitlines():
            pid, devices, mib = line.split()
            if alive(int(pid)):
                used[int(devices.split(",")[0])] += int(mib)
    for i in range(count):
        print(f"{i}, GPU-fake-{i:04d}, {used[i]}, 81920")


if __name__ == "__main__":
    main()
