"""The review list's two corpora graded for real, as an instructor grades a class (``tfperf-lab grade FOLDER``).

Honest answers in styles the lessons do not show (`corpus_honest.GRADED`, two or more per lesson) get every point:
no finding, no cell withheld. Reaches (`corpus_reaches.GRADED`, eight routes in lessons 01, 05 and 10, each appended
to a correct but unoptimized answer and serving a fast function in its place) pay not one point of speed or of a
structural cell ``review_with`` it before a person accepts them, and keep the correctness points their answer earned.
Both join the test run's one graded class.
"""

from __future__ import annotations

import pytest

import corpus_honest
import corpus_reaches
from corpus_reaches import reach_notebook
from tfperf_lab.course import variants
from pipeline import COURSE

pytestmark = pytest.mark.pipeline
SLOW = {"01_callable_handles": "calls_sess_run", "05_metrics": "eager_evaluate", "10_capstone": "eager_train_step"}
HONEST = [answer for answer in corpus_honest.HONEST if (answer.lesson, answer.name) in corpus_honest.GRADED]
REACHES = [reach for reach in corpus_reaches.REACHES if reach.name in corpus_reaches.GRADED]


def _slow_with(reach) -> dict:
    """The reach appended to the lesson's correct but unoptimized answer, as a learner would add it."""
    lesson = COURSE.lesson(reach.lesson)
    slow = next(v for v in variants.for_lesson(lesson.id) if v.name == SLOW[lesson.id])
    return reach_notebook(reach, slow.notebook(lesson))


def class_submissions():
    submissions = {(answer.lesson, f"honest-{answer.name}"): answer.notebook(COURSE.lesson(answer.lesson)) for answer in HONEST}
    submissions |= {(reach.lesson, f"reach-{reach.name}"): _slow_with(reach) for reach in REACHES}
    return submissions


@pytest.fixture(scope="module")
def rows(graded_class):
    return graded_class.rows_of(__name__)


@pytest.fixture(scope="module")
def results(graded_class):
    return graded_class.of(__name__)


def _auto_cells(lesson) -> dict[str, float]:
    return {cell["id"]: cell["points"] for cell in lesson.grade_cells() if cell["kind"] == "auto"}


def test_the_graded_corpora_cover_every_lesson_twice_and_eight_reaches():
    assert all(sum(a.lesson == lesson.id for a in HONEST) >= 2 for lesson in COURSE.lessons)
    assert len(REACHES) >= 8


@pytest.mark.parametrize("answer", HONEST, ids=lambda a: f"{a.lesson[:2]}-{a.name}")
def test_an_honest_answer_in_another_style_gets_every_point(rows, results, answer):
    lesson = COURSE.lesson(answer.lesson)
    row = rows[(f"honest-{answer.name}", lesson.id)]
    assert row["status"] == "graded" and not row["review"], row
    lost = {cell: row[f"{lesson.id}:{cell}"] for cell, points in _auto_cells(lesson).items() if float(row[f"{lesson.id}:{cell}"]) != points}
    why = {cell.id: f"{cell.status}: {cell.message}" for cell in results[f"honest-{answer.name}"].cells if cell.id in lost}
    assert not lost, (answer.style, lost, why)


@pytest.mark.parametrize("reach", REACHES, ids=lambda r: f"{r.lesson[:2]}-{r.name}")
def test_a_reach_serving_a_fast_function_pays_no_speed_or_shared_structure_point(rows, reach):
    lesson = COURSE.lesson(reach.lesson)
    row = rows[(f"reach-{reach.name}", lesson.id)]
    assert row["status"] == "graded" and row["review"], row
    for cell in lesson.review_cells():
        assert float(row[f"{lesson.id}:{cell}"]) == 0, (reach.how, cell, row)
    slow = next(v for v in variants.for_lesson(lesson.id) if v.name == SLOW[lesson.id])
    for cell in slow.keeps:
        assert float(row[f"{lesson.id}:{cell}"]) == _auto_cells(lesson)[cell], (reach.how, cell, row)
