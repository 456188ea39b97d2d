"""Simulated gradings through the shipped loop: how often the rule passes an answer exactly at its threshold when
rounds are not independent.

`tfperf.stats`'s confidence sequence holds its level when each round, given the rounds before, is no more likely than a
fair coin to lie above the true median. Real rounds are not like that (issue 53: a runs test on the campaigns' kept rounds
gave z = -16.5): a neighbour's burst lasts several rounds, a machine drifts, and a grading has an offset of its own.
This module runs the loop the grader runs (`tfperf.timing.paired_rounds`, with the grader's drop rule
`tfperf_lab.speed.timer.Disturbance` reading each batch's CPU wait, its `MIN_SPAN` and a check's budget) on rounds drawn
from those noise models, at a true median ratio EQUAL to the threshold, and counts passes: every one is a false pass.
A sound rule passes at most 2.5% (the lower side of a 95% interval) plus sampling error; `tests/unit/test_dependence.py`
holds each scenario to it.

Scenarios (`SCENARIOS`), each a `Scenario` of a round's log-ratio noise:
* ``iid``: independent rounds (what the proof assumes);
* ``ar1``: the log ratio an AR(1) process, phi 0.5 (a machine whose speed drifts from round to round);
* ``bursts``: a neighbour slows the baseline's side 2-5x for 5-20 rounds, seen by the drop rule as CPU wait;
* ``offset``: a per-grading offset of the log ratio, intraclass correlation 0.11 (the recorded rows' figure).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from tfperf import stats, timing

from .timer import MIN_SPAN, Disturbance


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One noise model of a grading's rounds. ``sigma``: the stationary sd of a round's log ratio; ``phi``: its AR(1)
    coefficient; ``burst_start``: chance per round, outside a burst, that one starts on the baseline's side (2-5x for
    5-20 rounds, its extra time shown as CPU wait); ``icc``: the share of the log ratio's variance that is a per-grading
    offset."""

    name: str
    sigma: float = 0.08
    phi: float = 0.0
    burst_start: float = 0.0
    icc: float = 0.0


SCENARIOS = {s.name: s for s in (Scenario("iid"), Scenario("ar1", phi=0.5), Scenario("bursts", burst_start=0.03),
                                 Scenario("offset", icc=0.11))}


@dataclasses.dataclass(frozen=True)
class Setting:
    """The check a simulated grading runs: its threshold, budget, least rounds and the seconds of the slower side's batch
    (the grader sizes batches to about 20 ms, `tfperf_lab.speed.timer.MIN_SAMPLE`)."""

    threshold: float = 1.6
    budget: float = 5.0
    min_rounds: int = 10
    max_rounds: int = 200
    batch_seconds: float = 0.02
    truth: float = 1.0  # the answer's true median ratio, as a multiple of the threshold (1: exactly at it)


def rounds(scenario: Scenario, setting: Setting, rng: np.random.Generator):
    """Each round's baseline and candidate seconds and CPU-wait shares, for up to ``setting.max_rounds`` rounds."""
    n = setting.max_rounds
    within = scenario.sigma * math.sqrt(1 - scenario.icc)
    offset = rng.normal(0.0, scenario.sigma * math.sqrt(scenario.icc)) if scenario.icc else 0.0
    shocks = rng.normal(0.0, within, n)
    noise = np.empty(n)
    noise[0] = shocks[0]
    for t in range(1, n):  # stationary AR(1): the same sd every round
        noise[t] = scenario.phi * noise[t - 1] + math.sqrt(1 - scenario.phi ** 2) * shocks[t]
    slow = np.ones(n)
    t = 0
    while t < n:
        if scenario.burst_start and rng.random() < scenario.burst_start:
            length, factor = int(rng.integers(5, 21)), float(rng.uniform(2.0, 5.0))
            slow[t : t + length] = factor
            t += length
        else:
            t += 1
    log_ratio = math.log(setting.threshold * setting.truth) + offset + noise
    baseline = setting.batch_seconds * np.exp(log_ratio / 2) / math.sqrt(setting.threshold) * slow
    candidate = setting.batch_seconds * np.exp(-log_ratio / 2) / math.sqrt(setting.threshold)
    usual = rng.uniform(0.0, 0.02, (n, 2))  # a quiet batch's wait share
    waits = [(float(usual[i, 0] + (slow[i] - 1) / slow[i]), float(usual[i, 1])) for i in range(n)]
    return baseline, candidate, waits


BEFORE = 3  # batches the grader times before the loop (warm-up, sizing), whose CPU waits are its usual ones


def grading(scenario: Scenario, rng: np.random.Generator, setting: Setting = Setting()) -> bool:
    """One simulated grading through `tfperf.timing.paired_rounds` with the grader's drop rule (`Disturbance`, its usual
    waits from `BEFORE` batches drawn ahead of the loop, under the same noise): True when it passed."""
    baseline, candidate, waits = rounds(scenario, dataclasses.replace(setting, max_rounds=setting.max_rounds + BEFORE), rng)
    disturbance = Disturbance(waits[:BEFORE])
    sized = float(np.median(baseline[:BEFORE] + candidate[:BEFORE]))  # the grader's sizing batches: a round's seconds
    baseline, candidate, waits = baseline[BEFORE:], candidate[BEFORE:], waits[BEFORE:]
    now = [0.0]

    def clock() -> float:
        return now[0]

    def pair(index: int) -> tuple[float, float]:
        now[0] += baseline[index] + candidate[index]
        disturbance.judge(waits[index], float(baseline[index] + candidate[index]))
        return float(baseline[index]), float(candidate[index])

    measured = timing.paired_rounds(pair, threshold=setting.threshold, min_rounds=setting.min_rounds, max_rounds=setting.max_rounds,
                                  budget=setting.budget, clock=clock, keep=lambda count: disturbance.flags[:count], min_span=MIN_SPAN,
                                  round_seconds=sized)
    return stats.bounded(measured.ci) and measured.ci[0] > setting.threshold


def passes(scenario: Scenario, gradings: int, *, seed: int = 0, setting: Setting = Setting(), stop_above: int | None = None) -> tuple[int, int]:
    """Passes of ``gradings`` simulated gradings (at the threshold unless ``setting.truth`` says otherwise): (passes,
    gradings run). At the threshold every pass is a false one. With ``stop_above``, stops as soon as the passes exceed it
    (the count can only grow: a rule already over its allowance is over it)."""
    rng = np.random.default_rng(seed)
    passed = 0
    for run in range(1, gradings + 1):
        passed += grading(scenario, rng, setting)
        if stop_above is not None and passed > stop_above:
            return passed, run
    return passed, gradings
