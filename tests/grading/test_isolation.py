"""One submission cannot slow, stall or fail its classmates: a class graded with a staller in it gives the honest
submissions the same rows as the class without it, and takes at most the staller's own bounds longer.

The class is of the tiny lesson (tests/tiny_course.py: a real lesson's machinery, seconds to grade). The staller is a
correct answer that answers the grader's warm-up and single calls at once, then sleeps in the middle of its first
timed batch (no reach into the machinery: nothing for the review list). Its speed check hits the check's
hard bound and fails, alone and named; while it measured, the other job was paused, and its time limits moved by the
time it was paused.
"""

from __future__ import annotations

import time

import pytest

from tfperf_lab.grading import batch
from tfperf_lab.speed import timer
from tfperf_lab.course import WorkFolder
from pipeline import write_submission
import tiny_course

pytestmark = pytest.mark.pipeline
GRACE = 5.0  # the grader's grace past a check's budget, shortened here (30 s by default): the bound is what is tested
STALL_SECONDS = 15.0  # past the check's hard bound (budget 3 s + GRACE)
STALLS = ("calls = [0]\n_answer = fast_scale\n\n\ndef fast_scale(values):\n    calls[0] += 1\n"
          f"    if calls[0] == 50:  # inside the grader's first timed batch (3 warm-up calls, 2 single ones, then ~200 a batch)\n"
          f"        time.sleep({STALL_SECONDS})\n    return _answer(values)\n")


def _grade(tiny, tmp_path_factory, students: dict[str, dict]):
    folder = tmp_path_factory.mktemp("class")
    for student, nb in students.items():
        write_submission(folder, student, tiny.lesson(tiny_course.LESSON_ID), nb)
    began = time.monotonic()
    results = batch.grade(tiny, folder, work=WorkFolder(tmp_path_factory.mktemp("work")), workers=2, with_feedback=False,
                          progress=False)
    return {result.student: result for result in results}, time.monotonic() - began


@pytest.fixture(scope="module")
def classes(tiny, tmp_path_factory):
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    honest = {"ana": lesson.source_notebook(), "ben": lesson.source_notebook()}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timer, "GRACE", GRACE)
        alone, alone_seconds = _grade(tiny, tmp_path_factory, honest)
        mixed, mixed_seconds = _grade(tiny, tmp_path_factory, honest | {"stalls": tiny_course.with_code(tiny, STALLS)})
    return alone, alone_seconds, mixed, mixed_seconds


def _row(result) -> list[tuple]:
    return [(cell.id, cell.score, cell.status, cell.message) for cell in result.cells] + [("notes", tuple(result.notes), result.error)]


@pytest.mark.parametrize("student", ["ana", "ben"])
def test_honest_rows_are_the_same_with_a_staller_in_the_class(classes, student):
    alone, _, mixed, _ = classes
    assert _row(mixed[student]) == _row(alone[student]), ("\n".join(alone[student].lines()), "\n".join(mixed[student].lines()))
    assert mixed[student].score == mixed[student].max_score, mixed[student].lines()


def test_the_stallers_speed_check_fails_alone_at_its_bound_and_says_so(classes):
    result = classes[2]["stalls"]
    assert result.error is None, result.lines()
    (cell,) = [c for c in result.cells if c.id == "scale_is_faster"]
    assert cell.score == 0 and f"took longer than the check's {3.0 + GRACE:g} s" in cell.message, result.lines()
    assert any(c.id == "scale_matches" and c.score == c.max_score for c in result.cells), result.lines()


def test_the_class_takes_at_most_the_stallers_bounds_longer(classes):
    _, alone_seconds, _, mixed_seconds = classes
    bound = STALL_SECONDS + 3.0 + GRACE  # its sleep, and its one check's budget and grace
    assert mixed_seconds - alone_seconds <= bound + 30, (alone_seconds, mixed_seconds)
