"""Lesson 03's exercises against answers that are correct but not optimized, and its break-even plot.

Exercise A (a training step that traces once): the eager step returned unchanged keeps the
correctness points and loses the trace and speed points; a `tf.function` without an
`input_signature` is fast on batches of one size but loses the trace point.
Exercise B (a step that retraces on every call): the slow step returned unchanged, and the
plausible non-fix `reduce_retracing=True`, keep the correctness points and lose the trace and speed
points; the step run eagerly (no `tf.function`) is faster than the retracing one but loses both
structural checks.
"""

import matplotlib

matplotlib.use("Agg")

import pytest

import tfperf
from autograder import course
from pipeline import assert_keeps_and_loses, grade_submissions, with_changes

pytestmark = pytest.mark.pipeline
LESSON = course.lesson("03_tf_function")
A_CELL, B_CELL = "make_train_step_solution", "make_fast_step_solution"
A_DECORATOR = "    @tf.function(input_signature=signature)\n    def step(x, y):\n"
B_HEAD = ("    @tf.function(input_signature=signature)\n    def sgd_step(x, y, step):\n"
          "        lr = BASE_LR * tf.minimum(1.0, tf.cast(step + 1, tf.float32) / WARMUP)\n")
B_SLOW_MATHS = "        lr = BASE_LR * min(1.0, (step + 1) / WARMUP)\n"

# name -> {solution cell: {old: new}}; each notebook changes one answer to A and one to B.
VARIANTS = {
    "eager_step_and_slow_step_unchanged": {
        A_CELL: {A_DECORATOR: "    def step(x, y):\n"},
        B_CELL: {"    ### BEGIN SOLUTION\n": "    ### BEGIN SOLUTION\n    return make_slow_step(w, b)\n"},
    },
    "no_signature_and_reduce_retracing": {
        A_CELL: {A_DECORATOR: "    @tf.function\n    def step(x, y):\n"},
        B_CELL: {B_HEAD: "    @tf.function(reduce_retracing=True)\n    def sgd_step(x, y, step):\n" + B_SLOW_MATHS},
    },
    "eager_sgd_step": {
        B_CELL: {B_HEAD: "    def sgd_step(x, y, step):\n" + B_SLOW_MATHS},
    },
}
EXPECTED = {  # name -> (cells that keep their points, cells that score 0)
    "eager_step_and_slow_step_unchanged": (
        ("train_step_matches_eager", "fast_step_same_result"),
        ("train_step_traces_once", "train_step_is_faster", "fast_step_traces_at_most_twice", "fast_step_is_faster"),
    ),
    "no_signature_and_reduce_retracing": (
        ("train_step_matches_eager", "train_step_is_faster", "fast_step_same_result"),
        ("train_step_traces_once", "fast_step_traces_at_most_twice", "fast_step_is_faster"),
    ),
    "eager_sgd_step": (
        ("train_step_matches_eager", "train_step_traces_once", "train_step_is_faster", "fast_step_same_result"),
        ("fast_step_traces_at_most_twice", "fast_step_is_faster"),
    ),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_submissions(tmp_path_factory, LESSON, {name: with_changes(LESSON, changes) for name, changes in VARIANTS.items()})


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_unoptimized_answers_keep_correctness_and_lose_structure_and_speed_points(graded, name):
    assert_keeps_and_loses(graded[name], *EXPECTED[name])


def test_unoptimized_answers_are_measured_below_the_thresholds(graded):
    by_name = {m["name"]: m for m in graded["eager_step_and_slow_step_unchanged"].measurements}
    for check in ("exercise_a_step_vs_eager", "exercise_b_fixed_vs_retracing"):
        assert by_name[check]["ci"][0] < by_name[check]["threshold"] and not by_name[check]["passed"], by_name[check]


def test_break_even_plot_marks_the_crossing():
    ax = tfperf.plots.break_even(eager=10e-3, graph=1e-3, first_call=0.101)
    (crossing,) = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert crossing.get_xdata()[0] == pytest.approx(11.11, rel=1e-3)  # (0.101 - 0.001) / (0.010 - 0.001)
    eager, graph = ax.get_lines()[:2]
    assert eager.get_ydata()[10] == pytest.approx(0.1) and graph.get_ydata()[1] == pytest.approx(0.101)
    assert ax.get_xlim()[1] >= 33  # three times the break-even by default
    flat = tfperf.plots.break_even(eager=1e-3, graph=1e-3, first_call=0.2, steps=50)
    assert len(flat.get_lines()) == 2 and len(flat.get_lines()[0].get_xdata()) == 51  # no gain: no crossing line
