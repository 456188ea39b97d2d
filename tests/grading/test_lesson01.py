"""Lesson 01's exercise against answers that are correct but not optimized.

A wrapper that still calls sess.run, and one built on the public make_callable, keep the
correctness points and lose the structure and speed points.
"""

import pytest

from tfperf_lab.course import variants
from pipeline import COURSE, assert_keeps_and_loses, class_results

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("01_callable_handles")
VARIANTS = {variant.name: variant for variant in variants.for_lesson(LESSON.id) if variant not in variants.CHEATS}  # cheats: test_verdicts.py


def class_submissions():
    return {name: variant.notebook(LESSON) for name, variant in VARIANTS.items()}


graded = class_results(LESSON)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_unoptimized_wrapper_keeps_correctness_and_loses_speed_points(graded, name):
    assert_keeps_and_loses(graded[name], VARIANTS[name].keeps, VARIANTS[name].loses)


def test_unoptimized_wrapper_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded["calls_sess_run"].measurements if m.name == "exercise_handle_vs_sess_run"]
    assert measured.ci[0] < 1.6 and not measured.passed
