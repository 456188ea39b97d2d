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
from tfperf_lab.course import variants
from pipeline import COURSE, assert_keeps_and_loses, class_results, scores, with_solution

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("03_tf_function")
# the answers that change both exercises, from the one registry of unoptimized answers
BOTH = ("eager_step_and_slow_step_unchanged", "no_signature_and_reduce_retracing", "eager_sgd_step")
VARIANTS = {variant.name: variant for variant in variants.for_lesson(LESSON.id) if variant.name in BOTH}
# Fast but wrong: one compiled step, traced once, that trains the first layer only. Its structure is right; its values
# and its speed cell (outputs that differ are not timed) are not.
FIRST_LAYER_ONLY = {
    "    @tf.function(input_signature=signature)\n    def step(x, y):\n        return train_step(model, optimizer, x, y)\n":
        "    first = model.layers[0].trainable_variables\n\n"
        "    @tf.function(input_signature=signature)\n    def step(x, y):\n        with tf.GradientTape() as tape:\n"
        "            loss = loss_fn(y, model(x, training=True))\n        gradients = tape.gradient(loss, first)\n"
        "        optimizer.apply_gradients(zip(gradients, first))\n        return loss\n",
}


def class_submissions():
    return ({name: variant.notebook(LESSON) for name, variant in VARIANTS.items()}
            | {"first_layer_only": with_solution(LESSON, "make_train_step_solution", FIRST_LAYER_ONLY)})


graded = class_results(LESSON)


def test_a_fast_but_wrong_step_keeps_the_structure_it_got_right_and_says_why_it_is_not_timed(graded):
    result = graded["first_layer_only"]
    got = scores(result)
    assert got["train_step_traces_once"] > 0 and got["train_step_matches_eager"] == 0 and got["train_step_is_faster"] == 0, (
        "\n".join(result.lines()))
    (speed,) = [cell for cell in result.cells if cell.id == "train_step_is_faster"]
    assert "outputs differ from the reference's on the same inputs: not timed" in speed.message, "\n".join(result.lines())
    assert got["fast_step_is_faster"] > 0 and not result.review, "\n".join(result.lines())  # exercise B untouched


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_unoptimized_answers_keep_correctness_and_lose_structure_and_speed_points(graded, name):
    assert_keeps_and_loses(graded[name], VARIANTS[name].keeps, VARIANTS[name].loses)


def test_unoptimized_answers_are_measured_below_the_thresholds(graded):
    by_name = {m.name: m for m in graded["eager_step_and_slow_step_unchanged"].measurements}
    for check in ("exercise_a_step_vs_eager", "exercise_b_fixed_vs_retracing"):
        assert by_name[check].ci[0] < by_name[check].threshold and not by_name[check].passed, by_name[check]


def test_break_even_plot_marks_the_crossing():
    ax = tfperf.plots.break_even(eager=10e-3, graph=1e-3, first_call=0.101)
    (crossing,) = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert crossing.get_xdata()[0] == pytest.approx(11.11, rel=1e-3)  # (0.101 - 0.001) / (0.010 - 0.001)
    eager, graph = ax.get_lines()[:2]
    assert eager.get_ydata()[10] == pytest.approx(0.1) and graph.get_ydata()[1] == pytest.approx(0.101)
    assert ax.get_xlim()[1] >= 33  # three times the break-even by default
    flat = tfperf.plots.break_even(eager=1e-3, graph=1e-3, first_call=0.2, steps=50)
    assert len(flat.get_lines()) == 2 and len(flat.get_lines()[0].get_xdata()) == 51  # no gain: no crossing line
