"""Lesson 10 (capstone) against an answer that is correct but not optimized, graded once.

One submission carries both of the lesson's variants (`tfperf_lab.variants`), which sit in different
exercises: a train step left eager (no `tf.function`) and a "pipeline" that is a Python list of batches.
It must keep every correctness point (examples, the step's math, metric resets, logs, test accuracy) and
lose the structure points of both exercises and the speed point. One grading run keeps CI time small.
"""

import pytest

from tfperf_lab import variants
from pipeline import COURSE, assert_keeps_and_loses, grade_submissions, with_changes

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("10_capstone")
FAULTS = {variant.name: variant for variant in variants.for_lesson(LESSON.id)}
KEEPS = set.intersection(*(set(variant.keeps) for variant in FAULTS.values()))
LOSES = set.union(*(set(variant.loses) for variant in FAULTS.values()))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    changes = {cell: dict(replace) for variant in FAULTS.values() for cell, replace in variant.changes}
    return grade_submissions(tmp_path_factory, LESSON, {"eager_step_list_batches": with_changes(LESSON, changes)})["eager_step_list_batches"]


def test_both_variants_are_in_different_exercises():
    assert sorted(FAULTS) == ["eager_train_step", "list_of_batches"]
    assert len({cell for variant in FAULTS.values() for cell in variant.cells}) == 2
    assert KEEPS and LOSES and not KEEPS & LOSES


def test_unoptimized_capstone_keeps_correctness_and_loses_structure_and_speed(graded):
    assert_keeps_and_loses(graded, KEEPS, LOSES)


def test_eager_trainer_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded.measurements if m.name == "exercise_capstone_epoch"]
    assert not measured.passed and measured.ci[0] < measured.threshold, measured
