"""The decision rule's false passes when rounds are not independent (issue 53, item 1): simulated gradings through the
shipped loop and the grader's drop rule (`tfperf_lab.speed.simulated`), an answer exactly at its threshold.

A sound rule passes such an answer at most 2.5% of the time (the lower side of the 95% sequence), give or take two
standard errors of the count. Rule sign-cs-2 (blocks of 0.2 s, each round's drop judged once) holds for
independent rounds, AR(1) drift and bursts on the baseline's side; the scenario it does not hold yet is a strict entry:
it fails as soon as the rule holds there, and must then be removed."""

import math

import pytest

from tfperf_lab.speed import simulated

GRADINGS = 2000  # the least; the standard error of a 2.5% rate is then 0.35 points
LEVEL = 0.025
PENDING = {"offset": ("issue 53 item 1: a grading that sits high or low as a whole is one draw of its offset, which no rule "
                     "inside one grading can see; sampling offsets (sub-gradings in fresh processes) or bounding them is "
                     "not built yet")}


def allowed(gradings: int) -> float:
    return LEVEL + 2 * math.sqrt(LEVEL * (1 - LEVEL) / gradings)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(reason=PENDING[name], strict=True)) if name in PENDING else name
                                  for name in simulated.SCENARIOS])
def test_an_answer_exactly_at_its_threshold_passes_at_most_the_rules_level(name):
    most = math.floor(allowed(GRADINGS) * GRADINGS)
    passed, ran = simulated.passes(simulated.SCENARIOS[name], GRADINGS, seed=53, stop_above=most)
    assert passed <= most, f"{name}: {passed} of the first {ran} gradings passed an answer at its threshold ({most} of {GRADINGS} allowed)"


def test_the_simulation_can_tell_a_fast_answer_from_one_at_the_threshold():
    """Power, so the level above is not met by a loop that never passes: 25% above the threshold passes nearly always."""
    passed, gradings = simulated.passes(simulated.SCENARIOS["iid"], 200, seed=7, setting=simulated.Setting(truth=1.25))
    assert passed / gradings >= 0.9, f"{passed} of {gradings}"


def test_a_burst_shows_as_cpu_wait_on_the_baseline_side_only():
    import numpy as np

    baseline, candidate, waits = simulated.rounds(simulated.Scenario("b", burst_start=1.0), simulated.Setting(), np.random.default_rng(1))
    assert all(w[0] > 0.5 for w in waits) and all(w[1] < 0.02 for w in waits)
    assert np.median(baseline / candidate) > 2 * simulated.Setting().threshold
