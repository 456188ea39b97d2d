"""Lesson 06's exercises against answers that are correct but not optimized.

A training step left eager keeps the correctness points and loses the trace and speed points; a
Hessian-vector product that builds the full Hessian keeps the value points and loses the structure
point. Also a smoke test of the plot the lesson added (`tfperf.plots.loss_vs_time`).
"""

import matplotlib
import pytest

matplotlib.use("Agg")

import tfperf  # noqa: E402
from pipeline import COURSE, assert_keeps_and_loses, grade_submissions, with_solution  # noqa: E402

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("06_gradient_tape")
_PRODUCT = ("        projected = tf.reduce_sum(gradient * v)\n"
            "    return outer.gradient(projected, x, unconnected_gradients=zero)\n")
VARIANTS = {
    # make_train_step returns the plain Python step: same math, no tf.function.
    "eager_train_step": ("train_step_solution", {"    @tf.function\n    def train_step": "    def train_step"}),
    # H v through the full Hessian: right values, n backward passes and n x n memory.
    "full_hessian": ("hvp_solution", {_PRODUCT: "    hessian = outer.jacobian(gradient, x, unconnected_gradients=zero)\n"
                                                "    return tf.linalg.matvec(hessian, v)\n"}),
}
KEEPS = {
    "eager_train_step": ("train_step_matches_reference", "train_step_skips_none_gradients", "train_step_loss_falls_on_mnist",
                         "second_derivative_values", "hvp_values", "derivatives_never_none", "hvp_without_hessian"),
    "full_hessian": ("second_derivative_values", "hvp_values", "derivatives_never_none", "train_step_matches_reference",
                     "train_step_traced_once", "train_step_is_faster"),
}
LOSES = {
    "eager_train_step": ("train_step_traced_once", "train_step_is_faster"),
    "full_hessian": ("hvp_without_hessian",),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_submissions(tmp_path_factory, LESSON, {student: with_solution(LESSON, cell, replace) for student, (cell, replace) in VARIANTS.items()})


@pytest.mark.parametrize("student", sorted(VARIANTS))
def test_unoptimized_answer_keeps_correctness_and_loses_structure_and_speed_points(graded, student):
    assert_keeps_and_loses(graded[student], KEEPS[student], LOSES[student])


def test_eager_train_step_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded["eager_train_step"].measurements if m.name == "exercise_train_step_vs_eager"]
    assert measured.ci[0] < 4.0 and not measured.passed


def test_loss_vs_time_draws_one_line_per_run():
    ax = tfperf.plots.loss_vs_time({"eager": ([0.02, 0.04, 0.06], [2.3, 2.0, 1.8]), "tf.function": ([0.001, 0.002, 0.003], [2.3, 2.0, 1.8])},
                                   log=True, title="t")
    assert [line.get_label() for line in ax.get_lines()] == ["eager", "tf.function"]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "elapsed time (s)" and ax.get_title() == "t"
