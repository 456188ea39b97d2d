import time

import numpy as np
import pytest

import tfperf
from tfperf import timing
from conftest import make_result


def test_compare_finds_a_known_2x_difference(clock):
    result = tfperf.compare(clock.workload(2e-3, jitter=0.1, seed=1), clock.workload(1e-3, jitter=0.1, seed=2), clock=clock)
    assert result.words == "faster"
    assert 1.8 < result.ci[0] <= result.speedup <= result.ci[1] < 2.2
    assert result.rounds >= 10


def test_compare_calls_two_equal_functions_inconclusive_not_faster(clock):
    result = tfperf.compare(clock.workload(1e-3, jitter=0.2, seed=3), clock.workload(1e-3, jitter=0.2, seed=4), clock=clock)
    assert result.words == "no measurable difference"
    assert result.ci[0] < 1 < result.ci[1]
    assert not result.passed  # no threshold, nothing passes


def test_compare_with_threshold_passes_on_the_interval_lower_bound(clock):
    fast = tfperf.compare(clock.workload(4e-3, jitter=0.1), clock.workload(1e-3, jitter=0.1, seed=5), threshold=2.0, clock=clock)
    slow = tfperf.compare(clock.workload(1e-3, jitter=0.1), clock.workload(1e-3, jitter=0.1, seed=6), threshold=2.0, clock=clock)
    assert fast.passed and fast.ci[0] >= 2.0
    assert not slow.passed and slow.ci[1] < 2.0


def test_compare_adds_rounds_while_inconclusive_up_to_the_budget(clock):
    result = tfperf.compare(clock.workload(1e-3, jitter=0.5, seed=7), clock.workload(0.96e-3, jitter=0.5, seed=8),
                            threshold=1.0, budget=4.0, clock=clock)  # 8 blocks of 0.25 s come first, budget or not
    assert result.rounds > 10
    assert result.elapsed <= 4.0 + 0.2  # stops within one round of the budget


def test_compare_excludes_warmup_from_samples(clock):
    calls = {"n": 0}

    def traced_once():
        calls["n"] += 1
        clock.now += 1.0 if calls["n"] == 1 else 1e-3  # first call "traces" for a second

    result = tfperf.compare(clock.workload(1e-3), traced_once, clock=clock)
    assert result.candidate.warmup[0] == pytest.approx(1.0)
    assert max(result.candidate.samples) == pytest.approx(1e-3)


def test_compare_calibrates_calls_per_sample_to_the_sample_time(clock):
    result = tfperf.compare(clock.workload(1e-4), clock.workload(1e-3), sample_time=0.02, clock=clock)
    assert result.baseline.number == 200 and result.candidate.number == 20


def test_compare_cycles_through_inputs(clock):
    seen = []
    tfperf.compare(lambda v: (seen.append(v), clock.workload(1e-3)()), lambda v: clock.workload(1e-3)(), inputs=[1, 2, 3], clock=clock)
    assert set(seen) == {1, 2, 3}


def test_harness_copies_tensor_outputs_to_host(clock):
    copied = []

    class Lazy:
        def numpy(self):
            copied.append(1)
            return np.zeros(1)

    work = clock.workload(1e-3)
    tfperf.measure(lambda: (work(), [Lazy(), {"k": Lazy()}])[1], repeats=2, warmup=1, clock=clock)
    assert len(copied) == 2 * (1 + 3 + 2 * 20)  # two per call: 1 warm-up, 3 calibration, 2 samples of 20 calls


def test_patching_time_perf_counter_later_does_not_fake_speed(monkeypatch, clock):
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    result = tfperf.measure(lambda: sum(range(100)), repeats=3, warmup=1)
    assert result.median > 0


def test_real_clock_measures_sleeps_twice_as_long():
    # 20 ms against 10 ms: even a 10 ms scheduling delay on a loaded machine leaves a 1.5x ratio.
    result = tfperf.compare(lambda: time.sleep(0.02), lambda: time.sleep(0.01), min_rounds=6, sample_time=0.01)
    assert result.ci[0] > 1.3  # a 2x effect, judged on the lower bound far below it


def test_timing_result_rejects_empty_or_non_positive_samples():
    with pytest.raises(ValueError, match="must not be empty"):
        tfperf.TimingResult("f", ())
    with pytest.raises(ValueError, match="positive"):
        tfperf.TimingResult("f", (1e-3, 0.0))
    with pytest.raises(ValueError, match="number must be at least 1; got 0"):
        tfperf.TimingResult("f", (1e-3,), number=0)


def test_timing_result_statistics_come_from_the_samples():
    result = make_result(samples=(1e-3, 2e-3, 3e-3, 4e-3))
    assert result.median == pytest.approx(2.5e-3)
    assert result.mean == pytest.approx(2.5e-3)
    assert result.min == pytest.approx(1e-3)
    assert result.count == 4
    assert result.iqr == pytest.approx(1.5e-3)
    with pytest.raises(Exception):
        result.samples = (1.0,)  # frozen


def test_summary_uses_one_unit_for_all_values():
    line = make_result("step", samples=(150e-6, 160e-6, 2000e-6, 140e-6)).summary()
    assert "us" in line and " ms" not in line


def test_comparison_summary_and_export_carry_the_measurement(clock):
    result = tfperf.compare(clock.workload(2e-3), clock.workload(1e-3), labels=("slow", "fast"), threshold=1.5, clock=clock)
    assert result.summary().startswith("fast vs slow: 2.00x (needs >= 1.5x: pass)")
    exported = result.to_dict()
    assert exported["speedup"] == pytest.approx(2.0) and exported["passed"] is True
    assert "tensorflow" in exported["environment"]


def test_compare_rejects_a_tensor_instead_of_a_callable():
    with pytest.raises(TypeError, match="expected a callable"):
        tfperf.compare(np.zeros(3), lambda: None)


def test_from_loops_divides_elapsed_time_by_the_item_count():
    result = tfperf.TimingResult.from_loops("pipeline", [1.0, 2.0], count=100, batch=32)
    assert result.samples == (0.01, 0.02) and result.metadata == {"batch": 32}


def test_format_seconds_picks_a_readable_unit():
    assert timing.format_seconds(1.5e-4) == "150 us"
    assert timing.format_seconds(2.5) == "2.5 s"


def test_describe_says_faster_only_when_the_interval_clears_one(clock):
    result = tfperf.compare(clock.workload(2e-3, jitter=0.1, seed=1), clock.workload(1e-3, jitter=0.1, seed=2),
                            labels=("slow", "fast"), clock=clock)
    sentence = result.describe()
    # the interval's bounds print outward (tfperf.units.interval), the median to nearest
    assert sentence.startswith(f"fast against slow: {result.speedup:.2f}x (95% CI {tfperf.units.interval(*result.ci)})")
    assert sentence.endswith(": faster on this run.")


def test_describe_says_slower_for_a_slower_candidate(clock):
    result = tfperf.compare(clock.workload(1e-3, jitter=0.1, seed=3), clock.workload(2e-3, jitter=0.1, seed=4), clock=clock)
    assert result.words == "slower" and "slower on this run" in result.describe()


def test_describe_finds_no_measurable_difference_between_equal_functions(clock):
    result = tfperf.compare(clock.workload(1e-3, jitter=0.2, seed=3), clock.workload(1e-3, jitter=0.2, seed=4), clock=clock)
    sentence = result.describe()
    assert "no measurable difference on this run" in sentence
    assert "faster" not in sentence and "slower" not in sentence


def test_describe_follows_the_verdict_not_the_median():
    # A median of 1.48x whose interval reaches 1x is not "faster"; a 0.69x whose interval stays below 1/1.05 is "slower".
    wide = timing.Comparison(make_result("serial"), make_result("overlap"), (1.48,), (1.0, 2.36))
    assert "too noisy to tell on this run" in wide.describe() and "faster" not in wide.describe()
    close = timing.Comparison(make_result("serial"), make_result("overlap"), (1.02,), (0.98, 1.06))
    assert "no measurable difference on this run" in close.describe()
    narrow = timing.Comparison(make_result("serial"), make_result("parallel"), (0.69,), (0.50, 0.93))
    assert "slower on this run" in narrow.describe()


def test_describe_calls_an_effect_fragile_only_when_the_rule_called_runs_faster_and_slower(clock):
    from tfperf.report import Seen

    result = tfperf.compare(clock.workload(2e-3, jitter=0.1, seed=1), clock.workload(1e-3, jitter=0.1, seed=2), clock=clock)
    straddling = Seen(0.8, 1.4, runs=4, profile="full", counts=(2, 2, 0))
    assert "A fragile effect: on the course's 2-core VM one run lands in 0.8-1.4x (9 runs in 10, from its 4 recorded runs" \
        in result.describe(seen=straddling)
    assert "fragile" not in result.describe(seen=(0.6, 1.4))  # medians straddling 1x are not the rule's words
    steady = result.describe(seen=(1.8, 2.2))
    assert "fragile" not in steady and steady.endswith("On the course's 2-core VM one run lands in 1.8-2.2x.")
    assert "This run landed outside that range." in result.describe(seen=(5.0, 8.0))


def test_describe_writes_ranges_as_people_do(clock):
    result = tfperf.compare(clock.workload(2e-3, jitter=0.1, seed=1), clock.workload(1e-3, jitter=0.1, seed=2), clock=clock)
    assert result.describe(seen=(146.0, 255.0)).endswith("one run lands in 146-255x. This run landed outside that range.")
    assert "lands in 1.08-1.12x" in result.describe(seen=(1.08, 1.12))
    assert "lands anywhere from 0.8x to 2.4x" in result.describe(seen=(0.8, 2.4))  # runs that spread wide say so
    assert "lands in 1.07-1.13x" in result.describe(seen=(1.0751, 1.1201))  # rounded outward


def test_harness_waits_for_the_device_after_every_call_whatever_it_returns(clock):
    waited, work = [], clock.workload(1e-3)

    def device_wait():
        waited.append(clock.now)
        clock.now += 4e-3  # the kernels the call queued finish only now

    result = tfperf.measure(lambda: (work(), None)[1], repeats=2, warmup=1, number=5, wait=device_wait, clock=clock)
    assert len(waited) == 1 + 2 * 5  # warm-up and every timed call, although the function returns None
    assert result.median == pytest.approx(5e-3)  # dispatch (1 ms) plus the wait (4 ms), not dispatch alone


def test_compare_waits_for_the_device_on_both_sides(clock):
    waited = []
    tfperf.compare(clock.workload(2e-3), clock.workload(1e-3), min_rounds=2, max_rounds=2, warmup=1,
                   wait=lambda: waited.append(1), clock=clock)
    assert len(waited) > 4


def test_no_device_wait_without_tensorflow_or_on_a_synchronous_cpu(monkeypatch):
    monkeypatch.delitem(__import__("sys").modules, "tensorflow", raising=False)
    assert timing.device_wait() is None  # never imports TensorFlow itself
    import tensorflow as tf

    monkeypatch.setattr(tfperf.env, "_GPUS", ())
    assert timing.device_wait() is None  # CPU, synchronous eager execution: nothing can be pending


class _FakeTensorFlow:
    """Just enough of TensorFlow for `device_wait`: sync_devices, the execution mode and eager mode."""

    def __init__(self, *, eager=True, synchronous=True):
        self.synced, self.eager = 0, eager
        experimental = type("E", (), {"sync_devices": lambda _: self._sync()})()
        self.test = type("T", (), {"experimental": experimental})()
        config = type("C", (), {"get_synchronous_execution": staticmethod(lambda: synchronous)})()
        self.config = type("K", (), {"experimental": config})()

    def _sync(self):
        self.synced += 1

    def executing_eagerly(self):
        return self.eager


@pytest.mark.parametrize("gpus, synchronous, eager, syncs", [
    (("/physical_device:GPU:0",), True, True, 1),   # a GPU queues its kernels: wait for them
    ((), False, True, 1),                            # set_synchronous_execution(False) on a CPU: same
    (("/physical_device:GPU:0",), True, False, 0),   # a TF1 session returns finished results; sync_devices would raise
])
def test_device_wait_uses_sync_devices_only_when_work_can_be_pending(monkeypatch, gpus, synchronous, eager, syncs):
    fake = _FakeTensorFlow(eager=eager, synchronous=synchronous)
    monkeypatch.setitem(__import__("sys").modules, "tensorflow", fake)
    monkeypatch.setattr(tfperf.env, "_GPUS", gpus)
    wait = timing.device_wait()
    assert wait is not None
    wait()
    assert fake.synced == syncs


def test_real_sync_devices_exists_in_the_tensorflow_the_course_supports():
    import tensorflow as tf

    assert callable(tf.test.experimental.sync_devices)  # added in TF 2.14; the course needs 2.16


def test_a_round_a_burst_landed_on_costs_no_budget(clock):
    """Half the rounds are dropped (a neighbour's burst): the check still gets its budget of kept rounds' time."""
    def pair(index):  # every round takes 1 s; the ratio wavers around 1.5 so no interval decides against 1.5
        clock.now += 1.0
        return 1.5 + (0.2 if (index // 2) % 2 else -0.2), 1.0  # kept (even) rounds alternate 1.3, 1.7

    every_other = lambda count: [i % 2 == 0 for i in range(count)]  # noqa: E731
    dropped = timing.paired_rounds(pair, threshold=1.5, min_rounds=4, budget=10.0, clock=clock, keep=every_other)
    assert dropped.dropped >= 9 and len(dropped.samples[0]) >= 10, dropped  # ~10 s of kept rounds, ~10 s dropped
    clock.now = 0.0
    steady = timing.paired_rounds(pair, threshold=1.5, min_rounds=4, budget=10.0, clock=clock)
    assert steady.dropped == 0 and len(steady.samples[0]) == 11, steady  # out of time after 10 s of rounds, as before
