"""Speed verdicts decided by the grader, outside the learner's kernel.

One `Judge` per graded submission. It listens on two Unix sockets: one reachable from the learner's sandbox, one from
a clean reference process (`tfperf_lab.reference`) that runs only the instructor's source (the cells tagged
``speed-fixture`` and the speed test cells). When the learner's kernel reaches a speed test cell, its
`tfperf.assert_speedup` connects and serves the candidate (`tfperf.link`); the reference process serves the baseline
from the same test cell, with settings (threshold, rounds, budget, tolerances) taken from the instructor's copy only.
The judge then runs paired rounds in alternating order, each a batch of calls on arguments drawn from a fresh seed it
chose, timed by its own clock from request to answer. While the baseline runs, the learner's sandbox is frozen (its
cgroup), so nothing the learner started can slow the baseline down. Every answer's output digests must match the
reference's on the same inputs. The median ratio, its bootstrap interval and the verdict come from this process and
become the `Record` the score stage uses; the kernel only hears the verdict.

A candidate is accepted only while the runner reports the speed check's own test cell executing, and only once.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import pickle
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from tfperf import timing
from tfperf.report import Record

from . import notebook

LINE_LIMIT = 1 << 20  # bytes in one answer: digests are a few numbers per call
HELLO_SECONDS = 30.0
PROGRESS_SECONDS = 10.0
BATCH_SECONDS = 120.0
REFERENCE_SECONDS = 600.0  # the reference reaching a check: its fixture cells run meanwhile
MIN_SAMPLE = 0.02  # seconds the slower side's batch should take (the check's sample_time, if longer)
MIN_FAST = 0.002  # seconds the faster side's batch takes at least, so messaging (~50 us a batch) stays a few percent of it
MAX_BATCH = 0.25  # seconds the slower side's batch may take, whatever the faster side needs
TECHNIQUE = "measured by the grader: its clock, a clean reference process, inputs it drew"


# One measurement at a time in this process: while a judge times its two sides, every other grading job it runs (their
# sandboxes and reference processes) is paused, so parallel workers never time their speed checks against each other.
_MEASURING = threading.Lock()
_ACTIVE: set = set()
_ACTIVE_LOCK = threading.Lock()


class _Side:
    """One connected server: the learner's kernel or the reference process."""

    def __init__(self, connection: socket.socket, hello: dict):
        self.connection = connection
        self.stream = connection.makefile("rwb")
        self.hello = hello
        self.name = str(hello.get("hello"))

    def send(self, message: dict) -> None:
        self.stream.write(json.dumps(message).encode() + b"\n")
        self.stream.flush()

    def batch(self, seed: int, calls: int, timeout: float = BATCH_SECONDS) -> tuple[float, list]:
        """Seconds from request to answer (this process's clock) and the answer's digests; raises _Failed."""
        self.connection.settimeout(timeout)
        began = time.perf_counter()
        self.send({"op": "batch", "seed": seed, "calls": calls})
        line = self.stream.readline(LINE_LIMIT)
        seconds = time.perf_counter() - began
        if not line.endswith(b"\n"):
            raise _Failed("no answer" if not line else "an answer too long to be digests")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise _Failed("an answer that is not a JSON object")
        if "error" in answer:
            raise _Failed(f"raised {str(answer['error'])[:300]}")
        digests = answer.get("digests")
        if not isinstance(digests, list) or len(digests) != calls:
            raise _Failed(f"answered {len(digests) if isinstance(digests, list) else 'no'} digests for {calls} calls")
        return seconds, digests

    def close(self, verdict: dict) -> None:
        try:
            self.connection.settimeout(5)
            self.send({"op": "verdict", **verdict})
        except OSError:
            pass
        for closing in (self.stream.close, self.connection.close):
            try:
                closing()
            except OSError:
                pass


class JudgeUnavailable(RuntimeError):
    """The judge could not start (its sockets or its reference process): the submission is not graded, and says why."""


class _Failed(Exception):
    """A side did not answer as the protocol asks (the message says how)."""


def _listener(path: pathlib.Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen(4)
    return server


def _hello(connection: socket.socket) -> dict | None:
    connection.settimeout(HELLO_SECONDS)
    try:
        line = connection.makefile("rb").readline(LINE_LIMIT)
        hello = json.loads(line)
    except (OSError, ValueError):
        return None
    return hello if isinstance(hello, dict) and isinstance(hello.get("hello"), str) else None


def _matches(a: list, b: list, rtol: float, atol: float) -> bool:
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if x.shape != y.shape:
        return False
    return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))


@dataclasses.dataclass
class Options:
    """A check's settings, from the instructor's test cell as the reference process runs it."""

    at_least: float
    labels: tuple[str, str] = ("baseline", "candidate")
    rtol: float = 1e-4
    atol: float = 1e-6
    warmup: int = 3
    min_rounds: int = 10
    max_rounds: int = 200
    budget: float = 5.0
    sample_time: float = MIN_SAMPLE
    confidence: float = 0.95

    @classmethod
    def of(cls, data: dict) -> "Options":
        known = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        if "labels" in values:
            values["labels"] = tuple(values["labels"])[:2]
        return cls(**values)


def batch_calls(fast: float, slow: float, sample_time: float = MIN_SAMPLE) -> int:
    """Calls per batch, from one call's seconds on each side: the slower side runs about ``sample_time`` (20 ms), as
    each side's sample does in the learner's self-check, unless the faster side would then run under MIN_FAST; never
    more than MAX_BATCH seconds of the slower side, never fewer than one call."""
    fast, slow = max(fast, 1e-7), max(slow, fast, 1e-7)
    wanted = max(math.ceil(max(sample_time, MIN_SAMPLE) / slow), math.ceil(MIN_FAST / fast))
    return max(1, min(wanted, math.floor(MAX_BATCH / slow)))


class Judge:
    """Speed verdicts for one submission; see the module docstring. Use as a context manager around the sandbox run."""

    def __init__(self, source: pathlib.Path, *, environment: dict[str, str], executed: dict):
        self.source = source
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
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="tfperf-judge-", dir="/tmp" if os.path.isdir("/tmp") else None))
        (self.folder / "link").mkdir()
        (self.folder / "reference").mkdir()
        self.candidate_address = self.folder / "link" / "candidate.sock"
        self.reference_address = self.folder / "reference.sock"
        self.records: list[Record] = []
        self.notes: list[str] = []
        self.served: set[str] = set()
        self.current: int | None = None  # index of the cell the runner is executing
        self.group = None  # the sandbox's cgroup, to freeze while the baseline runs
        self._environment = environment
        self._waiting: dict[str, _Side] = {}
        self._ready = threading.Condition()
        self._moved = threading.Condition()  # the runner's progress changed
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._reference: subprocess.Popen | None = None
        self.reference_log = ""

    # -- life cycle -----------------------------------------------------------------------------------------------
    def __enter__(self) -> "Judge":
        try:
            self._candidates = _listener(self.candidate_address)
            self._references = _listener(self.reference_address)
            self._start_reference()
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
        for target in (self._accept_references, self._accept_candidates):
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

    def sandbox_binds(self) -> tuple[pathlib.Path, str]:
        """The folder the sandbox mounts read-only at /grader, and the socket path its kernel sees there."""
        return self.folder / "link", "/grader/candidate.sock"

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
    def _start_reference(self) -> None:
        env = dict(self._environment) | {"TFPERF_GRADER": str(self.reference_address), "TFPERF_GRADER_ROLE": "baseline",
                                         "HOME": str(self.folder / "reference"), "TMPDIR": str(self.folder / "reference"),
                                         "MPLCONFIGDIR": str(self.folder / "reference" / ".matplotlib")}
        env.pop("TFPERF_RECORD", None)
        self._reference = subprocess.Popen([sys.executable, "-I", "-m", "tfperf_lab.reference", str(self.source)], env=env,
                                           cwd=self.folder / "reference", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                           start_new_session=True)

    def _accept_references(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._references.accept()
            except OSError:
                return
            hello = _hello(connection)
            if hello is None or hello.get("role") != "baseline":
                connection.close()
                continue
            side = _Side(connection, hello)
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
            hello = _hello(connection)
            if hello is None:
                connection.close()
                continue
            side = _Side(connection, hello)
            refused = self._refusal(side)
            if refused:
                self.notes.append(f"speed check {side.name}: {refused}")
                side.close({"passed": False, "reason": refused})
                continue
            self.served.add(side.name)
            self._judge(side)

    def _refusal(self, side: _Side) -> str | None:
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

    def _reference_side(self, name: str) -> _Side | None:
        deadline = time.monotonic() + REFERENCE_SECONDS
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
    def _judge(self, candidate: _Side) -> None:
        name = candidate.name
        reference = self._reference_side(name)
        if reference is None:
            reason = "not measured: the grader's reference process did not reach this check (a course problem: tell your instructor)"
            self.notes.append(f"speed check {name}: {reason}")
            candidate.close({"passed": False, "reason": reason})
            return
        options = Options.of(reference.hello.get("options") or {})
        _MEASURING.acquire()
        with _ACTIVE_LOCK:
            others = [judge for judge in _ACTIVE if judge is not self]
        for other in others:
            other._pause()
        try:
            comparison = self._measure(reference, candidate, options)
        except _Failed as failure:
            reason = str(failure)
            self.notes.append(f"speed check {name}: {reason}")
            candidate.close({"passed": False, "reason": reason})
            reference.close({"passed": False, "reason": reason})
            return
        finally:
            self._thaw()
            for other in others:
                other._resume()
            _MEASURING.release()
        record = Record.of(name, comparison, technique=TECHNIQUE)
        self.records.append(record)
        verdict = {"passed": record.passed, "summary": comparison.summary()}
        candidate.close(verdict)
        reference.close(verdict)

    def _pause(self) -> None:
        """Stop this job entirely (its sandbox and its reference process) while another judge measures."""
        self._freeze()
        if self._reference is not None and self._reference.poll() is None:
            os.kill(self._reference.pid, signal.SIGSTOP)

    def _resume(self) -> None:
        if self._reference is not None and self._reference.poll() is None:
            os.kill(self._reference.pid, signal.SIGCONT)
        self._thaw()

    def _freeze(self) -> None:
        if self.group is not None:
            self.group.freeze()

    def _thaw(self) -> None:
        if self.group is not None:
            self.group.thaw()

    def _measure(self, reference: _Side, candidate: _Side, options: Options) -> timing.Comparison:
        """Run the paired rounds in a process of its own (`_timer_main`), so no other thread of this grading process
        (another worker's nbgrader steps, a feedback page) can hold the interpreter's lock when an answer arrives and
        add its wait to the faster side's time; build the `Comparison` from what that process measured."""
        fds = (reference.connection.fileno(), candidate.connection.fileno())
        job = pickle.dumps({"fds": fds, "options": options, "group": self.group})
        try:  # the caller (_judge) thaws the sandbox afterwards, whatever happened here
            done = subprocess.run([sys.executable, "-I", "-m", "tfperf_lab.judge"], input=job, capture_output=True,
                                  pass_fds=fds, timeout=options.budget + 6 * BATCH_SECONDS, env=_timer_env())
        except subprocess.TimeoutExpired:
            raise _Failed("took longer than the check's time allows; not measured") from None
        try:
            result = json.loads(done.stdout)
        except ValueError:
            raise _Failed(f"could not be measured: the grader's timer stopped ({done.returncode}; a course problem: tell your instructor): "
                          f"{done.stderr.decode('utf-8', 'replace')[-300:]}") from None
        if "failed" in result:
            raise _Failed(result["failed"])
        metadata = {"grader": True, "frozen": self.group.freezer if self.group is not None else "none", "timer": "own process"}
        samples, warm = result["samples"], result["warm"]
        results = tuple(timing.TimingResult(options.labels[side], tuple(samples[side]), result["calls"], tuple(warm[side]), metadata)
                        for side in (0, 1))
        from tfperf import env as tf_env

        return timing.Comparison(results[0], results[1], tuple(x / y for x, y in zip(*samples)), tuple(result["ci"]), options.confidence,
                                 options.at_least, 0.05, result["elapsed"], tf_env.fingerprint())

    def records_text(self) -> str:
        return "".join(record.to_json() + "\n" for record in self.records)


# -- the timer: the paired rounds, in a process of its own -----------------------------------------------------------
def _timer_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key in ("PATH", "LANG", "LC_ALL", "TMPDIR")}


class _Rounds:
    """Paired, interleaved batches of both sides on seeds this process draws, timed by its clock, the learner's sandbox
    frozen (``group``) while the baseline runs."""

    def __init__(self, reference: _Side, candidate: _Side, options: Options, group):
        self.reference, self.candidate, self.options, self.group = reference, candidate, options, group

    def _timed(self, side: _Side, seed: int, calls: int, *, baseline: bool, what: str) -> tuple[float, list]:
        if baseline and self.group is not None:
            self.group.freeze()
        try:
            return side.batch(seed, calls)
        except (OSError, ValueError) as error:
            raise _Failed(f"{what} did not answer ({type(error).__name__})") from None
        except _Failed as failure:
            raise _Failed(f"{what} {failure}") from None
        finally:
            if baseline and self.group is not None:
                self.group.thaw()

    def pair(self, seed: int, calls: int, first: str) -> tuple[float, float]:
        """One batch of each side on the same seed, in the given order; checks the outputs; returns both times."""
        times, digests = {}, {}
        for role in (("baseline", "candidate") if first == "baseline" else ("candidate", "baseline")):
            side = self.reference if role == "baseline" else self.candidate
            what = "the reference" if role == "baseline" else "your code"
            times[role], digests[role] = self._timed(side, seed, calls, baseline=role == "baseline", what=what)
        for index, (want, got) in enumerate(zip(digests["baseline"], digests["candidate"])):
            if not _matches(got, want, self.options.rtol, self.options.atol):
                raise _Failed(f"your outputs differ from the reference's on the same inputs (call {index + 1} of a batch: "
                              f"digest {np.round(np.asarray(got, dtype=float)[:3], 6).tolist() if isinstance(got, list) else got} "
                              f"against {np.round(np.asarray(want, dtype=float)[:3], 6).tolist()}); not measured")
        return times["baseline"], times["candidate"]

    def run(self) -> dict:
        options, began = self.options, time.perf_counter()
        warm = ([], [])
        if options.warmup:
            b, c = self.pair(secrets.randbits(62), options.warmup, "baseline")
            warm = ([b / options.warmup], [c / options.warmup])
        singles = [self.pair(secrets.randbits(62), 1, order) for order in ("baseline", "candidate")]
        per_b, per_c = min(s[0] for s in singles), min(s[1] for s in singles)
        calls = batch_calls(min(per_b, per_c), max(per_b, per_c), options.sample_time)
        samples: tuple[list[float], list[float]] = ([], [])
        ci = (0.0, math.inf)
        for index in range(options.max_rounds):
            b, c = self.pair(secrets.randbits(62), calls, "baseline" if index % 2 == 0 else "candidate")
            samples[0].append(b / calls)
            samples[1].append(c / calls)
            if index + 1 < options.min_rounds:
                continue
            ratios = [x / y for x, y in zip(*samples)]
            ci = timing._bootstrap_ci(ratios, options.confidence, 0)
            if timing._decided(ci, options.at_least, 0.05) or time.perf_counter() - began > options.budget:
                break
        return {"samples": samples, "warm": warm, "calls": calls, "ci": ci, "elapsed": time.perf_counter() - began}


def _timer_main() -> None:
    """``python -I -m tfperf_lab.judge``: one measurement. Reads the pickled job (two socket descriptors, the options,
    the sandbox's freezer) from stdin, from the judge that started it; writes what it measured, or why not, as JSON."""
    job = pickle.loads(sys.stdin.buffer.read())
    sides = [_Side(socket.socket(fileno=fd), {"hello": "timer"}) for fd in job["fds"]]
    try:
        result = _Rounds(sides[0], sides[1], job["options"], job["group"]).run()
    except _Failed as failure:
        result = {"failed": str(failure)}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    _timer_main()
