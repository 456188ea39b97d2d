"""Lesson 06's exercises against answers that are correct but not optimized.

A training step left eager keeps the correctness points and loses the trace and speed points; a
Hessian-vector product that builds the full Hessian keeps the value points and loses the structure and
speed points, also when it calls `jacobian` through an alias saved before the structure test patches
the class (that test counts calls in the learner's own process, so its point needs the grader's speed
verdict). A step left eager that claims one trace through a forged `experimental_get_tracing_count` passes
the trace test in its own kernel and loses it to the grader's speed verdict. The full Hessian built by `tf.hessians` inside a
tf.function (no tape, no jacobian, no pfor: the counts on the tape and its engine see nothing) loses the structure point to
the graph TensorFlow traces, whose while loop runs over the elements of x. Also a smoke test of the plot the lesson added (`tfperf.plots.loss_vs_time`).
"""

import matplotlib
import pytest

matplotlib.use("Agg")

import tfperf  # noqa: E402
from pipeline import COURSE, assert_keeps_and_loses, class_results, with_solution  # noqa: E402

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("06_gradient_tape")
_TAPES = (
    "    zero = tf.UnconnectedGradients.ZERO\n"
    "    with tf.GradientTape() as outer:\n"
    "        outer.watch(x)\n"
    "        with tf.GradientTape() as inner:\n"
    "            inner.watch(x)\n"
    "            y = f(x)\n"
    "        if y.shape.rank != 0:\n"
    "            raise ValueError(f\"f(x) must be a scalar; got shape {y.shape}\")\n"
    "        gradient = inner.gradient(y, x, unconnected_gradients=zero)\n"
    "        projected = tf.reduce_sum(gradient * v)\n"
    "    return outer.gradient(projected, x, unconnected_gradients=zero)\n")
_HESSIANS_IN_GRAPH = (
    "    @tf.function\n"
    "    def full_product(x, v):\n"
    "        y = f(x)\n"
    "        if y.shape.rank != 0:\n"
    "            raise ValueError(f\"f(x) must be a scalar; got shape {y.shape}\")\n"
    "        try:\n"
    "            (hessian,) = tf.hessians(y, x)  # the full n x n Hessian: one gradient per element, in a while loop\n"
    "        except (TypeError, ValueError):  # a constant first gradient has no second one: the Hessian is zero\n"
    "            hessian = tf.zeros(tf.concat([tf.shape(x), tf.shape(x)], 0))\n"
    "        return tf.linalg.matvec(hessian, v)\n"
    "\n"
    "    return full_product(x, v)\n")
_PRODUCT = ("        projected = tf.reduce_sum(gradient * v)\n"
            "    return outer.gradient(projected, x, unconnected_gradients=zero)\n")
VARIANTS = {
    # make_train_step returns the plain Python step: same math, no tf.function.
    "eager_train_step": ("train_step_solution", {"    @tf.function\n    def train_step": "    def train_step"}),
    # H v through the full Hessian: right values, n backward passes and n x n memory.
    "full_hessian": ("hvp_solution", {_PRODUCT: "    hessian = outer.jacobian(gradient, x, unconnected_gradients=zero)\n"
                                                "    return tf.linalg.matvec(hessian, v)\n"}),
    # The same through an alias taken when the cell runs: tfperf.count_calls, which patches tf.GradientTape.jacobian
    # later, never sees the call, so the structure test passes in the learner's kernel; the grader's timing does not.
    "aliased_full_hessian": ("hvp_solution", {
        "def hessian_vector_product(f, x, v):\n": "_jacobian = tf.GradientTape.jacobian  # saved before any test patches it\n\n\n"
                                                  "def hessian_vector_product(f, x, v):\n",
        _PRODUCT: "    hessian = _jacobian(outer, gradient, x, unconnected_gradients=zero)\n"
                  "    return tf.linalg.matvec(hessian, v)\n"}),
    # H v through tf.hessians in a tf.function: symbolic gradients in a while loop, never a tape, a jacobian or pfor.
    "hessians_in_graph": ("hvp_solution", {_TAPES: _HESSIANS_IN_GRAPH}),
    # The eager step with a forged trace count: the trace test reads TensorFlow's own function class, not the attribute.
    "forged_trace_count": ("train_step_solution", {
        "    @tf.function\n    def train_step": "    def train_step",
        "    return train_step\n": "    train_step.experimental_get_tracing_count = lambda: 1  # claims one trace\n    return train_step\n"}),
}
_HVP_CORRECT = ("second_derivative_values", "hvp_values", "derivatives_never_none")
KEEPS = {
    "eager_train_step": ("train_step_matches_reference", "train_step_skips_none_gradients", "train_step_loss_falls_on_mnist",
                         "second_derivative_values", "hvp_values", "derivatives_never_none", "hvp_without_hessian", "hvp_is_faster"),
    "full_hessian": _HVP_CORRECT + ("train_step_matches_reference", "train_step_traced_once", "train_step_is_faster"),
    "aliased_full_hessian": _HVP_CORRECT + ("train_step_matches_reference", "train_step_traced_once", "train_step_is_faster"),
    "hessians_in_graph": _HVP_CORRECT + ("train_step_matches_reference", "train_step_traced_once", "train_step_is_faster"),
    "forged_trace_count": _HVP_CORRECT + ("train_step_matches_reference", "train_step_skips_none_gradients",
                                          "train_step_loss_falls_on_mnist", "hvp_without_hessian", "hvp_is_faster"),
}
LOSES = {
    "eager_train_step": ("train_step_traced_once", "train_step_is_faster"),
    "full_hessian": ("hvp_without_hessian", "hvp_is_faster"),
    "aliased_full_hessian": ("hvp_without_hessian", "hvp_is_faster"),
    "hessians_in_graph": ("hvp_without_hessian", "hvp_is_faster"),
    # not on the review list (an attribute on its own function reaches nothing): the trace test reads TensorFlow's count
    "forged_trace_count": ("train_step_traced_once", "train_step_is_faster"),
}


def class_submissions():
    return {student: with_solution(LESSON, cell, replace) for student, (cell, replace) in VARIANTS.items()}


graded = class_results(LESSON)


@pytest.mark.parametrize("student", sorted(VARIANTS))
def test_unoptimized_answer_keeps_correctness_and_loses_structure_and_speed_points(graded, student):
    assert_keeps_and_loses(graded[student], KEEPS[student], LOSES[student])


def test_eager_train_step_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded["eager_train_step"].measurements if m.name == "exercise_train_step_vs_eager"]
    assert measured.threshold == 3.0 and measured.ci[0] < measured.threshold and not measured.passed, (measured.speedup, measured.ci)


@pytest.mark.parametrize("student", ["full_hessian", "aliased_full_hessian"])
def test_full_hessian_is_measured_below_the_threshold(graded, student):
    (measured,) = [m for m in graded[student].measurements if m.name == "exercise_hvp_vs_full_hessian"]
    assert measured.threshold == 2.4 and measured.ci[0] < measured.threshold and not measured.passed, (measured.speedup, measured.ci)


def test_an_alias_of_jacobian_is_caught_by_the_structure_test_itself(graded):
    """The alias hides the call from a count on tf.GradientTape; the count one level down (the jacobian's parallel
    loop) sees it: the structural cell fails on its own evidence, with its own message, and no review is needed."""
    result = graded["aliased_full_hessian"]
    (cell,) = [c for c in result.cells if c.id == "hvp_without_hessian"]
    assert cell.score == 0 and "parallel loop" in cell.message and not result.review, (cell, result.lines())


def test_a_full_hessian_from_tf_hessians_in_a_graph_is_caught_by_the_traced_graph(graded):
    """tf.hessians never touches a tape or pfor; the graph TensorFlow traces for it holds a while loop over x's elements."""
    result = graded["hessians_in_graph"]
    (cell,) = [c for c in result.cells if c.id == "hvp_without_hessian"]
    assert cell.score == 0 and cell.status == "failed" and "graph has a loop" in cell.message and not result.review, (cell, result.lines())


def test_a_forged_trace_count_fails_the_trace_test_that_reads_tensorflows_own_count(graded):
    result = graded["forged_trace_count"]
    (cell,) = [c for c in result.cells if c.id == "train_step_traced_once"]
    assert cell.score == 0 and cell.status == "failed" and "not TensorFlow's own tf.function" in cell.message, (cell, result.lines())
    assert not result.review, result.lines()


def test_loss_vs_time_draws_one_line_per_run():
    ax = tfperf.plots.loss_vs_time({"eager": ([0.02, 0.04, 0.06], [2.3, 2.0, 1.8]), "tf.function": ([0.001, 0.002, 0.003], [2.3, 2.0, 1.8])},
                                   log=True, title="t")
    assert [line.get_label() for line in ax.get_lines()] == ["eager", "tf.function"]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "elapsed time (s)" and ax.get_title() == "t"
