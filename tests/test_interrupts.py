"""Interrupts: Ctrl-C or SIGTERM during ``fix --apply`` leaves no temporary file beside the
sources; temporary files a killed run left are swept; pool workers never outlive the run, and
never print a KeyboardInterrupt traceback of their own.

The signal tests run eagle3lint under a small driver that makes one step block (a write's
fsync, a worker's parse) and drops a marker file when it does: the test waits for the marker
(polling, up to a minute), then signals. No step depends on how fast the machine is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from eagle3lint.fix.write import (
    STALE_AFTER_S,
    remove_stale_temp_files,
    stale_temp_files,
    write_atomically,
)
from tests.fix_helpers import MODELS, copy_before
from tests.helpers import SGLANG_SKELETON, make_tree
from tests.robust_helpers import cli_env

WAIT_S = 60.0  # for a condition to come true; polled, so a fast machine does not wait
POLL_S = 0.05
TEMP_GLOB = "*.eagle3lint-tmp"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout:.0f} s still not: {what}")
        time.sleep(POLL_S)


def alive(pid: int) -> bool:
    """Running (a zombie, left to an init that does not reap, has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _temp_files(root: Path) -> list[Path]:
    return sorted(root.rglob(TEMP_GLOB))


def _driver(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "driver.py"
    path.write_text(textwrap.dedent(body))
    return path


def _start(driver: Path, *args: str | Path, cwd: Path) -> subprocess.Popen[bytes]:
    # A session of its own: a signal to its process group reaches it and its workers only,
    # as a terminal's Ctrl-C reaches the foreground job.
    return subprocess.Popen(
        [sys.executable, str(driver), *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=cli_env(), start_new_session=True,
    )


def _finish(child: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        _, err = child.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise AssertionError("eagle3lint did not end after the signal") from None
    return child.returncode, err.decode("utf-8", "replace")


# ---- the writer ---------------------------------------------------------------------------


def test_an_interrupt_mid_write_removes_the_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n")

    def interrupted(fd: int) -> None:
        assert len(_temp_files(tmp_path)) == 1  # the interrupt lands while the temp file exists
        raise KeyboardInterrupt

    monkeypatch.setattr("eagle3lint.fix.write.os.fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(str(target), b"x = 2\n", b"x = 1\n")
    assert target.read_bytes() == b"x = 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_only_old_temporary_files_of_our_naming_are_stale(tmp_path: Path) -> None:
    old = STALE_AFTER_S + 60
    stale = tmp_path / ".m.py.ab_c1234.eagle3lint-tmp"
    fresh = tmp_path / ".m.py.zzzz9999.eagle3lint-tmp"  # a write in progress elsewhere
    other = tmp_path / ".m.py.ab_c1234.tmp"
    short = tmp_path / ".m.py.abc.eagle3lint-tmp"
    folder = tmp_path / ".d.py.abcdefgh.eagle3lint-tmp"
    link = tmp_path / ".l.py.abcdefgh.eagle3lint-tmp"
    for path in (stale, fresh, other, short):
        path.write_text("x")
    folder.mkdir()
    link.symlink_to(tmp_path / "elsewhere")
    for path in (stale, other, short, folder, link):
        _age(path, old)
    assert stale_temp_files(str(tmp_path)) == [str(stale)]
    assert remove_stale_temp_files({str(tmp_path)}) == [str(stale)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (fresh, other, short, folder, link))


def test_fix_apply_sweeps_stale_temporary_files_where_it_writes(tmp_path: Path) -> None:
    root = copy_before("fix_wrapper", tmp_path)
    models = root / MODELS
    stale = models / ".vl_wrapper.py.k3j2_x9q.eagle3lint-tmp"
    stale.write_text("half a file")
    _age(stale, STALE_AFTER_S + 60)
    elsewhere = root / "sglang/srt/layers/.vocab.py.k3j2_x9q.eagle3lint-tmp"  # not written to
    elsewhere.write_text("half a file")
    _age(elsewhere, STALE_AFTER_S + 60)
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "fix", "--apply", "--no-cache", models],
        capture_output=True, text=True, cwd=root, env=cli_env(), timeout=WAIT_S * 2,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert not stale.exists()
    assert ".vl_wrapper.py.k3j2_x9q.eagle3lint-tmp: removed" in done.stderr
    assert elsewhere.exists()
    assert _temp_files(root) == [elsewhere]


# ---- SIGINT and SIGTERM during fix --apply ------------------------------------------------------

BLOCKING_FSYNC = """
    import os, sys, time
    mark = sys.argv[1]
    real_fsync = os.fsync

    def blocking_fsync(fd):
        # The temporary file is written and not yet renamed: the moment to interrupt.
        open(mark, "w").close()
        time.sleep(600)
        real_fsync(fd)

    os.fsync = blocking_fsync
    from eagle3lint.cli import main
    main(sys.argv[2:])
"""


@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_during_fix_apply_leaves_no_temporary_file(tmp_path: Path, signum: int, code: int, said: str) -> None:
    root = copy_before("fix_wrapper", tmp_path / "tree")
    target = root / MODELS / "vl_wrapper.py"
    before = target.read_bytes()
    mark = tmp_path / "writing"
    driver = _driver(tmp_path, BLOCKING_FSYNC)
    child = _start(driver, mark, "fix", "--apply", "--no-cache", root / MODELS, cwd=root)
    try:
        wait_for(lambda: mark.exists() or child.poll() is not None, "the write has begun")
        assert child.poll() is None, child.communicate()
        assert len(_temp_files(root)) == 1
        os.killpg(child.pid, signum)  # as a terminal (Ctrl-C) or a service manager would
        returncode, stderr = _finish(child)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert returncode == code, stderr
    assert f"eagle3lint: {said}" in stderr
    assert "Traceback" not in stderr
    assert _temp_files(root) == []
    assert target.read_bytes() == before  # the file being written keeps its old text


# ---- SIGTERM while fix's edit workers are busy ----------------------------------------------------

BLOCKING_EDIT_WORKERS = """
    import os, sys, time
    import eagle3lint.run.fix_session as session
    import eagle3lint.source.parallel as parallel

    marks = sys.argv[1]
    parent = os.getpid()
    parallel.usable_cpus = lambda: 2  # a pool even on a one-core machine
    parallel.MIN_PARALLEL_FIX_BYTES = 0  # and for these small files
    real_edit = session._edit_files

    def blocking_edit(jobs):
        if os.getpid() != parent:  # in a worker: say so, then hang as a huge file would
            open(os.path.join(marks, str(os.getpid())), "w").close()
            time.sleep(600)
        return real_edit(jobs)

    session._edit_files = blocking_edit
    from eagle3lint.cli import main
    main(sys.argv[2:])
"""


@pytest.mark.parametrize("to_group", [False, True], ids=["process", "group"])
def test_sigterm_while_fix_workers_edit_ends_cleanly(tmp_path: Path, to_group: bool) -> None:
    """As the round-3 harness sends it (to the process) or a service manager does (to the group):
    exit 143 with one line, no "Exception ignored ... Bad file descriptor" from the pool's
    threads at exit, no traceback from a worker, nothing written, no worker left."""
    root = copy_before("fix_wrapper", tmp_path / "tree")
    first = root / MODELS / "vl_wrapper.py"
    second = first.with_name("vl_wrapper2.py")
    second.write_text(first.read_text().replace("VLForConditionalGeneration", "VL2ForConditionalGeneration"))
    before = {p.name: p.read_bytes() for p in (root / MODELS).iterdir()}
    marks = tmp_path / "marks"
    marks.mkdir()
    driver = _driver(tmp_path, BLOCKING_EDIT_WORKERS)
    child = _start(driver, marks, "fix", "--apply", "--no-cache", root / MODELS, cwd=root)
    workers: list[int] = []
    try:
        wait_for(lambda: len(list(marks.iterdir())) >= 2 or child.poll() is not None, "two workers are editing")
        assert child.poll() is None, child.communicate()
        workers = [int(p.name) for p in marks.iterdir()]
        (os.killpg if to_group else os.kill)(child.pid, signal.SIGTERM)
        returncode, stderr = _finish(child)
        wait_for(lambda: not any(alive(pid) for pid in workers), "every worker has exited")
    finally:
        for pid in [child.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        child.wait()
    assert returncode == 143, stderr
    assert stderr.strip().splitlines() == ["eagle3lint: terminated"], stderr
    assert {p.name: p.read_bytes() for p in (root / MODELS).iterdir()} == before


def test_a_terminated_pool_leaves_no_thread_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool left by an interrupt is gone, manager thread included, when ``terminate`` returns.
    Left running into the interpreter's exit, that thread closes its wake-up pipe while Python
    3.11's exit hook writes to it: "Exception ignored ... OSError: [Errno 9] Bad file descriptor"
    after SIGTERM during ``fix --apply``."""
    import concurrent.futures.process as futures_process
    import threading

    from eagle3lint.source.parallel import WorkerPool

    real_clean_up = futures_process._ExecutorManagerThread.join_executor_internals

    def slow_clean_up(self: futures_process._ExecutorManagerThread) -> None:
        time.sleep(1.0)  # as on a loaded machine: the thread is still at it when terminate returns
        real_clean_up(self)

    monkeypatch.setattr(futures_process._ExecutorManagerThread, "join_executor_internals", slow_clean_up)
    pool = WorkerPool(workers=2)
    with pytest.raises(KeyboardInterrupt), pool:
        pool.submit(time.sleep, 600)
        raise KeyboardInterrupt
    assert [t for t in threading.enumerate() if isinstance(t, futures_process._ExecutorManagerThread)] == []


HALF_SENT_RESULT = """
    import os, struct, sys, threading, time
    from multiprocessing.queues import SimpleQueue
    from multiprocessing.reduction import ForkingPickler
    from eagle3lint.source.parallel import WorkerPool

    mark = sys.argv[1]
    parent = os.getpid()
    real_put = SimpleQueue.put

    def half_put(self, item):
        # A worker stopped half-way through sending its result, as SIGKILL can stop it.
        if os.getpid() != parent and getattr(item, "result", None) == "half":
            data = bytes(ForkingPickler.dumps(item))
            os.write(self._writer.fileno(), struct.pack("!i", len(data)) + data[: len(data) // 2])
            open(mark, "w").close()
            time.sleep(600)
        return real_put(self, item)

    SimpleQueue.put = half_put

    def half():
        return "half"

    pool = WorkerPool(workers=2)
    try:
        with pool:
            pool.submit(half)
            while not os.path.exists(mark):
                time.sleep(0.05)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    print("threads left:", [t.name for t in threading.enumerate() if t is not threading.main_thread()], file=sys.stderr)
"""


def test_a_worker_killed_mid_result_does_not_hang_the_exit(tmp_path: Path) -> None:
    """The pool's manager thread waits for the rest of a result a killed worker half sent, and
    the interpreter's exit waits for that thread: SIGTERM during ``fix --apply`` could hang."""
    driver = _driver(tmp_path, HALF_SENT_RESULT)
    child = _start(driver, tmp_path / "half-sent", cwd=tmp_path)
    returncode, stderr = _finish(child)
    assert returncode == 0, stderr
    assert stderr.strip().splitlines() == ["threads left: []"], stderr


# ---- pool workers --------------------------------------------------------------------------

BLOCKING_WORKERS = """
    import os, sys, time
    import eagle3lint.source.parallel as parallel

    marks = sys.argv[1]
    parent = os.getpid()
    parallel.usable_cpus = lambda: 2  # a pool even on a one-core machine
    real_parse = parallel.parse_module

    def blocking_parse(request):
        if os.getpid() != parent:  # in a worker: say so, then hang as a huge file would
            open(os.path.join(marks, str(os.getpid())), "w").close()
            time.sleep(600)
        return real_parse(request)

    parallel.parse_module = blocking_parse
    from eagle3lint.cli import main
    main(sys.argv[2:])
"""


def _many_models(root: Path, count: int = 64) -> Path:
    """An engine tree with enough model files for the parse to go to the pool."""
    files: dict[str, str | bytes] = dict(SGLANG_SKELETON)
    for n in range(count):
        files[f"sglang/srt/models/m{n}.py"] = f"class M{n}ForCausalLM:\n    pass\n\nEntryClass = M{n}ForCausalLM\n"
    return make_tree(root, files)


def _blocked_check(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    tree = _many_models(tmp_path / "tree")
    marks = tmp_path / "marks"
    marks.mkdir()
    driver = _driver(tmp_path, BLOCKING_WORKERS)
    child = _start(driver, marks, "check", "--no-cache", tree, cwd=tree)
    wait_for(lambda: len(list(marks.iterdir())) >= 2 or child.poll() is not None, "two workers are parsing")
    assert child.poll() is None, child.communicate()
    return child, [int(p.name) for p in marks.iterdir()]


def test_ctrl_c_during_a_cold_check_is_reported_once_and_ends_the_workers(tmp_path: Path) -> None:
    child, workers = _blocked_check(tmp_path)
    try:
        os.killpg(child.pid, signal.SIGINT)  # the terminal's Ctrl-C reaches every process
        returncode, stderr = _finish(child)
        wait_for(lambda: not any(alive(pid) for pid in workers), "every worker has exited")
    finally:
        for pid in [child.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        child.wait()
    assert returncode == 130, stderr
    assert stderr.count("eagle3lint: interrupted") == 1, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def test_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    child, workers = _blocked_check(tmp_path)
    try:
        os.kill(child.pid, signal.SIGKILL)  # no chance to stop them itself
        child.wait(timeout=WAIT_S)
        wait_for(lambda: not any(alive(pid) for pid in workers), "every worker has exited")
        # Nothing holds the output pipe open any longer: a reader sees its end.
        assert child.stdout is not None and child.stdout.read() == b""
    finally:
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_workers_ignore_sigint_and_watch_their_parent() -> None:
    """The initializer, run in a forked child: SIGINT ignored, and death with the parent asked."""
    parent = os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            from eagle3lint.source.parallel import _worker_start

            _worker_start(parent)
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            deathsig = ctypes.c_int(0)
            libc.prctl(2, ctypes.byref(deathsig), 0, 0, 0)  # PR_GET_PDEATHSIG
            ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            os.write(write_end, f"{int(ignored)} {deathsig.value}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    report = os.read(read_end, 64).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    assert report == f"1 {int(signal.SIGKILL)}"


# ---- Ctrl-C before and around the command: the entry point ------------------------------------


def test_the_console_script_enters_where_ctrl_c_is_handled_first() -> None:
    import re

    from tests.helpers import REPO

    scripts = (REPO / "pyproject.toml").read_text().split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    assert re.findall(r"^eagle3lint = (.*)$", scripts, re.M) == ['"eagle3lint.__main__:main"']


# Drivers run as ``python -m DRIVER ARGS``: they set the trap, then start ``python -m eagle3lint``
# as the interpreter does (the exit path differs from a script's).
INTERRUPT_ON_IMPORT = """
    import os, runpy, signal, sys

    class InterruptOnImport:
        # Ctrl-C as the entry point imports the command line.
        def find_spec(self, name, path=None, target=None):
            if name == "eagle3lint.cli":
                sys.meta_path.remove(self)
                os.kill(os.getpid(), signal.SIGINT)
            return None

    sys.meta_path.insert(0, InterruptOnImport())
    runpy.run_module("eagle3lint", run_name="__main__", alter_sys=True)
"""

INTERRUPT_IN_GENERATED_CODE = """
    import runpy
    import eagle3lint.run.runner as runner

    def interrupted_check(*args, **kwargs):
        # dataclasses and named tuples make their methods with exec of a string: Ctrl-C in one.
        exec("import os, signal, time\\nos.kill(os.getpid(), signal.SIGINT)\\ntime.sleep(600)")

    runner.run_check = interrupted_check
    runpy.run_module("eagle3lint", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("body", [INTERRUPT_ON_IMPORT, INTERRUPT_IN_GENERATED_CODE], ids=["imports", "generated-code"])
def test_ctrl_c_anywhere_in_the_command_exits_130_saying_so_once(tmp_path: Path, body: str) -> None:
    """Not a traceback, and not a death by the signal (CPython re-raises SIGINT at the exit of
    ``python -m`` when a KeyboardInterrupt ever left code run by exec, even one caught later)."""
    tree = make_tree(tmp_path / "tree", {**SGLANG_SKELETON, "sglang/srt/models/m.py": "class MForCausalLM:\n    pass\n"})
    drivers = tmp_path / "drivers"
    drivers.mkdir()
    (drivers / "interrupt_driver.py").write_text(textwrap.dedent(body))
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(drivers)])
    child = subprocess.Popen(
        [sys.executable, "-m", "interrupt_driver", "check", "--no-cache", str(tree)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tree, env=env, start_new_session=True,
    )
    returncode, stderr = _finish(child)
    assert returncode == 130, (returncode, stderr)
    assert stderr.count("eagle3lint: interrupted") == 1, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
