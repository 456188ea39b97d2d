"""Reference processes forked from a warm parent: TensorFlow is imported once per grading process, not per submission.

Every graded submission that reaches a speed check needs a clean reference process (`tfperf_lab.speed.reference`).
Started with ``python -I -m ...``, each one paid the TensorFlow import (about 4 s of CPU on the dev VM, Keras and
matplotlib with it) before its first fixture cell: a tenth to a third of a graded notebook's CPU, and the larger part of
what a class of short notebooks costs beyond running them. A *zygote* (``python -I -m tfperf_lab.speed.zygote``, one
per grading process and reference environment) imports `PREIMPORTED` once, runs nothing else, and forks a child per
reference process. The child starts a session of its own, takes the judge's environment, folder, log file and argument
list, and runs `tfperf_lab.speed.reference.main`: the same code, on the same instructor's source, in a fresh namespace
and a fresh TensorFlow runtime (the zygote never creates one: no eager context, no thread pool, no session; the fork
happens while it only waits on its pipe). A reference process still never runs a learner's code.

What the zygote's import fixed stays fixed in its children: Keras's folder and matplotlib's configuration come from
the zygote's own scratch home (defaults, as a fresh home gives), and environment variables TensorFlow reads at import
are the zygote's. So children are grouped by environment: `spawn` keeps one zygote per distinct reference environment
(without the per-judge ``HOME``, ``TMPDIR``, ``MPLCONFIGDIR`` and grader socket), and the child's ``tempfile`` forgets
the zygote's temporary folder. A zygote that cannot start or dies is `Unavailable`; the judge then starts the reference
process the plain way (`tfperf_lab.speed.judge`), slower and otherwise the same.

`Forked` is the host's handle: the four things the judge does with a `subprocess.Popen` (``pid``, ``poll``, ``kill``,
``communicate``), through a pidfd (the child is the zygote's, not the host's) and a log file instead of a pipe.
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from ..course import scratch
from ..course.config import DEFAULTS, GRADER_VARIABLE, ROLE_VARIABLE

PREIMPORTED = ("numpy", "tensorflow", "IPython.core.interactiveshell")
PER_JUDGE = ("HOME", "TMPDIR", "MPLCONFIGDIR", GRADER_VARIABLE, ROLE_VARIABLE)
FOLDER_PREFIX = "tfperf-zygote-"


class Unavailable(RuntimeError):
    """No zygote could serve this environment: the caller starts the process itself."""


# -- the zygote (its own process) ----------------------------------------------------------------------------------
def serve() -> int:
    """Import `PREIMPORTED`, say ``ready``, then fork one child per request line until stdin closes."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel; the host watches them by pidfd
    channel_in, channel_out = sys.stdin.buffer, sys.stdout.buffer
    for name in PREIMPORTED:
        __import__(name)
    channel_out.write(b"ready\n")
    channel_out.flush()
    for line in channel_in:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns
        channel_out.write(f"{pid}\n".encode())
        channel_out.flush()
    return 0


def _child(request: dict) -> None:
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # computed again from this child's TMPDIR
        import random

        import numpy

        random.seed()  # as a fresh process would be: not the zygote's state, shared by every child
        numpy.random.seed()
        from .reference import main

        code = main(request["argv"]) or 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001  (the reference's own failures are reported in its log, as before)
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


# -- the host's side -----------------------------------------------------------------------------------------------
class Forked:
    """A reference process forked by a zygote, with the `subprocess.Popen` methods the judge uses."""

    def __init__(self, pid: int, log: pathlib.Path):
        self.pid, self.log, self.returncode = pid, log, None
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):  # gone already, or no pidfd on this kernel: `os.kill(pid, 0)` tells
            self._fd = None

    def poll(self) -> int | None:
        """None while it runs; its exit code is not known to the host, so an ended process reads 0."""
        if self.returncode is None and not self._running(0):
            self.returncode = 0
        return self.returncode

    def _running(self, timeout: float) -> bool:
        if self._fd is not None:
            return not select.select([self._fd], [], [], timeout)[0]
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.05)

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def communicate(self, timeout: float = 10.0) -> tuple[bytes, None]:
        """Wait for it to end (``timeout`` seconds at most), then what it wrote."""
        if self.returncode is None:
            self._running(timeout)
            self.poll()
        if self._fd is not None:  # closed here only: other judges' threads may still poll it until the judge ends
            os.close(self._fd)
            self._fd = None
        try:
            return self.log.read_bytes(), None
        except OSError:
            return b"", None


class _Zygote:
    def __init__(self, env: dict[str, str]):
        self.folder = scratch.make(FOLDER_PREFIX, None)
        home = self.folder / "home"
        home.mkdir()
        own = {name: value for name, value in env.items() if name not in PER_JUDGE} | {
            "HOME": str(home), "TMPDIR": str(home), "MPLCONFIGDIR": str(home / ".matplotlib")}
        self.lock = threading.Lock()
        self.process = subprocess.Popen([sys.executable, "-I", "-m", "tfperf_lab.speed.zygote"], env=own, cwd=home,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        if self._line(DEFAULTS.zygote_seconds) != "ready":
            self.close()
            raise Unavailable("the zygote did not start")

    def _line(self, timeout: float) -> str | None:
        stream = self.process.stdout
        if not select.select([stream], [], [], timeout)[0]:
            return None
        return stream.readline().decode("ascii", "replace").strip() or None

    def spawn(self, argv: list[str], env: dict[str, str], cwd: pathlib.Path, log: pathlib.Path) -> Forked:
        request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd), "log": str(log)}).encode() + b"\n"
        with self.lock:
            try:
                self.process.stdin.write(request)
                self.process.stdin.flush()
            except OSError as error:
                raise Unavailable(f"the zygote is gone ({error})") from None
            answer = self._line(30.0)
        if answer is None or not answer.isdigit():
            raise Unavailable(f"the zygote did not fork (it said {answer!r})")
        return Forked(int(answer), log)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_ZYGOTES: dict[tuple, _Zygote] = {}
_FAILED: dict[tuple, str] = {}  # environments no zygote could serve: not tried again by this process
_LOCK = threading.Lock()
_SWEPT = threading.Event()


def spawn(argv: list[str], *, env: dict[str, str], cwd: pathlib.Path, log: pathlib.Path) -> Forked:
    """Fork ``python -m tfperf_lab.speed.reference ARGV`` from this grading process's zygote for ``env`` (started on
    first use): environment ``env``, working folder ``cwd``, stdout and stderr appended to ``log``, a session of its own.
    Raises `Unavailable` when no zygote can serve (the caller then starts the process itself)."""
    if sys.platform != "linux":  # forking after TensorFlow's import is known to work on Linux only (macOS: fork safety)
        raise Unavailable(f"no zygote on {sys.platform}")
    key = tuple(sorted((name, value) for name, value in env.items() if name not in PER_JUDGE))
    with _LOCK:
        if key in _FAILED:
            raise Unavailable(_FAILED[key])
        if not _SWEPT.is_set():
            _SWEPT.set()
            scratch.sweep(FOLDER_PREFIX)
        zygote = _ZYGOTES.get(key)
        if zygote is None or not zygote.alive():
            if zygote is not None:  # it died: one new start, then the plain way for good
                zygote.close()
            try:
                zygote = _ZYGOTES[key] = _Zygote(env)
            except (OSError, Unavailable) as error:
                _ZYGOTES.pop(key, None)
                _FAILED[key] = f"the zygote could not start ({error})"
                raise Unavailable(_FAILED[key]) from None
    try:
        return zygote.spawn(argv, env, cwd, log)
    except Unavailable as error:
        with _LOCK:
            _FAILED[key] = str(error)
        raise


@atexit.register
def close_all() -> None:
    """Stop every zygote of this process (each also stops by itself when this process's end closes its pipe)."""
    with _LOCK:
        for zygote in _ZYGOTES.values():
            zygote.close()
        _ZYGOTES.clear()


if __name__ == "__main__":
    sys.exit(serve())
