"""The grader's clock: the paired rounds of one speed check, in a process of its own.

`tfperf_lab.judge` connects the two sides of a check (the learner's kernel, the clean reference process) and hands both
connections to `measure`, which runs ``python -I -m tfperf_lab.timer``. That process draws a fresh seed for every
batch, asks both sides for the same batch in alternating order, times each from request to answer with its own clock,
freezes the learner's sandbox while the baseline runs, and checks that the candidate's output digests match the
reference's. It stops when the bootstrap interval of the paired ratios decides the threshold (`tfperf.timing`'s rule,
the same as the learner's self-check) or the check's budget runs out. A process of its own, because a thread of the
grading process would share the interpreter's lock with everything else that process does (another worker's nbgrader
steps, a feedback page), and that wait would land on whichever batch it happened to hit.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pickle
import secrets
import socket
import subprocess
import sys
import time

import numpy as np

from tfperf import env as tf_env
from tfperf import timing

LINE_LIMIT = 1 << 20  # bytes in one answer: digests are a few numbers per call
BATCH_SECONDS = 120.0
MIN_SAMPLE = 0.02  # seconds the slower side's batch should take (the check's sample_time, if longer)
MIN_FAST = 0.002  # seconds the faster side's batch takes at least, so messaging (~50 us a batch) stays a few percent of it
MAX_BATCH = 0.25  # seconds the slower side's batch may take, whatever the faster side needs


class Failed(Exception):
    """A side did not answer as the protocol asks (the message says how)."""


class Side:
    """One connected server: the learner's kernel or the reference process (`tfperf.link` is the other end)."""

    def __init__(self, connection: socket.socket, hello: dict):
        self.connection = connection
        self.stream = connection.makefile("rwb")
        self.hello = hello
        self.name = str(hello.get("hello"))

    def send(self, message: dict) -> None:
        self.stream.write(json.dumps(message).encode() + b"\n")
        self.stream.flush()

    def batch(self, seed: int, calls: int, timeout: float = BATCH_SECONDS) -> tuple[float, list]:
        """Seconds from request to answer (this process's clock) and the answer's digests; raises Failed."""
        self.connection.settimeout(timeout)
        began = time.perf_counter()
        self.send({"op": "batch", "seed": seed, "calls": calls})
        line = self.stream.readline(LINE_LIMIT)
        seconds = time.perf_counter() - began
        if not line.endswith(b"\n"):
            raise Failed("no answer" if not line else "an answer too long to be digests")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise Failed("an answer that is not a JSON object")
        if "error" in answer:
            raise Failed(f"raised {str(answer['error'])[:300]}")
        digests = answer.get("digests")
        if not isinstance(digests, list) or len(digests) != calls:
            raise Failed(f"answered {len(digests) if isinstance(digests, list) else 'no'} digests for {calls} calls")
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


def matches(a: list, b: list, rtol: float, atol: float) -> bool:
    """Whether two answers' digests agree within the check's tolerances."""
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


class Rounds:
    """Paired, interleaved batches of both sides on seeds this process draws, timed by its clock, the learner's sandbox
    frozen (``group``) while the baseline runs."""

    def __init__(self, reference: Side, candidate: Side, options: Options, group):
        self.reference, self.candidate, self.options, self.group = reference, candidate, options, group

    def _timed(self, side: Side, seed: int, calls: int, *, baseline: bool, what: str) -> tuple[float, list]:
        if baseline and self.group is not None:
            self.group.freeze()
        try:
            return side.batch(seed, calls)
        except (OSError, ValueError) as error:
            raise Failed(f"{what} did not answer ({type(error).__name__})") from None
        except Failed as failure:
            raise Failed(f"{what} {failure}") from None
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
            if not matches(got, want, self.options.rtol, self.options.atol):
                raise Failed(f"your outputs differ from the reference's on the same inputs (call {index + 1} of a batch: "
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


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key in ("PATH", "LANG", "LC_ALL", "TMPDIR")}


def measure(reference: Side, candidate: Side, options: Options, group) -> timing.Comparison:
    """Run the paired rounds in a process of its own (`main`) on the two connections, ``group`` the learner's sandbox
    to freeze while the baseline runs (or None); build the `Comparison` from what that process measured. Raises
    `Failed` when a side misbehaved or the timer could not measure."""
    fds = (reference.connection.fileno(), candidate.connection.fileno())
    job = pickle.dumps({"fds": fds, "options": options, "group": group})
    try:
        done = subprocess.run([sys.executable, "-I", "-m", "tfperf_lab.timer"], input=job, capture_output=True,
                              pass_fds=fds, timeout=options.budget + 6 * BATCH_SECONDS, env=_environment())
    except subprocess.TimeoutExpired:
        raise Failed("took longer than the check's time allows; not measured") from None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise Failed(f"could not be measured: the grader's timer stopped ({done.returncode}; a course problem: tell your instructor): "
                     f"{done.stderr.decode('utf-8', 'replace')[-300:]}") from None
    if "failed" in result:
        raise Failed(result["failed"])
    metadata = {"grader": True, "frozen": group.freezer if group is not None else "none", "timer": "own process"}
    samples, warm = result["samples"], result["warm"]
    results = tuple(timing.TimingResult(options.labels[side], tuple(samples[side]), result["calls"], tuple(warm[side]), metadata)
                    for side in (0, 1))
    return timing.Comparison(results[0], results[1], tuple(x / y for x, y in zip(*samples)), tuple(result["ci"]), options.confidence,
                             options.at_least, 0.05, result["elapsed"], tf_env.fingerprint())


def main() -> None:
    """``python -I -m tfperf_lab.timer``: one measurement. Reads the pickled job (two socket descriptors, the options,
    the sandbox's freezer) from stdin, from the judge that started it; writes what it measured, or why not, as JSON."""
    job = pickle.loads(sys.stdin.buffer.read())
    sides = [Side(socket.socket(fileno=fd), {"hello": "timer"}) for fd in job["fds"]]
    try:
        result = Rounds(sides[0], sides[1], job["options"], job["group"]).run()
    except Failed as failure:
        result = {"failed": str(failure)}
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
