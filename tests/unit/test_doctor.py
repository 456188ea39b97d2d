"""`tfperf-lab doctor` and the machine's state in every measurement."""

import numpy as np

from tfperf import env, timing
from tfperf_lab.speed import doctor
from tfperf_lab.publish import campaigns, readme
from pipeline import COURSE

CAMPAIGNS = campaigns.load_campaigns(readme.flake_folder(COURSE))


def noise(spread: float, rounds: int = 500, *, burst_every: int = 0, seed: int = 0) -> doctor.Noise:
    rng = np.random.default_rng(seed)
    ratios = np.exp(rng.normal(0, spread, rounds))
    if burst_every:
        for start in range(0, rounds, burst_every):
            ratios[start:start + 4] *= 0.3  # a neighbour halves one side's speed for 4 rounds, unseen by the grader
    return doctor.Noise(ratios, np.full(rounds, 0.04), np.ones(rounds, dtype=bool), {"cores": 2})


def test_a_quiet_machine_can_grade_every_check_and_a_bursty_one_cannot():
    quiet = doctor.verdicts(COURSE, CAMPAIGNS, noise(0.02), virtual=10_000)
    assert quiet and all(v.reliable for v in quiet), [v for v in quiet if not v.reliable]
    bursty = doctor.verdicts(COURSE, CAMPAIGNS, noise(0.3, burst_every=10), virtual=1_000)  # "not reliable" shows in 1,000
    assert any(not v.reliable for v in bursty)
    lines = doctor.report(noise(0.3, burst_every=10), bursty)
    assert "NOT reliable" in "\n".join(lines) and lines[-1].startswith(f"{sum(v.reliable for v in bursty)} of {len(bursty)} speed checks")


def test_every_speed_check_with_a_campaign_has_a_recorded_effect():
    found = doctor.effects(COURSE, CAMPAIGNS)
    named = {(lesson.id, names[0]) for lesson in COURSE.lessons for names in lesson.speed_checks().values() if len(names) == 1}
    assert named <= set(found), named - set(found)
    from tfperf_lab.speed import replay

    thresholds = {(lesson.id, name): check.threshold for lesson in COURSE.lessons for cell in lesson.speed_checks()
                  for name, check in replay.check_settings(lesson.source_notebook(), cell).items()}
    assert all(reference > thresholds[key] and (slow is None or slow < thresholds[key]) for key, (reference, slow) in found.items())


def test_the_noise_of_two_identical_workloads_is_measured_in_paired_rounds():
    measured = doctor.measure(1.0)
    assert len(measured.ratios) >= 10 and 0.5 < float(np.median(measured.ratios)) < 2.0
    assert measured.spread >= 0 and measured.state["cores"] >= 1 and "steal_share" in measured.state


def test_grade_warns_on_a_busy_or_constrained_machine_and_not_on_a_quiet_one():
    assert doctor.warning({"cores": 2, "load1": 0.2, "cpu_max": "max 100000", "steal_share": 0.0}) is None
    said = doctor.warning({"cores": 2, "load1": 3.1, "cpu_max": "50000 100000", "steal_share": 0.05, "throttled_share": 0.2})
    assert "load average 3.1" in said and "stolen" in said and "quota of 0.5 CPUs" in said and "throttled" in said


def test_every_comparison_keeps_the_machine_s_state_while_it_measured():
    ticks = iter(range(10**7))
    result = timing.compare(lambda: None, lambda: None, clock=lambda: next(ticks) * 1e-3, budget=0.5)
    machine = result.environment["machine"]
    assert machine["cores"] == env.fingerprint()["cpu_count"] and "load1" in machine and "steal_share" in machine
