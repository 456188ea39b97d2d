"""The grader's clock: the paired rounds of one speed check, in a process of its own.

`tfperf_lab.speed.judge` connects the two sides of a check (the learner's kernel, the clean reference process) and hands both
connections to `measure`, which runs ``python -I -m tfperf_lab.speed.timer``. That process draws a fresh seed for every
batch. The learner's kernel answers it first, each call's inputs drawn after the previous call's output moved the
generator (`tfperf.link`); the reference then runs the baseline on the same inputs in the same order, the learner's
sandbox frozen meanwhile, and every call's output digests must match. Each batch is timed from request to the last
byte of its answer with this process's clock, under one deadline, and the check as a whole has a hard bound (its
budget plus `GRACE`). A round in which either side waited for a CPU much longer than it usually does (`Disturbance`,
each round judged once) is not used. The rounds run in `tfperf.timing.paired_rounds`, the learner's self-check's loop
and decision rule, on blocks of rounds sized from the sizing batches (`Rounds.calibrated`). A process of its own, because a thread of the grading process would share the interpreter's lock with everything else
that process does (another worker's nbgrader steps, a feedback page), and that wait would land on whichever batch it
happened to hit.
"""
from __future__ import annotations

import json
import math
import statistics
import os
import pathlib
import pickle
import secrets
import socket
import struct
import subprocess
import sys
import time

import numpy as np

from tfperf import env as tf_env, link, timing

from ..isolation.cgroups import Freezer

BATCH_SECONDS = 60.0  # one batch, request to last byte of the answer, as a total (a trickled answer counts whole)
GRACE = 30.0  # seconds a check may run past its budget (warm-up with tracing, the last round): then it fails, alone
MIN_SAMPLE = timing.SAMPLE_TIME  # seconds the slower side's batch should take (the check's sample_time, if longer)
MIN_FAST = 0.002  # seconds the faster side's batch takes at least, so messaging (~50 us a batch) stays a few percent of it
MAX_BATCH = 0.25  # seconds the slower side's batch may take, whatever the faster side needs
CHECKED_CALLS = 4  # calls the reference spot-checks, untimed, in a batch the learner's kernel served both sides of
MIN_SPAN = 1.0  # seconds the timed rounds span at least, so one burst of a neighbour cannot cover a whole decision
CALIBRATIONS = 3  # batches at most that correct the batch size the single calls gave (`Rounds.calibrated`)
DISTURBED = 0.10  # a batch whose side waited for a CPU this much longer (share of its time) than that side usually does
REBASE_SECONDS = 5.0  # consecutive disturbed rounds that make a new usual wait (`Disturbance`): bursts last far less


class Failed(Exception):
    """A side did not answer as the protocol asks (the message says how)."""


class Side:
    """One connected server: the learner's kernel or the reference process (`tfperf.link` is the other end). Every
    message is read through `tfperf.link.decode` (size, depth, shape) with a deadline for the whole message."""

    def __init__(self, connection: socket.socket, hello: dict):
        self.connection = connection
        self.hello = hello
        self.name = str(hello.get("hello"))
        self._buffer = b""
        self.pid = peer_pid(connection)

    def waited(self) -> float | None:
        """Seconds this side's threads have spent waiting for a CPU so far (None where the kernel does not say)."""
        return run_delay(self.pid) if self.pid else None

    def send(self, message: dict) -> None:
        self.connection.sendall(link.encode(message))

    def receive(self, seconds: float) -> dict:
        """The next message, which must arrive whole within ``seconds``; raises Failed."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failed(f"did not answer within {seconds:g} s")
            if len(self._buffer) > link.LINE_LIMIT:
                raise Failed(f"sent a message longer than {link.LINE_LIMIT} bytes")
            self.connection.settimeout(left)
            try:
                chunk = self.connection.recv(1 << 16)
            except TimeoutError:
                raise Failed(f"did not answer within {seconds:g} s") from None
            except OSError as error:
                raise Failed(f"did not answer ({type(error).__name__})") from None
            if not chunk:
                raise Failed("closed the connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return link.decode(line + b"\n")
        except link.ProtocolError as error:
            raise Failed(f"sent {error}") from None

    def batch(self, seed: int, calls: int, timeout: float = BATCH_SECONDS, which: str = "served") -> tuple[float, list]:
        """Seconds from request to answer (this process's clock) and the answer's digests; raises Failed. ``which`` asks
        a learner's kernel for the check's baseline instead of its candidate (checks with ``own_baseline``)."""
        began = time.perf_counter()
        self.send({"op": "batch", "seed": seed, "calls": calls, "which": which})
        answer = self.receive(timeout)
        seconds = time.perf_counter() - began
        return seconds, self._digests(answer, calls)

    def follow(self, seed: int, digests: list, timeout: float = BATCH_SECONDS, which: str = "served") -> tuple[float, list]:
        """Seconds and digests of a batch on another side's inputs, in its order (the other side's ``digests`` move the
        generator): the baseline's timed batch."""
        began = time.perf_counter()
        self.send({"op": "follow", "seed": seed, "digests": digests, "which": which})
        answer = self.receive(timeout)
        seconds = time.perf_counter() - began
        return seconds, self._digests(answer, len(digests))

    def replay(self, seed: int, digests: list, positions: list[int], timeout: float = BATCH_SECONDS) -> dict[int, list]:
        """The reference's own digests at ``positions`` of another side's batch, on that batch's inputs (untimed)."""
        self.send({"op": "replay", "seed": seed, "digests": digests, "positions": positions})
        answer = self.receive(timeout)
        mine = answer.get("digests")
        if "error" in answer or not isinstance(mine, dict) or set(mine) != {str(p) for p in positions}:
            raise Failed(f"could not replay a batch ({str(answer.get('error', 'wrong positions'))[:200]})")
        return {int(key): value for key, value in mine.items()}

    @staticmethod
    def _digests(answer: dict, calls: int) -> list:
        try:
            return link.digests_of(answer, calls)
        except RuntimeError as error:
            raise Failed(f"raised {error}") from None
        except link.ProtocolError as error:
            raise Failed(str(error)) from None

    def close(self, verdict: dict) -> None:
        try:
            self.connection.settimeout(5)
            self.send({"op": "verdict", **verdict})
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass


def peer_pid(connection: socket.socket) -> int | None:
    """The process at the other end of a Unix socket, as the kernel reports it (SO_PEERCRED): the side cannot forge it."""
    try:
        pid, _, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except (OSError, AttributeError):
        return None
    return pid or None


def run_delay(pid: int) -> float | None:
    """Seconds the threads of process ``pid`` have waited on a run queue (runnable, no CPU free): /proc's schedstat,
    written by the kernel. A neighbour that takes the CPU away shows here, not in the process's own CPU time."""
    total, found = 0, False
    try:
        tasks = list(pathlib.Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[1])
            found = True
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9 if found else None


class Disturbance:
    """Which rounds to keep, each judged once, when it arrives, and never again: a round is dropped when either side's
    batch waited for a CPU more than `DISTURBED` of its time beyond that side's usual wait, the median of the batches
    timed before the loop (the warm-up and the sizing batches, `Rounds.calibrated`). A steady load raises every batch's wait alike and drops nothing; a burst
    that lands on some batches drops those, however long it lasts. (The rule before sign-cs-2 compared every round
    with the running median of all rounds, and decided every earlier round again each time: a burst longer than half
    the rounds so far lifted the median and kept all of its rounds.) Only when `REBASE_SECONDS` of consecutive rounds
    are all disturbed has the machine changed (a load that began after the sizing): their median wait becomes the usual
    one for the rounds after them; they stay dropped."""

    def __init__(self, before: list[tuple[float | None, float | None]]):
        self.usual = [_median([w[side] for w in before if w[side] is not None]) for side in (0, 1)]
        self.flags: list[bool] = []
        self._run: list[tuple[tuple[float | None, float | None], float]] = []

    def judge(self, waited: tuple[float | None, float | None], seconds: float) -> bool:
        """Whether the round just timed (both sides' CPU wait shares, its seconds) is kept; recorded in ``flags``."""
        ok = all(w is None or u is None or w <= u + DISTURBED for w, u in zip(waited, self.usual))
        if ok:
            self._run = []
        else:
            self._run.append((waited, seconds))
            if sum(spent for _, spent in self._run) >= REBASE_SECONDS:
                self.usual = [_median([w[side] for w, _ in self._run if w[side] is not None]) for side in (0, 1)]
                self._run = []
        self.flags.append(ok)
        return ok


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def matches(a: list, b: list, rtol: float, atol: float) -> bool:
    """Whether two answers' digests agree within the check's tolerances."""
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if x.shape != y.shape:
        return False
    return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))


def batch_calls(fast: float, slow: float, sample_time: float = MIN_SAMPLE) -> int:
    """Calls per batch, from one call's seconds on each side: the slower side runs about ``sample_time`` (20 ms), as
    each side's sample does in the learner's self-check, unless the faster side would then run under MIN_FAST; never
    more than MAX_BATCH seconds of the slower side, never fewer than one call."""
    fast, slow = max(fast, 1e-7), max(slow, fast, 1e-7)
    wanted = max(math.ceil(max(sample_time, MIN_SAMPLE) / slow), math.ceil(MIN_FAST / fast))
    return max(1, min(wanted, math.floor(MAX_BATCH / slow)))


class Rounds:
    """Paired, interleaved batches of both sides on seeds this process draws, timed by its clock, the learner's sandbox
    frozen (``freezer``) while the baseline runs."""

    def __init__(self, reference: Side, candidate: Side, options: timing.CheckOptions, freezer: Freezer | None,
                 grace: float = GRACE):
        self.reference, self.candidate, self.options, self.freezer = reference, candidate, options, freezer
        self.bound = options.budget + grace  # the check's hard bound, from its first request
        self.round_seconds: float | None = None  # both sides' seconds per call in the last sizing batch (`calibrated`)
        self.deadline = time.monotonic() + self.bound

    def _left(self, what: str) -> float:
        """Seconds the next batch may take: the batch limit, or what is left of the check's hard bound."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Failed(f"{what} took longer than the check's {self.bound:g} s: not measured")
        return min(BATCH_SECONDS, left)

    def _timed(self, side: Side, seed: int, calls: int, *, what: str, follow: list | None = None, which: str = "served",
               freeze: bool = False) -> tuple[float, list, float | None]:
        """(seconds, digests, share of those seconds the side waited for a CPU) of one batch: a chained batch from
        ``seed``, or one that follows another side's digests. ``freeze``: the learner's sandbox is frozen meanwhile."""
        freeze = freeze and self.freezer is not None
        if freeze:
            self.freezer.freeze()
        try:
            before = side.waited()
            if follow is None:
                seconds, digests = side.batch(seed, calls, timeout=self._left(what), which=which)
            else:
                seconds, digests = side.follow(seed, follow, timeout=self._left(what), which=which)
            after = side.waited()
            waited = (after - before) / seconds if before is not None and after is not None and seconds > 0 else None
            return seconds, digests, waited
        except OSError as error:
            raise Failed(f"{what} did not answer ({type(error).__name__})") from None
        except Failed as failure:
            if time.monotonic() >= self.deadline:
                raise Failed(f"{what} took longer than the check's {self.bound:g} s: not measured") from None
            raise Failed(f"{what} {failure}") from None
        finally:
            if freeze:
                self.freezer.thaw()

    def pair(self, seed: int, calls: int) -> tuple[float, float, tuple[float | None, float | None]]:
        """One batch of each side: the candidate's first, each call's inputs chained on its previous output; then the
        baseline on the same inputs in the same order (timed, the learner's sandbox frozen), so a training step's state
        moves in step on both sides. Every call's outputs must match. Batches alternate C, B, C, B: each follows one of
        the other side. Returns both times and both sides' CPU waits. With ``own_baseline`` the learner's kernel serves
        the baseline too, and the reference spot-checks both batches untimed."""
        c_time, c_digests, c_wait = self._timed(self.candidate, seed, calls, what="your code")
        if self.options.own_baseline:
            b_time, b_digests, b_wait = self._timed(self.candidate, seed, calls, what="your code", follow=c_digests, which="baseline")
            self._verify(seed, calls, c_digests)
            self._verify(seed, calls, b_digests)
        else:
            b_time, b_digests, b_wait = self._timed(self.reference, seed, calls, what="the reference", follow=c_digests, freeze=True)
            self._compare(range(calls), c_digests, b_digests)
        return b_time, c_time, (b_wait, c_wait)

    def _verify(self, seed: int, calls: int, answered: list) -> None:
        """The reference replays a batch the learner's kernel answered, on its inputs, at positions drawn now (untimed)."""
        positions = sorted(secrets.SystemRandom().sample(range(calls), min(calls, CHECKED_CALLS)))
        try:
            wanted = self.reference.replay(seed, answered, positions, timeout=self._left("the reference"))
        except Failed as failure:
            raise Failed(f"the reference {failure}") from None
        self._compare(positions, answered, [wanted.get(i) for i in range(calls)])

    def _compare(self, positions, got_all: list, want_all: list) -> None:
        for index in positions:
            got, want = got_all[index], want_all[index]
            if not matches(got, want, self.options.rtol, self.options.atol):
                raise Failed(f"your outputs differ from the reference's on the same inputs: not timed, no speed points (call "
                             f"{index + 1} of a batch: digest {np.round(np.asarray(got, dtype=float)[:3], 6).tolist()} against "
                             f"{np.round(np.asarray(want, dtype=float)[:3], 6).tolist()})")

    def calibrated(self, calls: int, waits: list | None = None) -> int:
        """Batch size, corrected on batches of the size the single calls gave (not used for the verdict). A single call's
        time includes the batch's messaging and, for the baseline, freezing the learner's sandbox: for calls of tens of
        microseconds that overhead is most of it, and batches sized on it ran 1-4 ms, which one time slice of a neighbour
        on the core could double (lesson 01's check, both cores busy: 3 of 30 references failed). The size only grows,
        and only when a batch says the estimate was off by more than half: calls that take milliseconds keep theirs."""
        for _ in range(CALIBRATIONS):
            b, c, waited = self.pair(secrets.randbits(62), calls)
            if waits is not None:
                waits.append(waited)
            self.round_seconds = (b + c) / calls  # a round's seconds per call: the blocks' size comes from it
            resized = batch_calls(min(b, c) / calls, max(b, c) / calls, self.options.sample_time)
            if resized <= calls * 1.5:
                break
            calls = resized
        return calls

    def run(self) -> dict:
        """Warm-up, one call of each side to size the batches (`calibrated` corrects the size), then paired rounds until the interval of the kept rounds'
        ratios decides the threshold, the rounds span at least `MIN_SPAN` and there are at least ``min_rounds`` kept
        rounds, or the budget runs out. Rounds a burst disturbed (`Disturbance`, each judged once against the waits of
        the batches before the loop) are measured but not used."""
        options, began = self.options, time.perf_counter()
        warm = ([], [])
        before: list[tuple[float | None, float | None]] = []  # the CPU waits of the warm-up and sizing batches
        if options.warmup:
            b, c, waited = self.pair(secrets.randbits(62), options.warmup)
            warm = ([b / options.warmup], [c / options.warmup])
            before.append(waited)
        singles = [self.pair(secrets.randbits(62), 1) for _ in range(2)]  # too short for a wait share that means much
        per_b, per_c = min(s[0] for s in singles), min(s[1] for s in singles)
        calls = self.calibrated(batch_calls(min(per_b, per_c), max(per_b, per_c), options.sample_time), before)
        disturbance = Disturbance(before)
        waits: list[tuple[float | None, float | None]] = []

        def pair(index: int) -> tuple[float, float]:
            started = time.perf_counter()
            b, c, waited = self.pair(secrets.randbits(62), calls)
            waits.append(waited)
            disturbance.judge(waited, time.perf_counter() - started)
            return b / calls, c / calls

        rounds = timing.paired_rounds(pair, threshold=options.threshold, min_rounds=options.min_rounds, max_rounds=options.max_rounds,
                                      budget=max(0.0, options.budget - (time.perf_counter() - began)), confidence=options.confidence,
                                      clock=time.perf_counter, keep=lambda count: disturbance.flags[:count], min_span=MIN_SPAN,
                                      round_seconds=self.round_seconds * calls if self.round_seconds else None)
        return {"samples": rounds.samples, "warm": warm, "calls": calls, "ci": rounds.ci, "elapsed": time.perf_counter() - began,
                "discarded": rounds.dropped, "dropped": [list(d) for d in rounds.rounds_dropped], "waits": [list(w) for w in waits]}


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key in ("PATH", "LANG", "LC_ALL", "TMPDIR")}


def measure(reference: Side, candidate: Side, options: timing.CheckOptions, freezer: Freezer | None,
            cpus: tuple[int, ...] | None = None) -> timing.Comparison:
    """Run the paired rounds in a process of its own (`main`) on the two connections, ``freezer`` the learner's sandbox's
    (a `tfperf_lab.isolation.cgroups.Freezer`, pickled to that process) to freeze it while the baseline runs (or None);
    build the `Comparison` from what that process measured. Raises `Failed` when a side misbehaved or the timer could
    not measure. The hard bound's `GRACE` is this process's, read when the check starts, and travels with the job."""
    before = tf_env.cpu_times()
    fds = (reference.connection.fileno(), candidate.connection.fileno())
    grace = GRACE  # read now: a test may shorten it for the checks it grades
    job = pickle.dumps({"fds": fds, "options": options, "freezer": freezer, "cpus": cpus, "grace": grace})
    try:
        done = subprocess.run([sys.executable, "-I", "-m", "tfperf_lab.speed.timer"], input=job, capture_output=True,
                              pass_fds=fds, timeout=options.budget + grace + 10, env=_environment())
    except subprocess.TimeoutExpired:
        raise Failed("took longer than the check's time allows; not measured") from None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise Failed(f"could not be measured: the grader's timer stopped ({done.returncode}; a course problem: tell your instructor): "
                     f"{done.stderr.decode('utf-8', 'replace')[-300:]}") from None
    if "failed" in result:
        raise Failed(result["failed"])
    metadata = {"grader": True, "frozen": "cgroup" if freezer is not None else "none", "timer": "own process",
                "disturbed_rounds": result.get("discarded", 0)}
    samples, warm = result["samples"], result["warm"]
    results = tuple(timing.TimingResult(options.labels[side], tuple(samples[side]), result["calls"], tuple(warm[side]), metadata)
                    for side in (0, 1))
    return timing.Comparison(results[0], results[1], tuple(x / y for x, y in zip(*samples)), tuple(result["ci"]), options.confidence,
                             options.threshold, timing.TOLERANCE, result["elapsed"], tf_env.fingerprint(before),
                             dropped=tuple((int(i), float(b), float(c)) for i, b, c in result.get("dropped", [])))


def main() -> None:
    """``python -I -m tfperf_lab.speed.timer``: one measurement. Reads the pickled job (two socket descriptors, the options,
    the sandbox's freezer) from stdin, from the judge that started it; writes what it measured, or why not, as JSON."""
    job = pickle.loads(sys.stdin.buffer.read())
    if job.get("cpus"):  # the grading job's own cores
        os.sched_setaffinity(0, set(job["cpus"]))
    sides = [Side(socket.socket(fileno=fd), {"hello": "timer"}) for fd in job["fds"]]
    try:
        result = Rounds(sides[0], sides[1], job["options"], job["freezer"], job["grace"]).run()
    except Failed as failure:
        result = {"failed": str(failure)}
    except Exception as error:  # noqa: BLE001  (whatever a side sent, the judge gets an answer it can read)
        result = {"failed": f"could not be measured ({type(error).__name__}: {str(error)[:200]})"}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
