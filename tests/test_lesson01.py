"""Lesson 01's exercise against answers that are correct but not optimized.

A wrapper that still calls sess.run, and one built on the public make_callable, keep the
correctness points and lose the structure and speed points, every time.
"""

import pytest

from autograder import course, grading
from pipeline import scores, with_solution, write_submission

pytestmark = pytest.mark.pipeline
LESSON = course.lesson("01_callable_handles")
HANDLE = "    handle = sess._make_callable_from_options(options)\n"
VARIANTS = {
    "calls_sess_run": HANDLE + "    def handle(*values):\n        return sess.run(fetch + target, dict(zip(feed, values)))[: len(fetch)]\n",
    "public_make_callable": ("    public = sess.make_callable(fetch + target, feed_list=feed)\n"
                             "    def handle(*values):\n        return list(public(*values))[: len(fetch)]\n"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lesson01")
    for student, code in VARIANTS.items():
        write_submission(folder, student, LESSON, with_solution(LESSON, "make_callable_solution", {HANDLE: code}))
    results = grading.grade(folder, work=tmp_path_factory.mktemp("work"), progress=False)
    return {r.student: r for r in results}


@pytest.mark.parametrize("student", sorted(VARIANTS))
def test_unoptimized_wrapper_keeps_correctness_and_loses_speed_points(graded, student):
    got = scores(graded[student])
    assert got["handle_matches_sess_run"] == 2 and got["handle_rejects_bad_elements"] == 1, graded[student].lines()
    assert got["handle_built_once"] == 0 and got["handle_is_faster"] == 0, graded[student].lines()


def test_unoptimized_wrapper_is_measured_below_the_threshold(graded):
    (measured,) = [m for m in graded["calls_sess_run"].measurements if m["name"] == "exercise_handle_vs_sess_run"]
    assert measured["ci"][0] < 2.0 and not measured["passed"]
