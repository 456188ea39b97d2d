"""Lesson 05's exercises against answers that are correct but not streaming or not compiled.

A macro-F1 that collects predictions in Python lists, or keeps its counts in untracked tf.Variables,
keeps the correctness points and loses the tf.function / reset / state points. An evaluation loop that
updates its metrics eagerly keeps the correctness point and loses the structure point (and, when the
model call is eager too, the speed point), every time. A compiled update without an input_signature, which
traces again for every new batch size, loses the structure point and, on the grader's datasets of fresh
batch sizes, the speed point. The same two loops updating through the metric's class (`type(metric).update_state(metric,
...)`, after one call through the object), which a count on the metric object does not see, lose the structure point
to TensorFlow's own evidence: the eager ops on the metrics' variables, and the calls counted on the metrics' classes.
Also the plot this lesson added to tfperf.plots.
"""

import matplotlib

matplotlib.use("Agg")

import pytest

import tfperf
from pipeline import COURSE, assert_keeps_and_loses, class_results, scores, with_solution

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("05_metrics")

LIST_STATE_F1 = '''
class MacroF1(tf.keras.metrics.Metric):
    """Correct eagerly, but not streaming: keeps every example in Python lists."""

    def __init__(self, num_classes, name="macro_f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.num_classes = int(num_classes)
        self.reset_state()

    def reset_state(self):
        self.seen = []

    def update_state(self, y_true, logits, sample_weight=None):
        labels = np.asarray(y_true).reshape(-1)
        weights = np.ones(len(labels)) if sample_weight is None else np.asarray(sample_weight, np.float64).reshape(-1)
        self.seen.append((labels, np.argmax(np.asarray(logits), axis=-1), weights))

    def result(self):
        if not self.seen:
            return tf.constant(0.0)
        labels, predicted, weights = (np.concatenate(part) for part in zip(*self.seen))
        scores = []
        for c in range(self.num_classes):
            tp = np.sum(weights * ((labels == c) & (predicted == c)))
            wrong = np.sum(weights * ((labels == c) != (predicted == c)))
            if 2 * tp + wrong > 0:
                scores.append(2 * tp / (2 * tp + wrong))
        return tf.constant(np.mean(scores) if scores else 0.0, tf.float32)
'''.strip("\n")

COMPILED_UPDATE = (
    "    @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float32), tf.TensorSpec([None], tf.int32)])\n"
    "    def update(images, labels):\n"
    "        logits = model(images, training=False)\n"
)
EAGER_UPDATE = "    def update(images, labels):\n        logits = model(images, training=False)\n"
RETRACING_UPDATE = "    @tf.function\n    def update(images, labels):\n        logits = model(images, training=False)\n"
METRICS_OUTSIDE = (
    "    forward = tf.function(lambda images: model(images, training=False), input_signature=[tf.TensorSpec([None, 784], tf.float32)])\n\n"
    "    def update(images, labels):\n        logits = forward(images)\n"
)

THROUGH_THE_CLASS = {  # one update through the metric object (a count on it sees one call), every other through its class
    "    metrics = list(metrics)\n": "    metrics = list(metrics)\n    through_object = [True]\n",
    "            metric.update_state(labels, logits)\n": (
        "            if through_object[0]:\n"
        "                metric.update_state(labels, logits)\n"
        "            else:\n"
        "                type(metric).update_state(metric, labels, logits)\n"
        "        through_object[0] = False\n"),
}


def _untracked(name):
    return {f'self.add_variable(shape=(self.num_classes,), initializer="zeros", name="{name}")':
            f'tf.Variable(tf.zeros([self.num_classes]), name="{name}")'}


def _metric_cell_source():
    (cell,) = [c for c in LESSON.source_notebook()["cells"] if c.get("id") == "macro_f1_solution"]
    return "".join(cell["source"])


def _submission(metric_replace, evaluate_replace):
    """The reference with both solution cells edited."""
    notebook = with_solution(LESSON, "macro_f1_solution", metric_replace)
    edited = with_solution(LESSON, "make_evaluate_solution", evaluate_replace)
    (evaluate_cell,) = [c for c in edited["cells"] if c.get("id") == "make_evaluate_solution"]
    for index, cell in enumerate(notebook["cells"]):
        if cell.get("id") == "make_evaluate_solution":
            notebook["cells"][index] = evaluate_cell
    return notebook


def _slowed_baseline():
    """Eager evaluate, and the read-only baseline cell edited to sleep: nbgrader restores the cell, so no speed point."""
    notebook = _submission({}, {COMPILED_UPDATE: EAGER_UPDATE})
    (cell,) = [c for c in notebook["cells"] if c.get("id") == "baseline_evaluation_case"]
    text = "".join(cell["source"])
    assert "            metric.update_state(labels, logits)\n" in text
    cell["source"] = text.replace("            metric.update_state(labels, logits)\n",
                                  "            metric.update_state(labels, logits)\n        __import__('time').sleep(0.01)\n")
    return notebook


VARIANTS = {
    "list_state_eager_evaluate": lambda: _submission({_metric_cell_source(): LIST_STATE_F1}, {COMPILED_UPDATE: EAGER_UPDATE}),
    "slowed_baseline": _slowed_baseline,
    "untracked_variables_metrics_outside": lambda: _submission(
        {**_untracked("true_positives"), **_untracked("false_positives"), **_untracked("false_negatives")},
        {COMPILED_UPDATE: METRICS_OUTSIDE}),
    "retracing_evaluate": lambda: _submission({}, {COMPILED_UPDATE: RETRACING_UPDATE}),
    "eager_evaluate_through_the_class": lambda: _submission({}, {COMPILED_UPDATE: EAGER_UPDATE, **THROUGH_THE_CLASS}),
    "retracing_evaluate_through_the_class": lambda: _submission({}, {COMPILED_UPDATE: RETRACING_UPDATE, **THROUGH_THE_CLASS}),
}
THROUGH_THE_CLASS_MESSAGES = {"eager_evaluate_through_the_class": "eager operations on the metrics' variables",
                              "retracing_evaluate_through_the_class": "counted on the metrics' classes"}
CORRECTNESS = {"macro_f1_matches_numpy": 2, "macro_f1_sample_weight": 1, "evaluate_matches_eager": 1}


def class_submissions():
    return {student: build() for student, build in VARIANTS.items()}


graded = class_results(LESSON)


@pytest.mark.parametrize("student", sorted(VARIANTS))
def test_unoptimized_answers_keep_the_correctness_points(graded, student):
    got = scores(graded[student])
    assert {cell: got[cell] for cell in CORRECTNESS} == CORRECTNESS, graded[student].lines()


def test_a_slowed_read_only_baseline_is_restored_and_earns_no_speed_point(graded):
    result = graded["slowed_baseline"]
    assert any("read-only cell baseline_evaluation_case was edited" in note for note in result.notes), result.lines()
    assert scores(result)["evaluate_is_faster"] == 0 and scores(result)["evaluate_matches_eager"] == 1, result.lines()


def test_a_metric_that_collects_predictions_fails_in_tf_function_and_has_no_state(graded):
    got = scores(graded["list_state_eager_evaluate"])
    assert got["macro_f1_reset"] == 1, graded["list_state_eager_evaluate"].lines()
    assert got["macro_f1_in_tf_function"] == 0 and got["macro_f1_state_is_variables"] == 0, graded["list_state_eager_evaluate"].lines()


def test_untracked_tf_variables_are_not_reset_and_not_state(graded):
    got = scores(graded["untracked_variables_metrics_outside"])
    assert got["macro_f1_in_tf_function"] == 1, graded["untracked_variables_metrics_outside"].lines()
    assert got["macro_f1_reset"] == 0 and got["macro_f1_state_is_variables"] == 0, graded["untracked_variables_metrics_outside"].lines()


@pytest.mark.parametrize("student", sorted(VARIANTS))
def test_eager_metric_updates_lose_the_structure_point(graded, student):
    assert scores(graded[student])["evaluate_compiled_once"] == 0, graded[student].lines()


def test_an_eager_evaluation_loop_loses_the_speed_point_and_is_measured_below_the_threshold(graded):
    result = graded["list_state_eager_evaluate"]
    assert scores(result)["evaluate_is_faster"] == 0, result.lines()
    (measured,) = [m for m in result.measurements if m.name == "exercise_evaluate_vs_eager"]
    assert measured.ci[0] < 1.5 and not measured.passed


def test_the_structure_point_needs_the_speed_verdict():
    assert LESSON.review_cells()["evaluate_compiled_once"] == ["exercise_evaluate_vs_eager"]


def test_an_update_that_retraces_per_batch_size_is_slow_on_fresh_batch_sizes(graded):
    result = graded["retracing_evaluate"]
    assert scores(result)["evaluate_compiled_once"] == 0 and scores(result)["evaluate_is_faster"] == 0, result.lines()
    (measured,) = [m for m in result.measurements if m.name == "exercise_evaluate_vs_eager"]
    assert not measured.passed and measured.ci[0] < 1.5, measured


@pytest.mark.parametrize("student", sorted(THROUGH_THE_CLASS_MESSAGES))
def test_updates_through_the_metrics_class_lose_the_structure_point_on_tensorflows_evidence(graded, student):
    result = graded[student]
    assert_keeps_and_loses(result, CORRECTNESS, ("evaluate_compiled_once", "evaluate_is_faster"))
    (cell,) = [c for c in result.cells if c.id == "evaluate_compiled_once"]
    assert cell.status == "failed" and THROUGH_THE_CLASS_MESSAGES[student] in cell.message, "\n".join(result.lines())


def test_metric_curves_draws_one_line_per_series_and_returns_its_axes():
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    returned = tfperf.plots.metric_curves({"reset": [0.6, 0.8, 0.9], "never reset": [0.6, 0.7, 0.77]}, ax=axes,
                                          ylabel="accuracy", title="curves")
    assert returned is axes and len(axes.lines) == 2
    assert list(axes.lines[0].get_xdata()) == [1, 2, 3] and axes.get_ylabel() == "accuracy"
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["reset", "never reset"]
    shifted = tfperf.plots.metric_curves({"a": [1.0, 2.0]}, x=[10, 20], xlabel="step")
    assert list(shifted.lines[0].get_xdata()) == [10, 20] and shifted.get_xlabel() == "step"
    plt.close("all")
