"""The one timing harness: time a callable, or compare a baseline with a candidate.

Every measurement in the course goes through `compare` (or `measure` for a single callable), so
every number is taken the same way:

* warm-up calls first, so tracing and graph construction are excluded;
* each sample repeats the call `number` times, calibrated so a sample lasts ``sample_time``;
* baseline and candidate samples are taken in pairs, the order alternating each round;
* the speedup is the median of the per-round ratios, with a 95% confidence sequence (`tfperf.stats`): an interval
  that stays valid however many rounds it is looked at after;
* rounds are added while the interval is inconclusive, up to a time budget.

Asynchronous work is counted: after every timed call the harness copies its outputs to host memory
(``.numpy()``) and, when TensorFlow is already imported and a GPU exists (or eager execution was made
asynchronous), waits for every device with ``tf.test.experimental.sync_devices()``, whatever the call
returned. A function returning ``None`` on a GPU is therefore timed to the end of its kernels, not to
their dispatch. On a CPU nothing extra runs: the harness never imports TensorFlow itself. The clock is bound when this module is imported: patching ``time.perf_counter`` later
changes nothing here. Introduced in lesson 01.

Vocabulary: *sample* (one timed measurement), *number* (calls per sample), *rounds* (paired
samples), *warmup* (discarded calls).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import env as _env
from . import present as _present
from . import stats as _stats
from . import units as _units
from .units import format_seconds
from .units import pick_unit as _pick_unit

_CLOCK: Callable[[], float] = time.perf_counter
# `compare` may stop adding rounds once the interval shows no difference beyond this, either way (a stopping rule only)
TOLERANCE = 0.05
WARMUP = 3  # untimed calls of each side before the first timed one
SAMPLE_TIME = 0.02  # seconds a sample of calls should span at least (calls per sample are chosen to reach it)

__all__ = ["TOLERANCE", "CheckOptions", "Comparison", "RoundsMeasured", "TimingResult", "compare", "device_wait", "format_seconds", "measure", "paired_rounds"]


@dataclasses.dataclass(frozen=True)
class TimingResult:
    """Per-call times of one callable. Frozen; statistics are computed from the stored samples.

    Attributes:
        label: What was timed.
        samples: Seconds per call, one value per sample.
        number: Calls per sample.
        warmup: Seconds per warm-up call, kept apart from the samples.
        metadata: Free-form facts (batch size, mode) stored with the result.
    """

    label: str
    samples: tuple[float, ...]
    number: int = 1
    warmup: tuple[float, ...] = ()
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "samples", tuple(float(s) for s in self.samples))
        object.__setattr__(self, "warmup", tuple(float(s) for s in self.warmup))
        if not self.samples:
            raise ValueError(f"{self.label!r}: samples must not be empty")
        if not all(math.isfinite(s) and s > 0 for s in self.samples):
            raise ValueError(f"{self.label!r}: every sample must be a positive number of seconds; got {self.samples[:5]}")
        if self.number < 1:
            raise ValueError(f"number must be at least 1; got {self.number}")

    @classmethod
    def from_loops(cls, label: str, elapsed: Sequence[float], *, count: int, **metadata) -> "TimingResult":
        """Build a result from loops you timed yourself: ``elapsed[i]`` seconds for ``count`` items each."""
        if count < 1:
            raise ValueError(f"count must be at least 1; got {count}")
        return cls(label, tuple(e / count for e in elapsed), number=count, metadata=metadata)

    count = property(lambda self: len(self.samples), doc="Number of samples.")
    mean = property(lambda self: float(np.mean(self.samples)), doc="Mean seconds per call.")
    median = property(lambda self: float(np.median(self.samples)), doc="Median seconds per call.")
    min = property(lambda self: float(np.min(self.samples)), doc="Fastest sample, seconds per call.")
    stdev = property(lambda self: float(np.std(self.samples, ddof=1)) if self.count > 1 else 0.0, doc="Sample standard deviation.")
    iqr = property(lambda self: float(np.subtract(*np.percentile(self.samples, [75, 25]))), doc="Interquartile range.")
    p95 = property(lambda self: float(np.percentile(self.samples, 95)), doc="95th percentile.")

    def summary(self) -> str:
        """One line: median, spread and sample count in one unit."""
        scale, unit = _pick_unit(self.median)
        return (
            f"{self.label}: median {format_seconds(self.median, unit=unit)} per call "
            f"(IQR {format_seconds(self.iqr, unit=unit)}, {self.count} samples x {self.number} calls)"
        )

    def to_dict(self) -> dict:
        """Plain-data export (seconds), for JSON."""
        return {
            "label": self.label, "median": self.median, "mean": self.mean, "min": self.min,
            "iqr": self.iqr, "count": self.count, "number": self.number,
            "samples": list(self.samples), "metadata": dict(self.metadata),
        }

    def speedup_over(self, other: "TimingResult") -> float:
        """How many times faster this is than ``other`` (ratio of medians)."""
        return other.median / self.median

    def __repr__(self) -> str:
        return f"TimingResult({self.label!r}, median={format_seconds(self.median)}, n={self.count})"

    def _repr_pretty_(self, printer, cycle):  # IPython display: the summary line
        printer.text(self.summary())


def _ratio(value: float) -> str:
    """A speedup as people write it: 0.69, 1.3, 24, 180 (three significant figures at most, never 1e+02)."""
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A paired comparison of a baseline and a candidate (see `compare`).

    Attributes:
        baseline, candidate: The two timing results, sample ``i`` of each taken in round ``i``.
        ratios: Per-round speedups, baseline time / candidate time.
        ci: Confidence sequence of the median ratio at the last round (`tfperf.stats.confidence_sequence`): valid
            at whichever round the rounds stopped, so its level is what decided.
        confidence: Level of ``ci``.
        threshold: Speedup the candidate had to clear, if any.
        tolerance: Relative difference within which `compare` may stop adding rounds as "no difference" (a stopping
            rule only: the words a result allows are `words`, with no tolerance).
        elapsed: Wall seconds the comparison took, warm-up included.
        environment: The environment fingerprint (see `tfperf.env.fingerprint`).
        rule: The decision rule's version (`tfperf.stats.RULE`) that computed ``ci`` and stopped the rounds.
        dropped: Rounds measured but not used (the grader drops those a neighbour's burst landed on): (position among
            all rounds, baseline seconds per call, candidate seconds per call). With the kept samples they give every
            round in order, so a recorded comparison can be decided again under another rule (its replay).
    """

    baseline: TimingResult
    candidate: TimingResult
    ratios: tuple[float, ...]
    ci: tuple[float, float]
    confidence: float = _stats.CONFIDENCE
    threshold: float | None = None
    tolerance: float = TOLERANCE
    elapsed: float = 0.0
    environment: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    rule: str = _stats.RULE
    dropped: tuple[tuple[int, float, float], ...] = ()

    @property
    def speedup(self) -> float:
        """Median of the per-round ratios (above 1: the candidate is faster)."""
        return float(np.median(self.ratios))

    @property
    def rounds(self) -> int:
        return len(self.ratios)

    @property
    def words(self) -> str:
        """The word this run's interval allows: ``"faster"``, ``"slower"`` or ``"no measurable difference"``.

        The course's one rule (lesson 10's rubric states it too): faster or slower only when the whole
        interval lies above or below 1x; an interval that reaches 1x is no measurable difference. Unlike
        ``tolerance`` (which only decides when `compare` may stop adding rounds), it has no tolerance around 1x.
        The rule is `tfperf.present.verdict`'s.
        """
        return _present.verdict(self.ci, neither=_present.NO_DIFFERENCE)

    def describe(self, *, seen=None) -> str:
        """One sentence for a lesson's "What to notice": this run's speedup, its interval, and the word it allows.

        The word is `words`: "faster" or "slower" only when the whole interval lies above or below 1x,
        otherwise "no measurable difference" ("too noisy to tell" when the interval is also wide).
        ``seen`` is where one run lands on the course's 2-core machine (`tfperf.report.seen` reads it from the recorded
        runs of the learner's profile: the range 9 runs in 10 fall in), and what the same rule said of each recorded
        run's interval. When the rule called some runs faster and others slower the effect is called fragile; when
        this run's speedup lands outside the range, the sentence says so; and it quotes the article's claim when the
        lesson recorded one (``seen.claim``). Introduced in lesson 02.

        Args:
            seen: A `tfperf.report.Seen` (range, number of recorded runs, their profile and words), a plain
                (lowest, highest) pair, or None.

        Returns:
            A sentence such as ``"parallel map against sequential map: 0.69x (95% CI 0.50-0.93x): slower on this run."``
        """
        low, high = self.ci
        if self.words != _present.NO_DIFFERENCE:
            words = f"{self.words} on this run"
        elif not _stats.bounded(self.ci):
            words = "too few rounds to tell on this run"
        elif high / low > 1.5:
            words = "too noisy to tell on this run (the interval is wide and reaches 1x): run it again on a quieter machine"
        else:
            words = "no measurable difference on this run (the interval reaches 1x)"
        sentence = (f"{self.candidate.label} against {self.baseline.label}: {self.speedup:.2f}x "
                    f"({_stats.shown(self.ci, self.confidence, self.rounds)}): {words}.")
        if seen is None:
            return sentence
        least, most = float(seen[0]), float(seen[1])
        ends = _units.ratio_bounds(least, most)
        span = f"anywhere from {ends[0]}x to {ends[1]}x" if most / least > 2 else f"{ends[0]}-{ends[1]}x"
        runs, profile = getattr(seen, "runs", None), getattr(seen, "profile", None)
        where = f"on the course's 2-core VM one run lands {'' if span.startswith('anywhere') else 'in '}{span}"
        source = f" (9 runs in 10, from its {runs} recorded runs in the {profile} profile)" if runs and profile else ""
        said = getattr(seen, "words", None)
        claim = getattr(seen, "claim", None)
        article = f"; the article: {claim.rstrip('.')}" if claim else ""
        if said and getattr(seen, "fragile", False):
            return f"{sentence} A fragile effect: {where}{source}, {said}, so one run decides nothing{article}."
        outside = " This run landed outside that range." if not least <= self.speedup <= most else ""
        return f"{sentence} {where[0].upper()}{where[1:]}{source}" + (f": {said}" if said else "") + f"{article}.{outside}"

    @property
    def passed(self) -> bool:
        """True when a threshold was set and the interval's lower bound clears it."""
        return self.threshold is not None and self.ci[0] >= self.threshold

    @property
    def ratio_of_medians(self) -> float:
        """Baseline median over candidate median: another statistic than `speedup`, the median of the paired ratios."""
        return self.baseline.median / self.candidate.median

    def summary(self) -> str:
        """One line: speedup, interval, rounds and both medians in one unit, each statistic named.

        The speedup is the median of the paired per-round ratios; the two medians are each side's median
        time per call, whose ratio is another statistic. On a steady machine the two agree; when the
        rounds vary (the machine's load comes and goes) they can disagree, and the line says so with both numbers,
        so nobody quotes a speedup and two medians that contradict each other without knowing why.
        """
        low, high = self.ci
        scale, unit = _pick_unit(min(self.baseline.median, self.candidate.median))
        verdict = f"{self.speedup:.2f}x" + (f" (needs >= {self.threshold:g}x: {'pass' if self.passed else 'FAIL'})" if self.threshold else "")
        medians = (f"median per call {format_seconds(self.baseline.median, unit=unit)} -> "
                   f"{format_seconds(self.candidate.median, unit=unit)}")
        ratio = self.ratio_of_medians
        # as printed: the ratio to nearest, the interval outward (`tfperf.units.interval`): 1.04x is inside "0.96-1.04x"
        if _units.floor_to(low, 2) <= round(ratio, 2) <= _units.ceil_to(high, 2):
            medians += f", a ratio of {ratio:.2f}x"
        else:
            medians += (f", a ratio of {ratio:.2f}x, outside the interval: the rounds varied (another program's load "
                        "comes and goes), which moves the two statistics apart; quote the paired speedup and its interval")
        return (
            f"{self.candidate.label} vs {self.baseline.label}: {verdict}, the median of {self.rounds} paired per-round ratios "
            f"({_stats.shown(self.ci, self.confidence)}) [{medians}]"
        )

    def to_dict(self) -> dict:
        """Plain-data export, for JSON records and reports."""
        return {
            "baseline": self.baseline.to_dict(), "candidate": self.candidate.to_dict(),
            "speedup": self.speedup, "ci": list(self.ci), "confidence": self.confidence,
            "threshold": self.threshold, "passed": self.passed, "words": self.words,
            "rounds": self.rounds, "ratios": list(self.ratios), "elapsed": self.elapsed,
            "environment": dict(self.environment), "rule": self.rule, "dropped": [list(d) for d in self.dropped],
        }

    def plot(self, ax=None):
        """Plot the per-round ratios with the median and interval; returns the Axes."""
        from . import plots

        return plots.comparison(self, ax=ax)

    def __repr__(self) -> str:
        ci = _units.interval(*self.ci, unit="", sep=", ")  # rounded outward, as every printed interval
        return f"Comparison({self.candidate.label!r} vs {self.baseline.label!r}, speedup={self.speedup:.2f}x, ci=({ci}))"

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.summary())


def _block(value) -> None:
    """Force asynchronous TensorFlow work to finish by copying results to the host."""
    if hasattr(value, "numpy"):
        value.numpy()
    elif isinstance(value, (list, tuple)):
        for item in value:
            _block(item)
    elif isinstance(value, dict):
        for item in value.values():
            _block(item)


def device_wait() -> Callable[[], None] | None:
    """The call that waits for every device to finish its queued work, or None when nothing can be pending.

    TensorFlow queues work asynchronously on a GPU (and on any device after
    ``tf.config.experimental.set_synchronous_execution(False)``): an op returns when it is dispatched,
    not when it is done. Then this returns ``tf.test.experimental.sync_devices`` (TensorFlow 2.14 and
    later), guarded so it runs only in eager mode: a TF1 ``Session.run`` already returns finished
    results, and the function raises outside eager mode. Without TensorFlow imported, or on a CPU
    with synchronous execution, it returns None: the harness stays free there. Introduced in lesson 08.
    """
    tf = sys.modules.get("tensorflow")
    sync = getattr(getattr(getattr(tf, "test", None), "experimental", None), "sync_devices", None)
    if sync is None:
        return None
    config = tf.config.experimental
    asynchronous = hasattr(config, "get_synchronous_execution") and not config.get_synchronous_execution()
    if not (_env.gpu_names() or asynchronous):
        return None

    def wait() -> None:
        if tf.executing_eagerly():
            sync()

    return wait


def _caller(fn: Callable, inputs: Sequence | Callable[[int], Any] | None, sync: bool,
            wait: Callable[[], None] | None = None) -> Callable[[], None]:
    """Return a no-argument call of ``fn`` fed from ``inputs``.

    ``inputs`` is a sequence of argument tuples, cycled through, or a function of the call index
    returning a fresh argument tuple for every call (so no answer can serve a cached result). With
    ``sync`` every call copies its outputs to the host, then calls ``wait`` (see `device_wait`).
    """
    if not callable(fn):
        raise TypeError(f"expected a callable, got {type(fn).__name__}; pass the function itself, e.g. compare(lambda: step(x), ...)")
    if inputs is None:
        source = None
    elif callable(inputs):
        source = map(inputs, itertools.count())
    elif len(inputs) == 0:
        raise ValueError("inputs must hold at least one argument tuple; got an empty sequence")
    else:
        source = itertools.cycle(inputs)

    def call():
        if source is None:
            out = fn()
        else:
            args = next(source)
            out = fn(*(args if isinstance(args, tuple) else (args,)))
        if sync:
            _block(out)
            if wait is not None:
                wait()

    return call


def seconds_per_call(call: Callable[[], None], number: int, clock: Callable[[], float]) -> float:
    """The harness's one sample: ``number`` calls in a row, their seconds per call (`tfperf_lab.speed.doctor` takes
    its noise samples the same way)."""
    start = clock()
    for _ in range(number):
        call()
    return (clock() - start) / number


def _sized(call, clock, sample_time: float) -> tuple[int, float]:
    """Calls per sample (about ``sample_time`` of them) and the seconds of one call, the least of three."""
    one = max(min(seconds_per_call(call, 1, clock) for _ in range(3)), 1e-9)
    return max(1, min(10**6, round(sample_time / one))), one


def _calibrate(call, clock, sample_time: float, number: int | None) -> int:
    if number is not None:
        if number < 1:
            raise ValueError(f"number must be at least 1; got {number}")
        return number
    return _sized(call, clock, sample_time)[0]


def measure(fn: Callable, *, label: str | None = None, inputs: Sequence | Callable[[int], Any] | None = None, warmup: int = WARMUP,
            repeats: int = 10, number: int | None = None, sample_time: float = SAMPLE_TIME, sync: bool = True,
            wait: Callable[[], None] | None = None, clock: Callable[[], float] | None = None, **metadata) -> TimingResult:
    """Time one callable: warm-up, then ``repeats`` samples of ``number`` calls each.

    Args:
        fn: Called with no arguments, or with each tuple of ``inputs`` in turn.
        label: Name shown in summaries (default: the function's name).
        inputs: Argument tuples to cycle through, or a function of the call index returning fresh
            arguments for every call, so no answer can serve a cached result.
        warmup: Discarded calls before timing (tracing happens here).
        repeats: Number of samples.
        number: Calls per sample; calibrated to ``sample_time`` when None.
        sync: Finish asynchronous work inside the timed region: copy outputs to the host and wait
            for the devices after every call.
        wait: The device wait called after every call (default: `device_wait`, chosen when
            timing starts; tests pass a fake).
        clock: Seconds clock, for tests (default ``time.perf_counter``, bound at import).
        **metadata: Stored with the result.

    Returns:
        A `TimingResult` in seconds per call.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1; got {repeats}")
    clock = clock or _CLOCK
    call = _caller(fn, inputs, sync, wait or device_wait())
    warm = tuple(seconds_per_call(call, 1, clock) for _ in range(warmup))
    number = _calibrate(call, clock, sample_time, number)
    samples = tuple(seconds_per_call(call, number, clock) for _ in range(repeats))
    return TimingResult(label or getattr(fn, "__name__", "function"), samples, number, warm, metadata)


@dataclasses.dataclass(frozen=True)
class CheckOptions:
    """A speed check's settings, one type from the test cell to the verdict: `tfperf.assert_speedup` takes them as
    keywords, the grader reads them from the clean process's copy of the cell (`to_dict`, then `of`), and the
    `Comparison` and its `Record` keep ``threshold`` under the same name."""

    threshold: float
    labels: tuple[str, str] = ("baseline", "candidate")
    rtol: float = 1e-4
    atol: float = 1e-6
    warmup: int = WARMUP
    min_rounds: int = 10
    max_rounds: int = 200
    budget: float = 5.0
    sample_time: float = SAMPLE_TIME
    confidence: float = _stats.CONFIDENCE
    own_baseline: bool = False  # graded: the learner's kernel serves the baseline too (their code against itself)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> "CheckOptions":
        """The options named in ``data``; other keys are ignored (a newer cell's extras), missing ones take defaults."""
        known = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        if "labels" in values:
            values["labels"] = tuple(values["labels"])[:2]
        return cls(**values)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) | {"labels": list(self.labels)}


@dataclasses.dataclass
class RoundsMeasured:
    """What `paired_rounds` measured: seconds per call of each side per round (only the rounds kept), the interval of
    the kept rounds' ratios, the seconds it took, and the rounds dropped as (position, baseline, candidate)."""

    samples: tuple[list[float], list[float]]
    ci: tuple[float, float]
    dropped: int
    elapsed: float
    rounds_dropped: tuple[tuple[int, float, float], ...] = ()

    @property
    def ratios(self) -> list[float]:
        return [b / c for b, c in zip(*self.samples)]


def paired_rounds(pair: Callable[[int], tuple[float, float]], *, threshold: float | None, min_rounds: int = CheckOptions.min_rounds,
                  max_rounds: int = CheckOptions.max_rounds, budget: float = CheckOptions.budget, confidence: float = _stats.CONFIDENCE, tolerance: float = TOLERANCE,
                  clock: Callable[[], float] | None = None, keep: Callable[[int], list[bool]] | None = None,
                  min_span: float = 0.0, round_seconds: float | None = None) -> RoundsMeasured:
    """The one measuring loop of the course (the self-check's `compare` and the grader's timer both run it).

    ``pair(index)`` runs round ``index`` (both sides, the order alternating with the index) and returns each side's
    seconds per call. The sequence counts blocks of consecutive kept rounds, not single rounds (`tfperf.stats.blocks`,
    each block's median ratio), because rounds close together are not independent: a block lasts
    `tfperf.stats.BLOCK_SECONDS` at least, the first one's count of rounds from ``round_seconds``, the seconds the
    caller expects a round to take (its sizing batches'; None: one round), each later one's from the rounds before it.
    After ``min_rounds`` rounds the median ratio's confidence sequence (`tfperf.stats`) decides
    (`tfperf.stats.decided`), looked at after every round (the sequence is valid under that many looks): stop when
    it lies wholly above or below ``threshold`` (without one: above ``1 + tolerance``, below its inverse, or inside
    both), the rounds span ``min_span`` seconds, and at least ``min_rounds`` rounds are kept; or when ``budget`` seconds
    or ``max_rounds`` rounds are spent (never before ``min_rounds``: the grader bounds a check's time on top of this).
    ``keep(count)`` says which of the rounds so far count (the grader drops rounds
    a neighbour's burst landed on); all count without it. A dropped round costs no budget: ``budget`` bounds the time
    outside dropped rounds, so a burst cannot run a check out of time (the grader's hard bound still caps it).
    With a ``threshold`` the loop never stops, for its budget either, before `tfperf.stats.fewest` blocks are closed (8 at
    95%): stopped earlier it could only report "undecided", which a speed check scores as a fail whatever the answer
    (lesson 07's reference once failed so, its budget spent after 7 slow rounds, and a correct answer with 7 kept of 8).
    Without one (a demonstration) the budget may stop it first and the result says it is undecided.
    """
    if min_rounds < 2 or max_rounds < min_rounds:
        raise ValueError(f"need 2 <= min_rounds <= max_rounds; got min_rounds={min_rounds}, max_rounds={max_rounds}")
    # With a threshold an undecided loop fails the check: kept rounds before any stop, the budget's included. Without
    # one (a demonstration) undecided is only printed as such, and the lesson's budget keeps its run time.
    least = _stats.fewest(confidence) if threshold is not None else 2
    min_rounds = min(max_rounds, max(min_rounds, least))
    size = _stats.block_size(round_seconds)
    gathered, fed = _stats.Blocks(size), []  # the blocks of the kept rounds so far (`tfperf.stats.blocks`)
    clock = clock or _CLOCK
    began = clock()
    samples: tuple[list[float], list[float]] = ([], [])
    kept: list[int] = []
    ci = (0.0, math.inf)
    durations: list[float] = []
    for index in range(max_rounds):
        started = clock()
        baseline, candidate = pair(index)
        durations.append(clock() - started)
        samples[0].append(baseline)
        samples[1].append(candidate)
        if index + 1 < min_rounds:
            continue
        flags = keep(index + 1) if keep else [True] * (index + 1)
        kept = [i for i, k in enumerate(flags) if k]
        out_of_time = clock() - began - sum(d for d, k in zip(durations, flags) if not k) > budget
        if len(kept) < least or (len(kept) < min_rounds and not out_of_time):
            continue
        if kept[: len(fed)] != fed:  # a keep rule that changed its mind about a round: gather again from the start
            gathered, fed = _stats.Blocks(size), []
        for i in kept[len(fed):]:
            gathered.add(samples[0][i] / samples[1][i], durations[i])
        fed = kept
        if len(gathered.values) < least:
            continue
        ci = _stats.confidence_sequence(gathered.values, confidence)
        if out_of_time or (clock() - began >= min_span and _stats.decided(ci, threshold, tolerance)):
            break
    chosen = kept or list(range(len(samples[0])))
    unused = sorted(set(range(len(samples[0]))) - set(chosen))
    return RoundsMeasured(([samples[0][i] for i in chosen], [samples[1][i] for i in chosen]), ci, len(unused),
                          clock() - began, tuple((i, samples[0][i], samples[1][i]) for i in unused))


def compare(baseline: Callable, candidate: Callable, *, labels: tuple[str, str] = ("baseline", "candidate"),
            inputs: Sequence | Callable[[int], Any] | None = None, threshold: float | None = None, warmup: int = CheckOptions.warmup,
            min_rounds: int = CheckOptions.min_rounds, max_rounds: int = CheckOptions.max_rounds, budget: float = CheckOptions.budget,
            sample_time: float = CheckOptions.sample_time,
            confidence: float = _stats.CONFIDENCE, tolerance: float = TOLERANCE, sync: bool = True,
            wait: Callable[[], None] | None = None, clock: Callable[[], float] | None = None,
            **metadata) -> Comparison:
    """Measure how many times faster ``candidate`` is than ``baseline``, paired and interleaved.

    After ``min_rounds`` paired rounds the median ratio's confidence sequence (`tfperf.stats`) is checked after every
    round; it stays valid however often it is looked at, so its 95% is the chance it was right when it decided. With a
    ``threshold`` the comparison is decided once the interval lies wholly above or below it;
    without one, once it lies above ``1 + tolerance``, below ``1 / (1 + tolerance)``, or inside
    both (no difference). Otherwise rounds are added until ``budget`` seconds or ``max_rounds``.

    Args:
        baseline, candidate: Callables doing the same work (no arguments, or see ``inputs``).
        labels: Names of the two in summaries and plots.
        inputs: Argument tuples cycled through by both callables, or a function of the call index
            returning fresh arguments (each callable gets the same sequence of inputs).
        threshold: Speedup the candidate must clear (`Comparison.passed`).
        warmup: Discarded calls of each before timing.
        min_rounds, max_rounds: Bounds on paired rounds.
        budget: Seconds after which no more rounds are added.
        sample_time: Target seconds per sample, used to calibrate calls per sample.
        confidence: Level of the confidence sequence.
        tolerance: Relative difference within which the rounds may stop as "no difference" (stopping only; the
            words a result allows are `Comparison.words`).
        sync: Finish asynchronous work inside the timed region (outputs to host, then the device wait).
        wait: The device wait called after every call (default: `device_wait`; tests pass a fake).
        clock: Seconds clock, for tests.
        **metadata: Stored with both timing results.

    Returns:
        A `Comparison`; ``print(result.summary())`` or end a cell with it.

    Example:
        >>> result = compare(lambda: sess.run(y, {x: v}), lambda: handle(v), labels=("sess.run", "handle"))
    """
    if min_rounds < 2 or max_rounds < min_rounds:
        raise ValueError(f"need 2 <= min_rounds <= max_rounds; got min_rounds={min_rounds}, max_rounds={max_rounds}")
    clock = clock or _CLOCK
    began, before = clock(), _env.cpu_times()
    wait = wait or device_wait()
    calls = (_caller(baseline, inputs, sync, wait), _caller(candidate, inputs, sync, wait))
    warm = ([], [])
    for _ in range(warmup):
        for side in (0, 1):
            warm[side].append(seconds_per_call(calls[side], 1, clock))
    sized = [_sized(call, clock, sample_time) for call in calls]
    numbers = tuple(number for number, _ in sized)

    def pair(index: int) -> tuple[float, float]:
        seconds = [0.0, 0.0]
        for side in ((0, 1) if index % 2 == 0 else (1, 0)):
            seconds[side] = seconds_per_call(calls[side], numbers[side], clock)
        return seconds[0], seconds[1]

    rounds = paired_rounds(pair, threshold=threshold, min_rounds=min_rounds, max_rounds=max_rounds, budget=max(0.0, budget - (clock() - began)),
                           confidence=confidence, tolerance=tolerance, clock=clock,
                           round_seconds=sum(number * one for number, one in sized))
    samples, ci = rounds.samples, rounds.ci
    results = tuple(
        TimingResult(labels[side], tuple(samples[side]), numbers[side], tuple(warm[side]), metadata) for side in (0, 1)
    )
    return Comparison(results[0], results[1], tuple(b / c for b, c in zip(*samples)), ci, confidence, threshold,
                      tolerance, clock() - began, _env.fingerprint(before))



decided = _stats.decided  # the one decision rule, kept under its old name for the harness's integrity check
