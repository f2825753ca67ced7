"""Ending a server completely: its process group, anything carrying its marker, its port, its GPU memory.

Runs on success, crash, timeout and Ctrl-C alike. Order: SIGTERM to the group (and to marked
processes outside it), wait, SIGKILL what is left, reap the leader, then wait for the port to close
and the GPU memory the run held to be free.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3lint.verify.gpus import GpuInfo, gpu_inventory, wait_memory_released
from eagle3lint.verify.launch import MARKER_ENV, LaunchedServer

_PROC = Path("/proc")


@dataclass
class TeardownResult:
    label: str
    ended_by: str  # "already exited" | "SIGTERM" | "SIGKILL"
    exit_code: int | None
    swept_pids: list[int] = field(default_factory=list)  # marked processes outside the group
    left_running: list[int] = field(default_factory=list)
    port_closed: bool = True
    gpu_released: bool | None = None  # None: GPU memory not observable here
    gpu_used_before: dict[int, int] | None = None
    gpu_used_during: dict[int, int] | None = None
    gpu_used_after: dict[int, int] | None = None
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not self.left_running and self.port_closed and self.gpu_released is not False

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "ended_by": self.ended_by,
            "exit_code": self.exit_code,
            "swept_pids": self.swept_pids,
            "left_running": self.left_running,
            "port_closed": self.port_closed,
            "gpu_released": self.gpu_released,
            "gpu_used_mib_before": _keys_to_str(self.gpu_used_before),
            "gpu_used_mib_during": _keys_to_str(self.gpu_used_during),
            "gpu_used_mib_after": _keys_to_str(self.gpu_used_after),
            "seconds": round(self.seconds, 3),
            "clean": self.clean,
        }


def _keys_to_str(values: dict[int, int] | None) -> dict[str, int] | None:
    return None if values is None else {str(k): v for k, v in values.items()}


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, process group) of a live process, from /proc; None when it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], int(fields[2])


def pid_alive(pid: int) -> bool:
    """Running or stopped; a zombie (dead, not yet reaped) counts as gone."""
    if _PROC.is_dir():
        stat = _stat(pid)
        return stat is not None and stat[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_members(pgid: int) -> list[int]:
    """Live processes in a process group (empty when /proc is not available and the group is gone)."""
    if not _PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def marked_processes(run_id: str) -> list[int]:
    """Live processes of this user whose environment carries the run's marker."""
    if not _PROC.is_dir():
        return []
    needle = f"{MARKER_ENV}={run_id}".encode()
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _outside_group(server: LaunchedServer) -> list[int]:
    """Marked processes that left the server's process group (setsid, double fork)."""
    outside = []
    for pid in marked_processes(server.run_id):
        stat = _stat(pid) if _PROC.is_dir() else None
        if stat is not None and stat[1] != server.pgid:
            outside.append(pid)
    return outside


def _signal_all(server: LaunchedServer, sig: signal.Signals) -> list[int]:
    outside = _outside_group(server)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(server.pgid, sig)
    for pid in outside:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return outside


def _remaining(server: LaunchedServer) -> list[int]:
    server.process.poll()  # reap the leader so it stops counting
    return sorted(set(group_members(server.pgid)) | set(marked_processes(server.run_id)))


def _wait_gone(server: LaunchedServer, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if not _remaining(server):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _wait_port_closed(host: str, port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while port_open(host, port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def teardown(
    server: LaunchedServer,
    grace_s: float,
    timeout_s: float,
    gpu_used_before: dict[int, int] | None = None,
    gpu_used_during: dict[int, int] | None = None,
    inventory_fn: Callable[[], list[GpuInfo] | None] = gpu_inventory,
) -> TeardownResult:
    started = time.monotonic()
    already = server.process.poll() is not None and not _remaining(server)
    ended_by = "already exited"
    swept: list[int] = []
    if not already:
        ended_by = "SIGTERM"
        swept = _signal_all(server, signal.SIGTERM)
        if not _wait_gone(server, grace_s):
            ended_by = "SIGKILL"
            swept = sorted(set(swept) | set(_signal_all(server, signal.SIGKILL)))
            _wait_gone(server, min(timeout_s, 10.0))
    try:
        exit_code = server.process.wait(timeout=max(1.0, timeout_s))
    except subprocess.TimeoutExpired:
        exit_code = None
    server.close_log()
    left = _remaining(server)
    result = TeardownResult(server.label, ended_by, exit_code, swept, left, gpu_used_before=gpu_used_before, gpu_used_during=gpu_used_during)
    result.port_closed = _wait_port_closed(server.host, server.port, timeout_s)
    if gpu_used_before:
        released, after = wait_memory_released(gpu_used_before, timeout_s, poll_s=0.5, inventory_fn=inventory_fn)
        result.gpu_released, result.gpu_used_after = (released if after is not None else None), after
    result.seconds = time.monotonic() - started
    return result
