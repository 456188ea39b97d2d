"""The course's statistics, in one place: the interval every speedup is printed with and the rule that decides.

**The rule** (`RULE`): the median of the paired per-round ratios, with a 95% *confidence sequence* for it, built from
a sign test. A timing loop looks after every round and stops as soon as the interval decides; an ordinary 95%
interval checked after every round is wrong far more often than 5% of the time (a speed check whose true median ratio
sat exactly at its threshold passed 15% of its gradings under the course's earlier bootstrap rule, because each look
is another chance to be fooled). A confidence sequence holds at every round at once: the chance that it *ever*
excludes the true median, however often it is looked at and whenever the loop stops (a decision, the time budget, the
round limit), is at most 5%. So the interval that is printed is the interval that decided, at the level printed.

How it is built (Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", 2021; the sign test's mixture form): for a candidate median ``m``, count the rounds whose ratio lies above
``m``. Were ``m`` the median, each round lies above it with probability 1/2 whatever came before, so the mixture
likelihood ratio ``e(n, s)`` of `e_value` (``s`` rounds of ``n`` above ``m``, against chances of "above" spread
uniformly over 1/2-1) is a nonnegative martingale of mean 1, and by Ville's inequality it ever reaches ``2 / alpha``
with probability at most ``alpha / 2``. Every ``m`` it has not rejected, either way, is in the sequence: an interval
between two order statistics of the ratios (`confidence_sequence`). Why this one and not a fixed schedule of looks
with alpha spending: it needs no schedule (a check stops at whatever round its budget runs out), no assumption on the
ratios' distribution (only that each round lies above the true median with chance 1/2 given the rounds before), and it
costs little: with 20 units its lower bound is the 4th smallest, against the 6th for an interval valid at one look
only (`median_interval`).

What it counts: blocks, not rounds (`blocks`, rule sign-cs-2). Rounds close together in time are not independent (a
machine's speed drifts, a neighbour's burst lasts several rounds: the campaigns' kept rounds had a lag-1
autocorrelation of 0.16 under 40 ms, about 0 from 0.15 s), and on single rounds the "chance 1/2 given the rounds
before" fails: replay's calibration (`tfperf_lab.speed.replay.calibrate`) moved the campaigns' recorded rounds onto
their thresholds and, resampled in blocks of 5 rounds, single rounds passed 3.8% on average (16 of 39 checks x loads
at or below 2.5%). The sign test therefore counts blocks of consecutive kept rounds that last `BLOCK_SECONDS` together,
each once, by its median (an odd count, fixed before the block's first round: a block's median lies above the rounds'
median half the time, so the parameter is still the median ratio).

What it does not promise: a grading that sits high or low as a whole (an offset of its own, beyond its rounds' noise)
is one draw, and no rule inside one grading can see it; docs/grading.md says how large the campaigns' offsets are and
what they cost. The grader drops the rounds a burst landed on, each judged once
(`tfperf_lab.speed.timer.Disturbance`).

Also here: `median_interval` (one look, exact), `clopper_pearson` (an error rate's bounds from counts), `decided`, and
`one_run_range`: where one more run lands, from recorded runs (the ranges lessons quote).
Introduced in lesson 01; lesson 10's rubric states the words.
"""

from __future__ import annotations

import functools
import math
import statistics
from fractions import Fraction
from typing import Sequence

from .units import interval as _interval

__all__ = ["BLOCK_SECONDS", "CONFIDENCE", "ONE_RUN_SHARE", "RULE", "Blocks", "block_size", "blocks", "bounded", "clopper_pearson", "confidence_sequence", "decided", "e_value", "fewest",
           "median_interval", "needed", "one_run_range", "shown"]

# The decision rule's version. It is written into every `tfperf.timing.Comparison`, every record, every speed check's
# fingerprint and every campaign row: figures and campaigns measured under another rule stop counting.
RULE = "sign-cs-2"
# Seconds of rounds (both sides' time) a block of the rule gathers at least: rounds closer together than this are not
# independent (the campaigns' kept rounds: lag-1 autocorrelation 0.16 for rounds under 40 ms, about 0 from 0.15 s;
# docs/benchmarks.md), so the sign test counts blocks of rounds, not rounds (`block_size`, `blocks`).
BLOCK_SECONDS = 0.2
CONFIDENCE = 0.95  # the level of every interval the course prints and of the rule that decides (one level for both)


def e_value(n: int, s: int) -> float:
    """The sign test's mixture e-value: ``s`` of ``n`` rounds above a candidate median, against the chance of "above"
    drawn uniformly from 1/2-1. Exactly ``sum(C(n+1, j), j <= s) / ((n + 1) * C(n, s))``, from
    ``2 * integral over 1/2..1 of (2p)^s (2(1-p))^(n-s) dp``. Grows with ``s``; 1 at ``n = 0``."""
    if not 0 <= s <= n:
        raise ValueError(f"need 0 <= s <= n; got s={s}, n={n}")
    return float(Fraction(sum(math.comb(n + 1, j) for j in range(s + 1)), (n + 1) * math.comb(n, s)))


@functools.lru_cache(maxsize=None)
def needed(n: int, alpha: float) -> int | None:
    """The fewest of ``n`` rounds that must lie on one side of a candidate median to reject it at level ``alpha / 2``
    on that side (`e_value` at least ``2 / alpha``); None when even all ``n`` would not."""
    bound = 2 / alpha
    if n < 1 or e_value(n, n) < bound:
        return None
    low, high = 0, n  # e_value grows with s: the smallest s that reaches the bound
    while low < high:
        middle = (low + high) // 2
        if e_value(n, middle) >= bound:
            high = middle
        else:
            low = middle + 1
    return low


@functools.lru_cache(maxsize=None)
def fewest(confidence: float = CONFIDENCE) -> int:
    """The fewest rounds after which the sequence at ``confidence`` can be bounded at all (8 at 95%): a loop that stops
    earlier, for its time budget say, can only report "undecided", so `tfperf.timing.paired_rounds` never does."""
    alpha = round(1 - confidence, 12)
    return next(n for n in range(1, 10_000) if needed(n, alpha) is not None)


def block_size(round_seconds: float | None, block_seconds: float = BLOCK_SECONDS) -> int:
    """Rounds per block: the fewest odd count whose rounds last ``block_seconds`` together, from ``round_seconds``, the
    seconds a round is expected to take; 1 when it is not known or ``block_seconds`` is 0 (every round a block, the rule
    before sign-cs-2). Odd, so a block's median is one of its rounds. (Rounds of 0.15 s thus make blocks of 3: blocks
    allowed down to three quarters of ``block_seconds`` passed the calibration's blocks of 5 clearly above 2.5% on one
    check, lesson 03's, at 3.2%. A check whose rounds sit just under it is better served by longer rounds, its
    ``sample_time``.)"""
    if not round_seconds or round_seconds <= 0 or block_seconds <= 0:
        return 1
    size = max(1, math.ceil(block_seconds / round_seconds - 1e-9))
    return size if size % 2 else size + 1


class Blocks:
    """The closed blocks of a run of kept rounds, fed one round at a time (`blocks` says what they are); ``values``
    holds each closed block's median ratio."""

    def __init__(self, size: int, sized_by_rounds: bool = True):
        self.size, self.adapts = max(1, int(size)), sized_by_rounds
        self.values: list[float] = []
        self._open: list[float] = []
        self._seconds: list[float] = []  # every round's seconds so far (their median sizes the next block)

    def add(self, ratio: float, seconds: float | None = None) -> None:
        self._open.append(float(ratio))
        if seconds is not None:
            self._seconds.append(float(seconds))
        if len(self._open) == self.size:
            self.values.append(sorted(self._open)[self.size // 2])
            self._open = []
            if self.adapts and self._seconds:
                self.size = block_size(statistics.median(self._seconds))


def blocks(ratios: Sequence[float], size: int, seconds: Sequence[float] | None = None) -> list[float]:
    """The closed blocks of a run of kept rounds, in order: the median ratio of every block of consecutive rounds; the
    rounds of a block not yet full wait. Every block has ``size`` rounds (`block_size`), or, given each round's
    ``seconds``, the first has ``size`` and each later one `block_size` of the median seconds of the rounds before it:
    a block's count is always fixed before its first round, so which rounds share a block never depends on what they
    measured, and a check whose rounds grow longer (a graph that grows) or were sized wrong gets blocks that still last
    0.2 s. An odd block's median lies above the rounds' true median exactly as often as below when rounds
    are independent, so the rule's parameter stays the median ratio."""
    gathered = Blocks(size, seconds is not None)
    for index, ratio in enumerate(ratios):
        gathered.add(ratio, None if seconds is None else seconds[index])
    return gathered.values


def confidence_sequence(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The anytime-valid interval of the median of ``values`` at ``confidence`` (see the module docstring): valid
    however many times it is computed as values arrive, and at whatever count the caller stops. Before enough values
    (8 at 95%) it is (0, inf): nothing is decided yet."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie between 0 and 1; got {confidence}")
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    s = needed(n, round(1 - confidence, 12))
    if s is None:
        return 0.0, math.inf
    # "median > m" is accepted when at least s rounds lie above m: every m below the (n - s + 1)-th smallest value.
    return ordered[n - s], ordered[s - 1]


def _binomial_cdf(k: int, n: int, p: float = 0.5) -> float:
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p == 0.5:
        return float(Fraction(sum(math.comb(n, j) for j in range(k + 1)), 2 ** n))
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * log_p + (n - j) * log_q for j in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@functools.lru_cache(maxsize=None)
def one_look_rank(n: int, tail: float) -> int:
    """The largest k with P(Binomial(n, 1/2) <= k) <= tail (-1 when none)."""
    k = -1
    while k + 1 < n and _binomial_cdf(k + 1, n) <= tail:
        k += 1
    return k


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact interval of the median for ONE look at ``values``: two order statistics whose coverage is at least
    ``confidence`` for any continuous distribution (the binomial argument, no resampling). Use it when the count of
    values was fixed in advance; a loop that looks as values arrive needs `confidence_sequence`."""
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    k = one_look_rank(n, round((1 - confidence) / 2, 12))
    if k < 0:
        return 0.0, math.inf
    return ordered[k], ordered[n - 1 - k]


def clopper_pearson(events: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Two-sided exact (Clopper-Pearson) bounds of a rate seen ``events`` times in ``trials``; the upper bound alone
    is a one-sided bound at ``(1 + confidence) / 2``. Found by bisection on the binomial distribution."""
    if not 0 <= events <= trials or trials < 1:
        raise ValueError(f"need 0 <= events <= trials and trials >= 1; got {events} of {trials}")
    tail = (1 - confidence) / 2

    def bisect(grows_with_p, value) -> float:  # the p at which value(p) equals tail
        low, high = 0.0, 1.0
        for _ in range(60):
            middle = (low + high) / 2
            if (value(middle) < tail) == grows_with_p:
                low = middle
            else:
                high = middle
        return (low + high) / 2

    low = 0.0 if events == 0 else bisect(True, lambda p: 1 - _binomial_cdf(events - 1, trials, p))
    high = 1.0 if events == trials else bisect(False, lambda p: _binomial_cdf(events, trials, p))
    return low, high


# Student's t, the 97.5th percentile, by degrees of freedom (any statistics table); beyond 30, the normal's 1.960.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
         2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
ONE_RUN_RUNS = 3  # recorded runs a range of one run needs at least
ONE_RUN_SHARE = "9 in 10"  # what the lessons say of `one_run_range`; tests/unit/test_prediction_ranges.py holds it


def one_run_range(values: Sequence[float]) -> tuple[float, float]:
    """Where ONE more run's figure lands, from the figures of ``values`` recorded runs of the same code and machine: a
    95% prediction interval on the log scale (a speedup or a time is a ratio: its spread is multiplicative), mean
    +- t * sd * sqrt(1 + 1/n). Not the spread of the recorded figures (their lowest to highest), which a new run
    misses far more often: with 5 runs, 2 times in 6 even when nothing changes. The lessons say "9 in 10"
    (`ONE_RUN_SHARE`), below the nominal 95%, since runs are not exactly log-normal: left out one at a time, the course's
    recorded runs landed inside the range of the others 94% of the time (a test holds it above 90%).
    Needs `ONE_RUN_RUNS` values or more."""
    logs = [math.log(float(v)) for v in values]
    n = len(logs)
    if n < ONE_RUN_RUNS or any(not math.isfinite(x) for x in logs):
        raise ValueError(f"a range of one run needs {ONE_RUN_RUNS} or more positive figures; got {n}")
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = (_T975[n - 2] if n - 1 <= len(_T975) else 1.960) * sd * math.sqrt(1 + 1 / n)
    return math.exp(mean - half), math.exp(mean + half)


def shown(ci: tuple[float, float], confidence: float = CONFIDENCE, rounds: int | None = None) -> str:
    """An interval as the course prints it: ``"95% CI 1.20-1.45x"``, its bounds rounded outward (`tfperf.units.interval`:
    a lower bound of 1.5951 shows 1.59, never 1.60), or, before enough rounds for any interval (the sequence is (0, inf)
    until then), what is missing."""
    low, high = ci
    if low > 0 and math.isfinite(high):
        return f"{confidence:.0%} CI {_interval(low, high)}"
    return (f"no {confidence:.0%} interval yet: " + (f"{rounds} rounds, " if rounds is not None else "")
            + f"at least {fewest(confidence)} blocks of {BLOCK_SECONDS:g} s of rounds are needed")


def bounded(ci: tuple[float, float]) -> bool:
    """Whether an interval says anything (enough rounds): a positive lower bound and a finite upper one."""
    return ci[0] > 0 and math.isfinite(ci[1])


def decided(ci: tuple[float, float], threshold: float | None, tolerance: float) -> bool:
    """The one decision: the interval lies wholly above or below ``threshold`` (without one: shows a difference beyond
    ``tolerance`` either way, or none)."""
    low, high = ci
    if threshold is not None:
        return low >= threshold or high < threshold
    same = 1 / (1 + tolerance) <= low and high <= 1 + tolerance
    return low > 1 + tolerance or high < 1 / (1 + tolerance) or same
