"""Waiting for the server: readiness polling, fatal log lines, and a progress display."""

from __future__ import annotations

import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from eagle3lint.common.escape import line_text
from eagle3lint.verify.httpclient import request
from eagle3lint.verify.knowledge import EngineKnowledge
from eagle3lint.verify.launch import LaunchedServer

READY, EXITED, FATAL, TIMEOUT = "ready", "exited", "fatal", "timeout"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# After a fatal line the traceback and the exit follow within moments: wait up to five polls
# (10 s at the default poll) for them before calling the server dead.
FATAL_GRACE_S = 10.0


@dataclass
class WaitOutcome:
    status: str  # ready | exited | fatal | timeout
    elapsed_s: float
    phase: str
    exit_code: int | None = None
    detail: str = ""


class Progress:
    """Silent: the default, and what ``--format json`` uses."""

    def start(self, label: str, log_path: Path) -> None:
        pass

    def update(self, label: str, elapsed_s: float, phase: str, last_line: str) -> None:
        pass

    def finish(self, message: str) -> None:
        pass

    def note(self, message: str) -> None:
        pass


class TerminalProgress(Progress):
    """One status line rewritten in place on a terminal; a line per phase change (and a heartbeat)
    otherwise, so CI logs stay short."""

    HEARTBEAT_S = 60.0

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_phase = ""
        self._last_print = 0.0
        self._dirty = False

    def _write_line(self, text: str) -> None:
        if self._dirty:
            self.stream.write("\r\x1b[K")
            self._dirty = False
        # The server's log lines and crash causes are its text, not ours: shown escaped.
        self.stream.write(line_text(text) + "\n")
        self.stream.flush()

    def start(self, label: str, log_path: Path) -> None:
        self._last_phase = ""
        self._write_line(f"verify: starting the {label} server (log: {log_path})")

    def update(self, label: str, elapsed_s: float, phase: str, last_line: str) -> None:
        clock = _clock(elapsed_s)
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            text = line_text(f"[{label} {clock}] {phase}: {last_line}")
            self.stream.write("\r\x1b[K" + text[: max(20, width - 1)])
            self.stream.flush()
            self._dirty = True
            return
        now = time.monotonic()
        if phase != self._last_phase or now - self._last_print >= self.HEARTBEAT_S:
            self._last_phase, self._last_print = phase, now
            self._write_line(f"[{label} {clock}] {phase}: {last_line[:160]}")

    def finish(self, message: str) -> None:
        self._write_line(f"verify: {message}")

    def note(self, message: str) -> None:
        self._write_line(f"verify: {message}")


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class LogFollower:
    """Reads what the server appended to its log since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.last_line = ""
        self._partial = ""

    def new_lines(self) -> list[str]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return []
        self.offset += len(chunk)
        text = self._partial + chunk.decode("utf-8", errors="replace")
        # Progress bars redraw with \r: each redraw counts as a line.
        pieces = re.split(r"\r\n|\r|\n", text)
        self._partial = pieces.pop()
        lines = [_ANSI.sub("", p) for p in pieces]
        for line in reversed(lines):
            if line.strip():
                self.last_line = line.strip()
                break
        return lines


def version_before(version: str, bound: str) -> bool:
    """True when ``version`` is older than ``bound`` (``0.4.10.post2`` style); False when unknown."""

    def key(text: str) -> tuple[int, ...] | None:
        match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:\.?post(\d+))?", text)
        if not match:
            return None
        return tuple(int(g) if g else 0 for g in match.groups())

    have, limit = key(version), key(bound)
    return have is not None and limit is not None and have < limit


def needs_ready_line(knowledge: EngineKnowledge, version: str | None) -> bool:
    return bool(knowledge.ready_line and knowledge.ready_line_needed_before and version and version_before(version, knowledge.ready_line_needed_before))


def phase_of(line: str, knowledge: EngineKnowledge) -> str | None:
    for phase in knowledge.phases:
        if any(marker in line for marker in phase.lines):
            return phase.name
    return None


def wait_until_ready(
    server: LaunchedServer,
    knowledge: EngineKnowledge,
    version: str | None,
    timeout_s: float,
    poll_s: float,
    progress: Progress,
) -> WaitOutcome:
    follower = LogFollower(server.log_path)
    need_line = needs_ready_line(knowledge, version)
    seen_ready_line = False
    phase = "starting"
    fatal_at: float | None = None
    health_url = server.base_url + knowledge.ready_endpoint
    while True:
        for line in follower.new_lines():
            phase = phase_of(line, knowledge) or phase
            if knowledge.ready_line and knowledge.ready_line in line:
                seen_ready_line = True
            if fatal_at is None and any(marker in line for marker in knowledge.fatal_lines):
                fatal_at = time.monotonic()
        elapsed = server.elapsed()
        progress.update(server.label, elapsed, phase, follower.last_line)
        code = server.process.poll()
        if code is not None:
            follower.new_lines()
            return WaitOutcome(EXITED, elapsed, phase, code, follower.last_line)
        if fatal_at is not None and time.monotonic() - fatal_at >= min(FATAL_GRACE_S, poll_s * 5):
            return WaitOutcome(FATAL, elapsed, phase, None, follower.last_line)
        if fatal_at is None:
            answer = request(health_url, timeout=max(1.0, min(5.0, poll_s * 2)))
            if answer.status == 200 and (seen_ready_line or not need_line):
                return WaitOutcome(READY, elapsed, "ready", None, follower.last_line)
        if elapsed >= timeout_s:
            return WaitOutcome(TIMEOUT, elapsed, phase, None, follower.last_line)
        time.sleep(poll_s)

