"""The corpus of reaches (tests/corpus_reaches.py) is well formed: enough distinct forms, each valid Python after
IPython's transform, each appended to a solution cell its lesson has. Static only: nothing runs a snippet or a review."""

from __future__ import annotations

import ast
import functools

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from corpus_reaches import GRADED, REACHES, Reach
from tfperf_lab.course import Course, notebook

COURSE = Course.find(__file__)
BY_NAME = {reach.name: reach for reach in REACHES}


@functools.cache
def _solution_cells(lesson_id: str) -> frozenset[str]:
    nb = COURSE.lesson(lesson_id).source_notebook()
    return frozenset(cell["id"] for cell in nb["cells"]
                     if cell.get("cell_type") == "code" and notebook.nbgrader_meta(cell).get("solution"))


def test_there_are_at_least_50_reaches_with_unique_names_over_several_lessons():
    names = [reach.name for reach in REACHES]
    assert len(REACHES) >= 50
    assert len(set(names)) == len(names), sorted(name for name in names if names.count(name) > 1)
    lessons = {reach.lesson for reach in REACHES}
    assert {"01_callable_handles", "03_tf_function", "05_metrics", "10_capstone"} <= lessons
    assert all(reach.how and "\n" not in reach.how for reach in REACHES)


def test_every_lesson_named_exists():
    known = {lesson.id for lesson in COURSE.lessons}
    assert {reach.lesson for reach in REACHES} <= known


@pytest.mark.parametrize("reach", REACHES, ids=lambda reach: reach.name)
def test_each_snippet_parses_after_ipythons_transform(reach: Reach):
    ast.parse(TransformerManager().transform_cell(reach.code))


@pytest.mark.parametrize("reach", REACHES, ids=lambda reach: reach.name)
def test_each_answer_names_a_solution_cell_of_its_lesson(reach: Reach):
    assert reach.where in ("answer", "scratch")
    if reach.where == "answer":
        assert reach.cell in _solution_cells(reach.lesson), f"{reach.cell!r} is not a solution code cell of {reach.lesson}"
    else:
        assert reach.cell == ""


def test_graded_names_eight_answers_of_lessons_01_05_or_10():
    assert len(GRADED) == 8 and GRADED <= set(BY_NAME)
    for name in GRADED:
        reach = BY_NAME[name]
        assert reach.where == "answer" and reach.lesson in ("01_callable_handles", "05_metrics", "10_capstone"), name
