"""Lesson 07's exercise against answers other than the reference, graded from the event files they write.

A loop that writes the weight histograms at every step logs the right values (correctness points) but
loses the structure and speed points, every time. A loop written differently (a default step,
``tf.summary.record_if`` around the histograms, NumPy copies of the weights, flush instead of close)
is another correct, fast answer and keeps every point.
"""

import pytest

from pipeline import COURSE, class_results, scores, with_solution

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("07_tensorboard")
CORRECTNESS = {"scalars_every_step": 2, "scalar_values_match": 2, "weight_histograms_match": 2}
GATED = (
    "            if step % histogram_every == 0:\n"
    "                for variable in model.trainable_variables:\n"
    "                    tf.summary.histogram(f\"weights/{variable.path}\", variable, step=step)\n"
)
LOOP = (
    "    with writer.as_default():\n"
    "        for step, (x, y) in enumerate(batches):\n"
    "            loss, accuracy = step_fn(x, y)\n"
    "            tf.summary.scalar(\"loss\", loss, step=step)\n"
    "            tf.summary.scalar(\"accuracy\", accuracy, step=step)\n"
) + GATED
RECORD_IF = (
    "    with writer.as_default():\n"
    "        for step, (x, y) in enumerate(batches):\n"
    "            loss, accuracy = step_fn(x, y)\n"
    "            tf.summary.experimental.set_step(step)\n"
    "            tf.summary.scalar(\"loss\", loss)\n"
    "            tf.summary.scalar(\"accuracy\", accuracy)\n"
    "            with tf.summary.record_if(step % histogram_every == 0):\n"
    "                for variable in model.trainable_weights:\n"
    "                    tf.summary.histogram(\"weights/\" + variable.path, variable.numpy())\n"
)
VARIANTS = {
    "histograms_every_step": {GATED: (
        "            for variable in model.trainable_variables:  # every step\n"
        "                tf.summary.histogram(f\"weights/{variable.path}\", variable, step=step)\n")},
    "python_record_if": {LOOP: RECORD_IF, "    writer.close()\n": "    writer.flush()\n"},
}


def class_submissions():
    return {student: with_solution(LESSON, "train_logged_solution", replace) for student, replace in VARIANTS.items()}


graded = class_results(LESSON)


def test_histograms_every_step_keeps_correctness_and_loses_structure_and_speed(graded):
    got = scores(graded["histograms_every_step"])
    assert all(got[cell] == points for cell, points in CORRECTNESS.items()), graded["histograms_every_step"].lines()
    assert got["histograms_every_n_steps"] == 0 and got["logging_every_n_is_faster"] == 0, graded["histograms_every_step"].lines()


def test_histograms_every_step_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded["histograms_every_step"].measurements if m.name == "exercise_histograms_every_10"]
    assert measured.ci[0] < 2.0 and not measured.passed


def test_record_if_and_a_default_step_is_another_full_marks_answer(graded):
    got = scores(graded["python_record_if"])
    expected = {**CORRECTNESS, "histograms_every_n_steps": 1, "logging_every_n_is_faster": 2}
    assert {cell: got[cell] for cell in expected} == expected, graded["python_record_if"].lines()
