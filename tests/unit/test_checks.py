import types

import numpy as np
import pytest

import tfperf


def test_assert_close_passes_within_float32_tolerance():
    tfperf.assert_close([np.float32(1.0) + 1e-7, np.array([2.0, 3.0])], [1.0, np.array([2.0, 3.0])])


def test_assert_close_names_the_item_and_the_hint():
    with pytest.raises(AssertionError, match=r"out\[1\]: values differ.*Hint: see section 2"):
        tfperf.assert_close([1.0, 2.0], [1.0, 2.5], what="out", hint="see section 2")
    with pytest.raises(AssertionError, match="expected a list of 2 values, got ndarray"):
        tfperf.assert_close(np.zeros(2), [0.0, 0.0])
    with pytest.raises(AssertionError, match=r"expected shape \(3,\), got \(2,\)"):
        tfperf.assert_close(np.zeros(2), np.zeros(3))


def test_assert_raises_checks_type_and_message():
    def boom(kind, text):
        raise kind(text)

    tfperf.assert_raises(ValueError, boom, ValueError, "missing placeholder b", match="b")
    with pytest.raises(AssertionError, match="expected TypeError, got ValueError"):
        tfperf.assert_raises(TypeError, boom, ValueError, "x")
    with pytest.raises(AssertionError, match="nothing was raised"):
        tfperf.assert_raises(TypeError, lambda: None)
    with pytest.raises(AssertionError, match="mentions 'stranger'"):
        tfperf.assert_raises(ValueError, boom, ValueError, "missing b", match="stranger")


def test_count_calls_counts_and_restores_instance_and_class_attributes():
    class Session:
        def run(self):
            return "ran"

    sess = Session()
    with tfperf.count_calls(sess, "run") as runs:
        assert sess.run() == "ran" and sess.run() == "ran"
    assert runs.count == 2
    assert "run" not in vars(sess) and sess.run() == "ran"
    module = types.SimpleNamespace(f=lambda: 1)
    original = module.f
    with tfperf.count_calls(module, "f") as calls:
        module.f()
    assert calls.count == 1 and module.f is original


def test_assert_speedup_passes_fails_and_records(tmp_path, monkeypatch, clock, capsys):
    monkeypatch.setenv("TFPERF_RECORD", str(tmp_path / "records.jsonl"))
    tfperf.assert_speedup(clock.workload(5e-3), clock.workload(1e-3), threshold=2.0, name="good", clock=clock)
    with pytest.raises(AssertionError, match=r"at least 2x faster.*measured 1.00x.*Hint: use the handle"):
        tfperf.assert_speedup(clock.workload(1e-3), clock.workload(1e-3), threshold=2.0, name="bad", hint="use the handle", clock=clock)
    assert "5.00x (needs >= 2x: pass)" in capsys.readouterr().out
    names = [r.name for r in tfperf.report.load_records(tmp_path / "records.jsonl")]
    assert names == ["good", "bad"]


def test_harness_problems_is_empty_until_something_is_replaced(monkeypatch):
    assert tfperf.checks.harness_problems() == []
    import time

    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(tfperf.timing, "compare", lambda *a, **k: None)
    assert set(tfperf.checks.harness_problems()) == {"time.perf_counter", "tfperf.timing.compare"}


def test_assert_speedup_refuses_to_measure_with_a_replaced_clock(monkeypatch, clock):
    import itertools
    import time

    ticks = itertools.count()
    monkeypatch.setattr(time, "time", lambda: next(ticks))
    with pytest.raises(AssertionError, match=r"replaced part of the timing harness \(time.time\)"):
        tfperf.assert_speedup(clock.workload(5e-3), clock.workload(1e-3), threshold=2.0, clock=clock)
