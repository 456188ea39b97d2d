"""Issue 14's findings 1-6: answers that earned speed points by changing what the notebook's own process measures.

Each submission below is a slow answer plus a trick played inside the learner's kernel: the timing harness's numpy
or clock replaced, a record forged, the baseline slowed, a memo serving the inputs again, a trace count or a call
count faked. Before the grader timed the checks itself (`tfperf_lab.judge`), each of them scored its speed cell (and
the faked structural cell); now none may, while the honest reference in the same class keeps every point.
"""

from __future__ import annotations

import pytest

from pipeline import COURSE, grade_submissions, scores, with_solution
from tfperf_lab import variants

pytestmark = pytest.mark.pipeline

L01 = COURSE.lesson("01_callable_handles")
L03 = COURSE.lesson("03_tf_function")
HANDLE = "    handle = sess._make_callable_from_options(options)\n"
SLOW_HANDLE = HANDLE + "    def handle(*values):\n        return sess.run(fetch + target, dict(zip(feed, values)))[: len(fetch)]\n"
RETURN = "    return run_callable\n"


def slow_01(trick: str = "") -> dict:
    """Lesson 01's answer calling sess.run inside (honestly about 1x), with ``trick`` run when the answer cell runs."""
    return with_solution(L01, "make_callable_solution", {HANDLE: SLOW_HANDLE, RETURN: RETURN + trick})


PERCENTILE = """
import numpy
numpy.percentile = lambda a, q, *args, **kwargs: numpy.asarray([50.0, 60.0])  # finding 1: the interval made up
"""
CLOCK = """
import sys as _sys, time as _time
_real = _time.perf_counter


def _clock():  # finding 2: a clock that runs 1000x slower, but only inside assert_speedup
    frame = _sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "assert_speedup":
            return _real() / 1000
        frame = frame.f_back
    return _real()


tfperf.timing.compare.__kwdefaults__.update(clock=_clock)
"""
FORGED = """
import json as _json, os as _os
vars(tfperf)["assert_speedup"] = lambda *args, **kwargs: None  # finding 3: the check never runs...
if _os.environ.get("TFPERF_RECORD"):  # ...and a passing record is written instead
    with open(_os.environ["TFPERF_RECORD"], "a") as _out:
        _out.write(_json.dumps({"name": "exercise_handle_vs_sess_run", "speedup": 50.0, "ci": [40.0, 60.0], "passed": True,
                                "threshold": 1.6, "rounds": 10, "format": 1}) + "\\n")
"""
SLOWED_BASELINE = """
import time as _time
_run = v1.Session.run
def _slow_run(self, *args, **kwargs):  # finding 4: every sess.run (the baseline's) made 2 ms slower
    _time.sleep(0.002)
    return _run(self, *args, **kwargs)
v1.Session.run = _slow_run
"""
UNBOUND = ("    def handle(*values):  # finding 6: the class's run, which a count on the instance does not see\n"
           "        return v1.Session.run(sess, fetch + target, dict(zip(feed, values)))[: len(fetch)]\n")

MEMO_STEP = """
    cache = {}

    def step(x, y):  # finding 5: eager, but serves a remembered loss for inputs it has seen
        key = (np.asarray(x).tobytes(), np.asarray(y).tobytes())
        if key not in cache:
            cache[key] = train_step(model, optimizer, x, y)
        return cache[key]

    return step
"""
SIGNED_STEP = ("    @tf.function(input_signature=signature)\n    def step(x, y):\n        return train_step(model, optimizer, x, y)\n\n"
               "    return step\n")
FAKE_COUNT = """
    @tf.function
    def step(x, y):  # finding 6: retraces for every batch size, and says it traced once
        return train_step(model, optimizer, x, y)

    step.experimental_get_tracing_count = lambda: 1
    return step
"""

CASES_01 = {
    "reference": L01.source_notebook(),
    "percentile": slow_01(PERCENTILE),
    "clock": slow_01(CLOCK),
    "forged": slow_01(FORGED),
    "slowed-baseline": with_solution(L01, "make_callable_solution", {
        "        return handle(*[": "        __import__('time').sleep(0.001)\n        return handle(*[", RETURN: RETURN + SLOWED_BASELINE}),
    "unbound-run": with_solution(L01, "make_callable_solution", {HANDLE: HANDLE + UNBOUND}),
}
CASES_03 = {
    "reference": L03.source_notebook(),
    "memo": with_solution(L03, "make_train_step_solution", {SIGNED_STEP: MEMO_STEP}),
    "fake-count": with_solution(L03, "make_train_step_solution", {SIGNED_STEP: FAKE_COUNT}),
}


@pytest.fixture(scope="module")
def graded_01(tmp_path_factory):
    return grade_submissions(tmp_path_factory, L01, CASES_01)


@pytest.fixture(scope="module")
def graded_03(tmp_path_factory):
    return grade_submissions(tmp_path_factory, L03, CASES_03)


def test_the_reference_keeps_every_point(graded_01, graded_03):
    for result, lesson in ((graded_01["reference"], L01), (graded_03["reference"], L03)):
        got = scores(result)
        assert result.error is None and all(got[c["id"]] == c["points"] for c in lesson.grade_cells() if c["kind"] == "auto"), "\n".join(result.lines())
        assert all(m.technique and "grader" in m.technique for m in result.measurements if m.name.startswith("exercise_")), result.measurements


@pytest.mark.parametrize("case", ["percentile", "clock", "forged", "slowed-baseline"])
def test_a_slow_answer_cannot_change_the_measurement(graded_01, case):
    """Findings 1-4: whatever the kernel does to numpy, the clock, the harness or the baseline, the grader's number stands."""
    result = graded_01[case]
    got = scores(result)
    assert result.error is None, "\n".join(result.lines())
    assert got["handle_matches_sess_run"] == 2, "\n".join(result.lines())  # the answers are correct...
    assert got["handle_is_faster"] == 0, "\n".join(result.lines())  # ...and slow
    passing = [m for m in result.measurements if m.name == "exercise_handle_vs_sess_run" and m.passed]
    assert not passing, passing


def test_a_forged_record_is_not_read(graded_01):
    result = graded_01["forged"]
    assert any("never served" in note for note in result.notes), result.notes


def test_an_unbound_session_run_loses_the_structure_point(graded_01):
    """Finding 6 (lesson 01): the in-kernel call count misses it; the grader's verdict on the same handle does not."""
    got = scores(graded_01["unbound-run"])
    assert got["handle_matches_sess_run"] == 2 and got["handle_built_once"] == 0 and got["handle_is_faster"] == 0, \
        "\n".join(graded_01["unbound-run"].lines())


def test_a_memo_finds_nothing_to_remember(graded_03):
    """Finding 5: every timed call gets inputs the grader drew, so a memoised eager step is as slow as the eager one."""
    got = scores(graded_03["memo"])
    assert got["train_step_is_faster"] == 0, "\n".join(graded_03["memo"].lines())


def test_a_faked_trace_count_loses_both_points(graded_03):
    """Finding 6 (lesson 03): a step that retraces per batch size claims one trace; the grader's fresh batch sizes expose it."""
    got = scores(graded_03["fake-count"])
    assert got["train_step_traces_once"] == 0 and got["train_step_is_faster"] == 0, "\n".join(graded_03["fake-count"].lines())
