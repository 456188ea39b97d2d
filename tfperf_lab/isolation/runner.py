"""Inside the sandbox: execute one notebook as nbgrader's ``Execute`` does and write the executed copy.

``python -m tfperf_lab.isolation.runner IN OUT --limits JSON --cwd DIR`` (the job's `Limits`, as the sandbox was given them). Exit status 0 when the
notebook ran to its end or to its time limit (cells may have failed: that is the grade's business), 3 when the kernel
died; OUT is written either way. Nothing here is trusted by the host: the host reads OUT back with size limits, caps
and sanitizes it, and scores it itself.

A time limit never takes points already earned: the runner holds the notebook's limit itself (`Budget`, `_Watch`), a
`reserve` before the host's hard kill, so the cell that uses it up is interrupted and marked (``NotebookTimeLimit``),
the cells after it are not run (``NotRun``), and every cell before it keeps its outputs. A kernel that dies likewise
marks its cell (``KernelDied``) and the cells after it (``NotRun``).

It drives nbclient directly with nbgrader's execution settings (errors allowed, a cell interrupted at its time limit
gets a ``CellTimeoutError`` output, an error reply with no error output gets one, history in memory) instead of
importing nbgrader: a second less of start-up in every sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import sys
import threading
import time

from typing import Callable

from . import outputs
from .contract import Limits

# nbgrader's Execute.error_on_timeout, so the host reads a timed-out cell the same way
TIMEOUT_ERROR = {"ename": "CellTimeoutError", "evalue": "",
                 "traceback": ["\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"]}


# written before anything else, beside OUT: the sandbox started this runner (without it, a failed run is the machine's)
STARTED = "started"

# what the runner writes into the cells a time limit or a dead kernel stopped (read by tfperf_lab.grading.score)
NOTEBOOK_LIMIT = "NotebookTimeLimit"  # the cell the notebook's time limit ran out in
NOT_RUN = "NotRun"  # a cell after it, or after the cell the kernel died in
KERNEL_DIED = "KernelDied"  # the cell that was running when the kernel died


def reserve(wall_seconds: float) -> float:
    """Seconds of the notebook's limit the runner keeps for itself: to interrupt the last cell (and end its kernel when
    the interrupt does not stop it), then write the executed notebook, all before the host's hard kill; they also cover
    the sandbox's start before this process counts."""
    return max(5.0, 0.05 * wall_seconds)


class Budget:
    """The time the notebook's cells may take: ``seconds`` from ``started`` on ``clock``, moved on by every pause.

    The judge freezes the whole job, this process included, while other jobs' speed checks are timed, and the host adds
    that time to its own limit; this process sees a pause as a gap between two ticks (`tick`, a daemon thread's
    every `TICK` s from `start` on) far longer than a tick (over `GAP`), and adds it likewise. A pause shorter than
    `GAP` is not seen (the host adds it: the `reserve` covers that).
    """

    TICK = 0.1
    GAP = 1.0

    def __init__(self, seconds: float, *, started: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.seconds = seconds
        self.started = clock() if started is None else started
        self.paused = 0.0
        self._last = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()

    @classmethod
    def of(cls, wall_seconds: float, *, started: float | None = None) -> "Budget":
        """The cells' time of a notebook limited to ``wall_seconds``: all of it but the runner's `reserve`."""
        return cls(wall_seconds - reserve(wall_seconds), started=started)

    def start(self) -> "Budget":
        """Tick in a daemon thread until `stop`: from now on a pause of the whole process is seen."""
        def ticking():
            while not self._stop.wait(self.TICK):
                self.tick()

        threading.Thread(target=ticking, name="notebook-budget", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def tick(self) -> None:
        """Count the time since the last tick as a pause when it is over `GAP` (the process was frozen meanwhile)."""
        with self._lock:
            now = self.clock()
            if now - self._last > self.GAP:
                self.paused += now - self._last - self.TICK
            self._last = now

    def left(self) -> float:
        """Seconds left (negative: over); a pause that just ended is counted first."""
        self.tick()
        return self.started + self.seconds + self.paused - self.clock()


def _name(cell, index: int) -> str:
    """A cell as the grade names it: its nbgrader grade_id, else its id, else its position."""
    return (cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id") or f"#{index}")


def _error(ename: str, evalue: str) -> dict:
    from nbformat import from_dict

    return from_dict({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"\x1b[0;31m{ename}\x1b[0m: {evalue}"]})


class _Watch:
    """The notebook's time limit (a `Budget`) over the cells nbclient runs, through nbclient's cell hooks and a daemon
    thread (the watchdog): when the budget runs out while a cell runs, the kernel is interrupted (SIGINT to its process
    group, as nbclient's own interrupt); a cell still running ``grace`` s later has its kernel killed. From then on every
    code cell nbclient reaches is emptied before it runs (`cell_start`); `finish` puts their sources back and writes
    what happened into the cells."""

    def __init__(self, nb, budget: Budget | None, *, wall_seconds: float, client=None):
        self.nb, self.budget, self.wall_seconds, self.client = nb, budget, wall_seconds, client
        self.grace = min(10.0, reserve(wall_seconds) / 2)
        self.lock = threading.Lock()
        self.running: int | None = None  # the cell the kernel is executing
        self.last: int | None = None  # the last cell executed to its end
        self.interrupted: int | None = None  # the cell the budget ran out in (interrupted)
        self.killed = False  # its kernel was killed: the interrupt did not stop it
        self.over = False  # the budget ran out: no cell runs any more
        self.held: dict[int, str] = {}  # cells emptied so that they do not run: index -> source
        self.kernel: tuple[int | None, int | None] = (None, None)  # the kernel's pid and process group
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="notebook-time-limit", daemon=True)

    def start(self) -> "_Watch":
        if self.budget is not None:  # without one (the course report's runs) only a dead kernel is written down
            self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._done.wait(Budget.TICK):
            left = self.budget.left()
            if left > 0:
                continue
            with self.lock:
                if self.running is None:
                    continue
                if self.interrupted != self.running:
                    self.interrupted, self.over = self.running, True
                    self._signal(signal.SIGINT)
                elif not self.killed and left <= -self.grace:
                    self.killed = True
                    self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        pid, group = self.kernel
        try:
            if group:
                os.killpg(group, signum)
            elif pid:
                os.kill(pid, signum)
        except OSError:
            pass  # already gone: nbclient reports it

    def _quick_shutdown(self) -> None:
        """The notebook stops here: its kernel is shut down without nbclient's graceful wait."""
        if self.client is not None:
            try:
                self.client.shutdown_kernel = "immediate"
            except Exception:  # noqa: BLE001 - a client without the setting (tests' stand-ins)
                pass

    # nbclient's hooks (run in its event loop)
    def cell_start(self, cell, cell_index, **_) -> None:
        """Every cell, before nbclient decides whether it runs: once the budget ran out, a code cell is emptied."""
        if cell.get("cell_type") != "code" or not str(cell.get("source", "")).strip():
            return
        if not self.over and (self.budget is None or self.budget.left() > 0):
            return
        with self.lock:
            self.over = True
            self.held[cell_index] = cell.source
            cell.source = ""
        self._quick_shutdown()

    def cell_execute(self, cell, cell_index, **_) -> None:
        with self.lock:
            if self.kernel == (None, None) and self.client is not None:
                provisioner = getattr(getattr(self.client, "km", None), "provisioner", None)
                self.kernel = (getattr(provisioner, "pid", None), getattr(provisioner, "pgid", None))
            self.running = cell_index

    def cell_executed(self, cell, cell_index, execute_reply, **_) -> None:
        with self.lock:
            self.running, self.last = None, cell_index
            stopped = self.interrupted == cell_index and (execute_reply or {}).get("content", {}).get("status") == "error"
        if stopped:  # it was interrupted (one that ended on its own as the budget ran out keeps what it did)
            self._mark_limit(cell, cell_index, "")
            self._quick_shutdown()

    def _mark_limit(self, cell, index: int, how: str) -> None:
        cell.outputs = [o for o in cell.get("outputs", []) if not (o.get("output_type") == "error" and o.get("ename") in
                                                                   ("KeyboardInterrupt", "CellTimeoutError"))]
        cell.outputs.append(_error(NOTEBOOK_LIMIT, f"the notebook's {self.wall_seconds:g} s were used up in this cell{how}: "
                                                   "it was stopped, and the cells after it were not run"))

    def finish(self, died: bool) -> str | None:
        """After nbclient returned (``died``: it raised DeadKernelError): the emptied cells get their sources back, and
        the cells that did not run, and the one a limit or a dead kernel stopped, say so. Returns what stopped the
        notebook, or None when it ran to its end."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)
        cells = self.nb.cells
        with self.lock:
            for index, source in self.held.items():
                cells[index].source = source
            running = self.running
        at = running if running is not None else self.last  # the cell the notebook stopped in
        named = _name(cells[at], at) if at is not None else None
        if died and self.killed and running is not None and running == self.interrupted:
            self._mark_limit(cells[running], running, " (it did not stop when interrupted, so its kernel was ended)")
            died = False
        elif died and running is not None:
            cells[running].outputs = list(cells[running].get("outputs", [])) + [
                _error(KERNEL_DIED, "the kernel died while this cell ran (os._exit, a crash or out of memory)")]
        if died:
            why = f"not run: the kernel died in cell {named}" if named else "not run: the kernel died before the first cell ran"
            stopped = why.removeprefix("not run: ")
            skipped = [i for i, cell in enumerate(cells) if (at is None or i > at) and cell.get("cell_type") == "code"
                       and str(cell.get("source", "")).strip()]
        elif self.over:
            where = f"cell {_name(cells[self.interrupted], self.interrupted)}" if self.interrupted is not None else (
                f"cell {named}" if named else "the kernel's start")
            why = f"not run: the notebook's time limit ({self.wall_seconds:g} s) was used up in {where}"
            stopped = f"the notebook's time limit ({self.wall_seconds:g} s) ran out in {where}"
            after = self.interrupted if self.interrupted is not None else at
            skipped = sorted(set(self.held) | {i for i, cell in enumerate(cells) if after is not None and i > after
                                               and cell.get("cell_type") == "code" and str(cell.get("source", "")).strip()})
        else:
            return None
        for index in skipped:
            cells[index].outputs = [_error(NOT_RUN, why)]
            cells[index].execution_count = None
        return stopped


def _record_unreported_error(cell, execute_reply, **_) -> None:
    """nbgrader's Execute.on_cell_executed: an error reply whose error has no output (a timeout) gets one."""
    content = execute_reply.get("content", {})
    if content.get("status") == "error" and not any(o.get("output_type") == "error" and o.get("ename") == content.get("ename")
                                                    for o in cell.get("outputs", [])):
        cell.setdefault("outputs", []).append({"output_type": "error", "ename": content.get("ename", "Error"),
                                               "evalue": content.get("evalue", ""), "traceback": content.get("traceback") or []})


def execute(nb, *, limits: Limits, cwd: str, env: dict | None = None,
            on_start: Callable[[int], None] | None = None, on_end: Callable[[int, dict], None] | None = None,
            budget: Budget | None = None) -> int:
    """Execute ``nb`` (a NotebookNode) in place, every cell in order, in a Python kernel of its own started in ``cwd``
    (with ``env``, else this process's environment): the one way the tool runs a notebook.

    nbgrader's execution settings: errors allowed, a cell interrupted at ``limits.cell_seconds`` gets a ``CellTimeoutError``
    output, an error reply without an error output gets one, the kernel's history kept in memory. ``on_start(index)``
    and ``on_end(index, cell)`` are called around each cell. With a ``budget`` (the sandbox's runner: `Budget.of` the
    notebook's limit), the cell it runs out in is stopped (`_Watch`) and the cells after it are not run. When the kernel
    dies, its cell and the cells after it say so and the notebook is kept. Returns 0, or 3 when the kernel died.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    watch = _Watch(nb, budget, wall_seconds=limits.wall_seconds)

    def start(cell, cell_index, **_):
        watch.cell_start(cell, cell_index)

    def started(cell, cell_index, **_):
        watch.cell_execute(cell, cell_index)
        if on_start is not None:
            on_start(cell_index)

    def executed(cell, cell_index, execute_reply, **_):
        _record_unreported_error(cell, execute_reply)
        watch.cell_executed(cell, cell_index, execute_reply)
        if on_end is not None:
            on_end(cell_index, cell)

    client = NotebookClient(nb, timeout=limits.cell_seconds, startup_timeout=limits.startup_seconds, kernel_name="python3",
                            allow_errors=True, interrupt_on_timeout=True, raise_on_iopub_timeout=True,
                            # a cell's outputs may arrive after its reply: under load, or when the job was paused while
                            # another measured (nbclient's own 4 s failed a whole notebook in CI); a cell's limit, not 4 s
                            iopub_timeout=limits.cell_seconds,
                            error_on_timeout=TIMEOUT_ERROR, extra_arguments=["--HistoryManager.hist_file=:memory:"],
                            on_cell_start=start, on_cell_execute=started, on_cell_executed=executed,
                            resources={"metadata": {"path": cwd}})
    watch.client = client
    watch.start()
    died = None
    try:
        client.execute(**({"env": env} if env is not None else {}))
    except DeadKernelError as error:
        died = error
    finally:
        reason = watch.finish(died=died is not None)
    if reason is not None:
        print(f"stopped: {reason}", file=sys.stderr)
    if died is not None and not (watch.killed and watch.over):  # a kernel the runner ended at the limit did not die
        print(f"DeadKernelError: {died}", file=sys.stderr)
        return 3
    return 0


def _not_traceable() -> None:
    """No process of the same user may trace this one or read its memory and descriptors (Linux PR_SET_DUMPABLE 0)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        except (OSError, AttributeError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tfperf_lab.isolation.runner")
    parser.add_argument("notebook")
    parser.add_argument("out")
    parser.add_argument("--limits", type=Limits.from_json, required=True, help="the job's Limits (Limits.to_json)")
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--progress", type=int, default=None, help="a pipe to the grader: 'start N' / 'end N' around each cell")
    args = parser.parse_args(argv)
    _not_traceable()
    pathlib.Path(args.out).with_name(STARTED).write_text("the runner started\n", encoding="ascii")  # before any learner code

    began = time.monotonic()
    # the host's limit counted from a moment earlier (the sandbox's start): `reserve` covers it
    budget = Budget.of(args.limits.wall_seconds, started=began).start()
    import nbformat

    __import__("nbclient")  # here, so the timings below split the imports from the kernel's run

    imported = time.monotonic()
    nb = nbformat.reads(pathlib.Path(args.notebook).read_text(encoding="utf-8"), as_version=4)
    on_start = on_end = None
    if args.progress is not None:
        progress = open(args.progress, "w", buffering=1, encoding="ascii")
        os.set_inheritable(args.progress, False)  # the kernel this runner starts must not write to it
        on_start = lambda index: progress.write(f"start {index}\n")  # noqa: E731
        on_end = lambda index, cell: progress.write(f"end {index}\n")  # noqa: E731
    status = execute(nb, limits=args.limits, cwd=args.cwd,
                     on_start=on_start, on_end=on_end, budget=budget)
    budget.stop()
    executed = time.monotonic()
    outputs.cap(nb, text_bytes=args.limits.sandbox_text_bytes, data_bytes=args.limits.sandbox_data_bytes, by="in the sandbox")
    pathlib.Path(args.out).write_text(json.dumps(nb), encoding="utf-8")
    pathlib.Path(args.out).with_name("timings.json").write_text(
        json.dumps({"runner_imports": imported - began, "kernel_and_cells": executed - imported}), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
