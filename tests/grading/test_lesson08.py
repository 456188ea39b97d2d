"""Lesson 08's exercises against answers that are correct but not optimized, or subtly wrong.

A preprocess_tf that still runs preprocess_numpy through tf.numpy_function (or tf.py_function) keeps
the correctness points and loses the structure and speed points, every time. A top_ops that keeps
each op type's longest event instead of the sum loses the known-trace points.
"""

import pytest

from pipeline import COURSE, class_results, scores, with_solution

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("08_timeline_profiler")
FIX = (
    "    x = tf.cast(images, tf.float32)[..., tf.newaxis] / 255.0\n"
    "    x = tf.image.per_image_standardization(x)\n"
    '    return tf.nn.conv2d(x, tf.ones([3, 3, 1, 1]) / 9.0, strides=1, padding="SAME")\n'
)
WRAPPED = {
    "numpy_function": "    out = tf.numpy_function(preprocess_numpy, [images], tf.float32)\n",
    "py_function": "    out = tf.py_function(lambda batch: preprocess_numpy(batch.numpy()), [images], tf.float32)\n",
}
SUM = 'totals[event["name"]] = totals.get(event["name"], 0) + event.get("dur", 0)'
LONGEST = 'totals[event["name"]] = max(totals.get(event["name"], 0), event.get("dur", 0))'


def _variant(wrapper: str, *, longest: bool) -> dict:
    notebook = with_solution(LESSON, "preprocess_tf_solution", {FIX: wrapper + "    out.set_shape([None, 28, 28, 1])\n    return out\n"})
    if longest:
        (cell,) = [c for c in notebook["cells"] if c.get("id") == "top_ops_solution"]
        text = "".join(cell["source"])
        assert SUM in text
        cell["source"] = text.replace(SUM, LONGEST)
    return notebook


# Fast but wrong: the blur pads by reflection instead of zeros (border pixels off by up to 0.64); the timed loss agrees
# with the reference's to 1e-2, so only the exercise's output test can tell.
REFLECT = FIX.replace('    return tf.nn.conv2d(x, tf.ones([3, 3, 1, 1]) / 9.0, strides=1, padding="SAME")\n',
                      '    x = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")\n'
                      '    return tf.nn.conv2d(x, tf.ones([3, 3, 1, 1]) / 9.0, strides=1, padding="VALID")\n')


def class_submissions():
    return {"numpy_function_longest_op": _variant(WRAPPED["numpy_function"], longest=True),
            "py_function": _variant(WRAPPED["py_function"], longest=False),
            "reflect_blur": with_solution(LESSON, "preprocess_tf_solution", {FIX: REFLECT})}


graded = class_results(LESSON)


@pytest.mark.parametrize("student", ["numpy_function_longest_op", "py_function"])
def test_wrapped_python_preprocessing_keeps_correctness_and_loses_structure_and_speed(graded, student):
    got = scores(graded[student])
    assert got["fixed_matches_numpy"] == 2, graded[student].lines()
    assert got["fixed_has_no_python_op"] == 0 and got["fixed_step_is_faster"] == 0, graded[student].lines()


def test_wrapped_python_preprocessing_is_measured_below_the_threshold(graded):
    for student in ("numpy_function_longest_op", "py_function"):
        (measured,) = [m for m in graded[student].measurements if m.name == "exercise_fixed_step"]
        assert measured.ci[0] < 1.5 and not measured.passed, (student, measured.speedup, measured.ci)


def test_top_ops_must_sum_durations_not_keep_the_longest(graded):
    longest, correct = scores(graded["numpy_function_longest_op"]), scores(graded["py_function"])
    assert longest["top_ops_known_trace"] == 0 and longest["top_ops_recorded_trace"] == 0, graded["numpy_function_longest_op"].lines()
    assert correct["top_ops_known_trace"] == 2 and correct["top_ops_recorded_trace"] == 1, graded["py_function"].lines()


def test_a_fast_but_wrong_blur_loses_its_speed_cell_with_its_output_test(graded):
    """Speed is paid only for correct outputs: the wrong padding fails fixed_matches_numpy, and its speed cell pays
    nothing, however its timed loss compared; the structure it got right (no Python op) stands."""
    result = graded["reflect_blur"]
    got = scores(result)
    assert got["fixed_matches_numpy"] == 0 and got["fixed_has_no_python_op"] == 1 and got["fixed_step_is_faster"] == 0, result.lines()
    (cell,) = [c for c in result.cells if c.id == "fixed_step_is_faster"]
    assert "fixed_matches_numpy did not pass" in cell.message or "outputs differ" in cell.message, result.lines()
