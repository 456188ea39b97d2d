"""Speed verdicts decided by the grader, outside the learner's kernel.

One `Judge` per graded submission. It listens on two Unix sockets: one reachable from the learner's sandbox, one from
a clean reference process (`tfperf_lab.speed.reference`) that runs only the instructor's source (the cells tagged
``speed-fixture`` and the speed test cells). When the learner's kernel reaches a speed test cell, its
`tfperf.assert_speedup` connects and serves the candidate (`tfperf.link`); the reference process serves the baseline
from the same test cell, with settings (threshold, rounds, budget, tolerances) taken from the instructor's copy only.
The judge hands both connections to the grader's clock (`tfperf_lab.speed.timer`, a process of its own): paired rounds in
alternating order, each a batch of calls on arguments drawn from a fresh seed it chose, timed from request to answer,
the learner's sandbox frozen (its cgroup) while the baseline runs, every answer's output digests matched against the
reference's on the same inputs. The median ratio, its confidence sequence and the verdict come from the grader's side
and become the `Record` the score stage uses; the kernel only hears the verdict.

The reference process starts when the first candidate says hello, not with the submission: a notebook that never reaches
a speed check (an untouched or half-finished one, a crash) costs no fixture cells. The candidate waits those seconds at
its first check; the wait is not timed. It is forked from the grading process's zygote (`tfperf_lab.speed.zygote`), which
imported TensorFlow once for every submission, or started the plain way where no zygote can serve.

Jobs pinned to disjoint core sets (``cpus``: the sandbox, the reference process and the timer all on the job's cores)
measure at the same time. A job that shares cores with others (no pinning: fewer than two cores a worker) measures
alone: every other such job of this process is paused meanwhile (its sandbox frozen, its reference process stopped),
and the time it spent paused is added back to its time limits (`seconds_paused`). Across grading processes on one
machine (a cluster's workers, a second grading run) such jobs also take turns, through a lock file (`MACHINE_LOCK`);
the time a job waits for its turn is added back to its limits too. A measurement has a hard bound
(`tfperf_lab.speed.timer.GRACE`), so no submission can hold the others for longer than its own checks' bounds.

A candidate is accepted only while the runner reports the speed check's own test cell executing, and only once.

The sandbox (`tfperf_lab.isolation.sandbox.run`) deals with a judge only through the methods of
`tfperf_lab.isolation.contract.Watcher`, which `Judge` keeps: `sandbox_binds`, `host_address`, `use_freezer` (the job's
`tfperf_lab.isolation.cgroups.Freezer`, which also travels to the timer process), `progress` and `seconds_paused`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from tfperf.report import Record

from ..course import notebook
from ..course import scratch
from ..course.config import DEFAULTS, GRADER_VARIABLE, RECORD_VARIABLE, ROLE_VARIABLE
from ..isolation import cgroups
from ..isolation.contract import Freezing, Watcher
from . import TECHNIQUE, timer, zygote
from tfperf import link, stats, timing

from .timer import Failed, Side

HELLO_SECONDS = 30.0
# A check left undecided (its interval still holds the threshold when its budget ran out) whose rounds put the answer
# above the threshold (their median clears it) was left so by the machine (a busy one spoils rounds and widens the
# interval), not shown slow by the answer: it is measured again after each wait here, the job frozen meanwhile; still so
# after the last, it is the machine's fault (the row is graded again, never scored; twice on the same file, a person
# decides), never a fail for the student. Only rounds that point below the threshold fail an undecided check: a
# threshold set far below what the optimization gives (issue 53, item 3).
REMEASURE_AFTER = (5.0, 20.0)
PROGRESS_SECONDS = 10.0


# Jobs without cores of their own measure one at a time in this process: while such a judge times its two sides, every
# other unpinned grading job (their sandboxes and reference processes) is paused, so they never time against each other.
# Jobs pinned to their own cores neither take this lock nor get paused.
_MEASURING = threading.Lock()
# ... and one at a time on this machine, whichever grading process they belong to (every worker of a local Dask cluster,
# a second `tfperf-lab grade`): an advisory lock on this file, per user. Jobs on cores of their own do not take it.
MACHINE_LOCK = pathlib.Path(tempfile.gettempdir()) / f"tfperf-lab-measuring-{os.getuid()}.lock"
_ACTIVE: set = set()
_ACTIVE_LOCK = threading.Lock()

# A judge's socket folder is ``tfperf-judge-<grader's pid>-XXXX`` under /tmp; it removes it on exit. A grading process
# that was killed (SIGKILL, the OOM killer, a cluster worker lost) leaves it: the first judge of the next grading process
# removes those whose grader is gone (`sweep_stale_folders`), as `tfperf_lab.isolation.cgroups.sweep_stale` does for
# cgroups. Folders of live graders (another grading run on this machine) are never touched.
FOLDER_PREFIX = "tfperf-judge-"
_SWEPT = threading.Event()


def _folder_root() -> str | None:
    return "/tmp" if os.path.isdir("/tmp") else None


def sweep_stale_folders(root: pathlib.Path | None = None) -> list[pathlib.Path]:
    """Remove the judge folders (ours: same owner) of grading processes that are no longer alive. Returns those removed."""
    return scratch.sweep(FOLDER_PREFIX, root or _folder_root())


class JudgeUnavailable(RuntimeError):
    """The judge could not start (its sockets or its reference process): the submission is not graded, and says why."""


def _listener(path: pathlib.Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen(4)
    return server


def _hello(connection: socket.socket, role: str) -> Side | None:
    """The side that just connected, once its first message says which check it serves, in this protocol's version and
    the expected role; None (and the connection closed) for anything else."""
    side = Side(connection, {})
    try:
        name, said, options = link.hello(side.receive(HELLO_SECONDS))
    except (Failed, link.ProtocolError):
        connection.close()
        return None
    if said != role:
        connection.close()
        return None
    side.hello, side.name = {"hello": name, "role": said, "options": options}, name
    return side


def undecided_above(comparison: timing.Comparison) -> str | None:
    """Why ``comparison`` is the machine's to decide again, not the answer's (see `REMEASURE_AFTER`): its interval
    holds the threshold while the median of its rounds clears it. None when it decided, or its rounds point below."""
    if comparison.threshold is None or stats.decided(comparison.ci, comparison.threshold, comparison.tolerance):
        return None
    if comparison.speedup < comparison.threshold:
        return None
    disturbed = int(comparison.baseline.metadata.get("disturbed_rounds", len(comparison.dropped)))
    return (f"its rounds' median, {comparison.speedup:.2f}x, clears the {comparison.threshold:g}x asked, but its interval "
            f"still holds it; {disturbed} of its {disturbed + comparison.rounds} rounds were disturbed by other work")


class Judge(Watcher):
    """Speed verdicts for one submission; see the module docstring. Use as a context manager around the sandbox run."""

    def __init__(self, source: pathlib.Path, *, environment: dict[str, str], executed: dict, cpus: tuple[int, ...] | None = None):
        self.source = source
        self.cpus = tuple(cpus) if cpus else None  # the job's own cores (None: it shares them and measures alone)
        self.paused_seconds = 0.0  # how long other jobs' measurements kept this one paused (added to its time limits)
        self._paused_at: float | None = None
        source_nb = notebook.read(source)
        checks = notebook.speed_checks(source_nb)
        self.expected = {name: cell_id for cell_id, names in checks.items() for name in names}
        # the cell of the graded notebook where each check may be served: the last cell carrying its grade id
        self.windows: dict[str, int] = {}
        for index, cell in enumerate(executed.get("cells", [])):
            grade_id = notebook.nbgrader_meta(cell).get("grade_id")
            if grade_id in checks:
                self.windows[grade_id] = index
        # a short path of its own: a Unix socket's path may not exceed 107 bytes, and work folders can be deep
        if not _SWEPT.is_set():
            _SWEPT.set()
            sweep_stale_folders()
        self.folder = scratch.make(FOLDER_PREFIX, _folder_root())
        (self.folder / "link").mkdir()
        (self.folder / "reference").mkdir()
        self.candidate_address = self.folder / "link" / "candidate.sock"
        self.reference_address = self.folder / "reference.sock"
        self.records: list[Record] = []
        self.notes: list[str] = []
        self.served: set[str] = set()
        self.current: int | None = None  # index of the cell the runner is executing
        self._freezer: Freezing | None = None  # the sandbox's freezer, to freeze it while the baseline runs (`use_freezer`)
        self._freezing = threading.Lock()  # one freeze or thaw at a time, and none once the job has ended
        self.cannot_freeze: str | None = None  # why the sandbox's cgroup cannot be frozen here (`use_freezer`)
        self.machine_faults: list[str] = []  # checks left unmeasured by the grading machine's fault, never the notebook's
        self._environment = environment
        self._waiting: dict[str, Side] = {}
        self._ready = threading.Condition()
        self._moved = threading.Condition()  # the runner's progress changed
        self._closed = False
        self._threads: list[threading.Thread] = []
        # started by the first candidate (`_ensure_reference`): forked by the zygote, or a plain process
        self._reference: zygote.Forked | subprocess.Popen | None = None
        self._starting = threading.Lock()
        self.reference_log = ""

    # -- life cycle -----------------------------------------------------------------------------------------------
    def __enter__(self) -> "Judge":
        try:
            self._candidates = _listener(self.candidate_address)
            self._references = _listener(self.reference_address)
        except OSError as error:
            for name in ("_candidates", "_references"):
                if hasattr(self, name):
                    getattr(self, name).close()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise JudgeUnavailable(f"the grader could not start timing this lesson's speed checks ({type(error).__name__}: {error}). "
                                   f"A problem of the grading machine, not of the notebook: nothing was graded; grade it again "
                                   f"once fixed") from error
        with _ACTIVE_LOCK:
            _ACTIVE.add(self)
            alone = len(_ACTIVE) == 1
        # With cores of its own (pinned) or no other job grading in this process, the reference process starts now,
        # beside the kernel, so its TensorFlow import and fixture cells leave the critical path (issue 37: lesson 09's
        # `check` went from plain + 5.4 s to plain - 0.2 s). Where jobs share the cores, it starts when the first
        # candidate says hello, as a job that never reaches a check then costs no second TensorFlow import (a class on
        # 2 cores graded 9% slower with every reference started early). A failed start is tried again at the hello,
        # and is then the machine's fault.
        early = (self._ensure_reference,) if self.cpus or alone else ()
        for target in (self._accept_references, self._accept_candidates, *early):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc) -> None:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(self)
        self._closed = True
        for server in (self._candidates, self._references):
            try:
                server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            server.close()
        with self._ready:
            for side in self._waiting.values():
                side.close({"passed": False, "reason": "grading ended"})
            self._waiting.clear()
            self._ready.notify_all()
        with self._starting:  # no reference starts after this (``_closed``), and one that started is stopped here
            if self._reference is not None:
                self._reference.kill()
                log = self._reference.communicate()[0] or b""
                self.reference_log = log.decode("utf-8", "replace")[-4000:]
        for thread in self._threads:
            thread.join(timeout=5)
        for name in self.expected:
            if name not in self.served:
                self.notes.append(f"speed check {name} was never served by the notebook: no speed points for it")
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- what the sandbox asks of a judge and gives it (`tfperf_lab.isolation.contract.Watcher`) -----------------------
    def sandbox_binds(self) -> tuple[pathlib.Path, str]:
        """The folder the sandbox mounts read-only at /grader, and the socket path its kernel sees there."""
        return self.folder / "link", "/grader/candidate.sock"

    def host_address(self) -> str:
        """The candidates' socket on the host: where a kernel run without a sandbox connects."""
        return str(self.candidate_address)

    def use_freezer(self, freezer: Freezing | None, why: str | None) -> None:
        """The job's freezer (a `tfperf_lab.isolation.cgroups.Freezer`), or None and why it cannot be frozen here (then no
        check is measured against the reference: the grading machine's fault). None and no why: the job has ended, and
        neither this judge nor another job's pausing it freezes or thaws it from now on."""
        with self._freezing:
            self._freezer = freezer
        if why is not None:
            self.cannot_freeze = why

    def seconds_paused(self) -> float:
        """How long other jobs' measurements (and the wait for this machine's turn) kept this job paused, a pause in
        progress included: the sandbox adds it to the notebook's time limit."""
        paused_at = self._paused_at  # read first: `_resume` adds to paused_seconds before it clears this
        return self.paused_seconds + (time.monotonic() - paused_at if paused_at is not None else 0.0)

    def progress(self, stream) -> None:
        """Follow the runner's ``start N`` / ``end N`` lines (in a thread): which cell a candidate may be served from."""
        def follow():
            for raw in stream:
                word, _, index = raw.decode("ascii", "replace").strip().partition(" ")
                with self._moved:
                    self.current = int(index) if word == "start" and index.isdigit() else None
                    self._moved.notify_all()
        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- the two sides ----------------------------------------------------------------------------------------------
    def _ensure_reference(self) -> str | None:
        """Start the reference process unless it runs already; None, or why it could not start."""
        with self._starting:
            if self._reference is None and not self._closed:
                try:
                    self._start_reference()
                except OSError as error:
                    return (f"not measured: the grader could not start its reference process ({type(error).__name__}: {error}). "
                            f"A problem of the grading machine, not of the notebook: tell your instructor")
        return None

    def _start_reference(self) -> None:
        env = dict(self._environment) | {GRADER_VARIABLE: str(self.reference_address), ROLE_VARIABLE: "baseline",
                                         "HOME": str(self.folder / "reference"), "TMPDIR": str(self.folder / "reference"),
                                         "MPLCONFIGDIR": str(self.folder / "reference" / ".matplotlib")}
        env.pop(RECORD_VARIABLE, None)
        argv = [str(self.source), *(["--cpus", ",".join(map(str, self.cpus))] if self.cpus else [])]
        try:  # forked from this process's zygote: TensorFlow already imported (`tfperf_lab.speed.zygote`)
            self._reference = zygote.spawn(argv, env=env, cwd=self.folder / "reference", log=self.folder / "reference.log")
            return
        except zygote.Unavailable:
            pass
        self._reference = subprocess.Popen([sys.executable, "-I", "-m", "tfperf_lab.speed.reference", *argv], env=env,
                                           cwd=self.folder / "reference", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                           start_new_session=True)

    def _accept_references(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._references.accept()
            except OSError:
                return
            side = _hello(connection, "baseline")
            if side is None:
                continue
            with self._ready:
                for name, earlier in list(self._waiting.items()):  # the reference moved on: the earlier check was skipped
                    earlier.close({"passed": False, "reason": "skipped"})
                    del self._waiting[name]
                self._waiting[side.name] = side
                self._ready.notify_all()

    def _accept_candidates(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._candidates.accept()
            except OSError:
                return
            side = _hello(connection, "candidate")
            if side is None:
                self.notes.append("a connection to the grader that did not speak its protocol was refused")
                continue
            refused = self._refusal(side)
            if refused:
                self.notes.append(f"speed check {side.name}: {refused}")
                side.close({"passed": False, "reason": refused})
                continue
            self.served.add(side.name)
            unavailable = self._ensure_reference()
            if unavailable:
                self._not_measured(side.name, unavailable, side, machine=True)
                continue
            self._judge(side)

    def _refusal(self, side: Side) -> str | None:
        name = side.name
        if name not in self.expected:
            return "not a graded speed check of this lesson: not measured"
        if name in self.served:
            return "served a second time: only the first run of its test cell is measured"
        window = self.windows.get(self.expected[name])
        # the runner writes "start N" before it sends the cell to the kernel: give the reading thread time to see it
        with self._moved:
            self._moved.wait_for(lambda: self.current == window, timeout=PROGRESS_SECONDS)
            if window is None or self.current != window:
                return "served from outside its own test cell: not measured (no speed points)"
        return None

    def _reference_side(self, name: str) -> Side | None:
        deadline = time.monotonic() + DEFAULTS.reference_seconds
        with self._ready:
            while name not in self._waiting:
                if self._closed or time.monotonic() > deadline or (self._reference and self._reference.poll() is not None):
                    return None
                if self._waiting:  # the reference waits at an earlier check the notebook never reached: release it
                    for earlier in list(self._waiting.values()):
                        earlier.close({"passed": False, "reason": "skipped"})
                    self._waiting.clear()
                self._ready.wait(timeout=1.0)
            return self._waiting.pop(name)

    # -- measuring -------------------------------------------------------------------------------------------------
    def _judge(self, candidate: Side) -> None:
        name = candidate.name
        reference = self._reference_side(name)
        if reference is None:
            self._not_measured(name, "not measured: the grader's reference process did not reach this check (a course problem: "
                                     "tell your instructor)", candidate, machine=True)
            return
        options = timing.CheckOptions.of(reference.hello.get("options") or {})
        if self.cannot_freeze and not options.own_baseline:
            self._not_measured(name, f"not measured: this grading machine cannot freeze the learner's sandbox while the reference "
                                     f"runs ({self.cannot_freeze}), so the two sides could not be timed apart. A problem of the "
                                     f"grading machine, not of the notebook: tell your instructor", candidate, reference, machine=True)
            return
        try:
            comparison = self._measure(reference, candidate, options)
            measured, first = 1, undecided_above(comparison)
            while (why := undecided_above(comparison)) and measured <= len(REMEASURE_AFTER):
                self._wait(REMEASURE_AFTER[measured - 1])
                comparison = self._measure(reference, candidate, options)
                measured += 1
        except Failed as failure:
            self._not_measured(name, str(failure), candidate, reference)
            return
        if why:  # never the answer's: the row is the machine's, graded again by the next plain `grade`
            self._not_measured(name, f"not decided: the grading machine could not confirm the speedup ({why}; measured "
                                     f"{measured} times). A problem of the grading machine, not of the notebook: it is graded "
                                     f"again", candidate, reference, machine=True)
            return
        if measured > 1:
            self.notes.append(f"speed check {name}: measured {measured} times: the first left it undecided ({first})")
        record = Record.of(name, comparison, technique=TECHNIQUE)
        self.records.append(record)
        verdict = {"passed": record.passed, "summary": comparison.summary()}
        candidate.close(verdict)
        reference.close(verdict)

    def _measure(self, reference: Side, candidate: Side, options: timing.CheckOptions) -> timing.Comparison:
        """One measurement of the check (`timer.measure`), in this machine's turn where the job shares cores with others
        (they are paused meanwhile); raises `Failed`."""
        alone = self.cpus is None  # sharing cores: measure alone, the other unpinned jobs paused
        with contextlib.ExitStack() as turn:
            if alone:
                turn.enter_context(_MEASURING)
                turn.enter_context(self._machine_turn())
                with _ACTIVE_LOCK:
                    others = [judge for judge in _ACTIVE if judge is not self and judge.cpus is None]
                for other in others:
                    other._pause()
                    turn.callback(other._resume)
            try:
                return timer.measure(reference, candidate, options, self._freezer, cpus=self.cpus)
            finally:
                self._thaw()

    def _wait(self, seconds: float) -> None:
        """Wait ``seconds`` before measuring again, out of the machine's turn (others measure meanwhile), this job
        frozen: its clocks stop (the runner sees the gap, the host adds it to its limit like a pause)."""
        began = time.monotonic()
        self._freeze()
        try:
            time.sleep(seconds)
        finally:
            self._thaw()
            self.paused_seconds += time.monotonic() - began

    @contextlib.contextmanager
    def _machine_turn(self):
        """This machine's turn to measure (`MACHINE_LOCK`); waiting for it stops this job's clocks like a pause does."""
        began = time.monotonic()
        with open(MACHINE_LOCK, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            self.paused_seconds += time.monotonic() - began
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _not_measured(self, name: str, reason: str, *sides: Side, machine: bool = False) -> None:
        """A check this judge gives no verdict on: the note the report shows, and the reason each waiting side hears;
        ``machine``: the grading machine's fault (the submission is graded again, never scored for it)."""
        self.notes.append(f"speed check {name}: {reason}")
        if machine:
            self.machine_faults.append(f"speed check {name}: {reason}")
        for side in sides:
            side.close({"passed": False, "reason": reason})

    def _pause(self) -> None:
        """Stop this job entirely (its sandbox and its reference process) while another judge measures; its clock stops
        too: the time paused is added back to its limits."""
        self._paused_at = time.monotonic()
        self._freeze()
        if self._reference is not None and self._reference.poll() is None:
            os.kill(self._reference.pid, signal.SIGSTOP)

    def _resume(self) -> None:
        if self._reference is not None and self._reference.poll() is None:
            os.kill(self._reference.pid, signal.SIGCONT)
        self._thaw()
        if self._paused_at is not None:
            self.paused_seconds += time.monotonic() - self._paused_at
            self._paused_at = None

    def _freeze(self) -> None:
        with self._freezing:
            if self._freezer is not None:
                try:
                    self._freezer.freeze()
                except cgroups.FreezeFailed as error:  # the job was left running; say so, never stop the grader
                    self.notes.append(f"pausing this job while another measured failed ({error})")

    def _thaw(self) -> None:
        with self._freezing:
            if self._freezer is not None:
                try:
                    self._freezer.thaw()
                except cgroups.FreezeFailed as error:
                    self.notes.append(f"resuming this job failed ({error})")

    def records_text(self) -> str:
        return "".join(record.to_json() + "\n" for record in self.records)
