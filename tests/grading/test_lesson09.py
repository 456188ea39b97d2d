"""Lesson 09's exercises against answers that are correct but incomplete.

A `first_nonfinite_op` that switches the checks off only when nothing failed still names the right op,
but loses the structure and speed points (the checks stay on and slow every later eager op). A loss with
an epsilon inside the log, or with clipped probabilities (the Keras way), keeps the ordinary-logits point
and loses the extreme-logits and training points.
"""

import pytest

from pipeline import COURSE, class_results, scores, with_changes

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("09_nan_checks")
FIRST_OP, LOSS = "first_nonfinite_op_solution", "stable_cross_entropy_solution"

CHECKS_LEFT_ON = (
    "    except tf.errors.InvalidArgumentError as error:\n"
    "        found = re.search(r\"node (\\S+)/CheckNumericsV2\", error.message)\n"
    "        if found is None:\n"
    "            raise\n"
    "        return found.group(1)\n"
    "    finally:\n"
    "        tf.debugging.disable_check_numerics()\n"
    "    return None\n",
    "    except tf.errors.InvalidArgumentError as error:\n"
    "        return re.search(r\"node (\\S+)/CheckNumericsV2\", error.message).group(1)\n"
    "    tf.debugging.disable_check_numerics()  # only reached when nothing failed\n"
    "    return None\n",
)
EXACT = "    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)\n"
EPSILON = (EXACT, "    per_example = -tf.reduce_sum(tf.one_hot(labels, tf.shape(logits)[1]) * tf.math.log(tf.nn.softmax(logits) + 1e-7), axis=1)\n")
CLIPPED = (EXACT, "    probs = tf.clip_by_value(tf.nn.softmax(logits), 1e-7, 1.0 - 1e-7)\n"
                  "    per_example = -tf.reduce_sum(tf.one_hot(labels, tf.shape(logits)[1]) * tf.math.log(probs), axis=1)\n")

# student -> {solution cell: (old, new)}; the two faults of the first student sit in different exercises.
SUBMISSIONS = {
    "checks_left_on_epsilon_loss": {FIRST_OP: CHECKS_LEFT_ON, LOSS: EPSILON},
    "clipped_loss": {LOSS: CLIPPED},
}
INEXACT_LOSS = {"stable_loss_matches_article": 1}, ("stable_loss_extreme_logits", "stable_loss_trains")


def class_submissions():
    return {student: with_changes(LESSON, {cell: dict([pair]) for cell, pair in changes.items()}) for student, changes in SUBMISSIONS.items()}


graded = class_results(LESSON)


def test_checks_left_on_keeps_the_name_and_loses_structure_and_speed(graded):
    result = graded["checks_left_on_epsilon_loss"]
    got = scores(result)
    assert got["first_op_named"] == 2, result.lines()
    assert got["checks_switched_off"] == 0 and got["eager_full_speed_after"] == 0, result.lines()
    (measured,) = [m for m in result.measurements if m.name == "exercise_eager_after_first_nonfinite_op"]
    assert measured.ci[0] < 3.0 and not measured.passed, measured


@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_inexact_losses_keep_the_ordinary_point_and_lose_the_extreme_ones(graded, student):
    got = scores(graded[student])
    kept, lost = INEXACT_LOSS
    assert all(got[cell] == points for cell, points in kept.items()), graded[student].lines()
    assert all(got[cell] == 0 for cell in lost), graded[student].lines()


def test_the_reference_first_op_answer_scores_in_the_same_run(graded):
    got = scores(graded["clipped_loss"])
    assert (got["first_op_named"], got["checks_switched_off"], got["eager_full_speed_after"]) == (2, 1, 1), graded["clipped_loss"].lines()
