"""Issue 50 item 4: every outcome gets a feedback page a student understands, graded on the tiny lesson through
`tfperf-lab grade`: a reference (its written answer pending, not a 0), a file that is not JSON, a notebook of no lesson
of the course, an answer on the review list (what happens next, then the decision), and a fault of the grading machine.
No page names the grader's internals."""

import contextlib
import csv
import io
import json
import pathlib
import re

import pytest

from tfperf_lab import cli
from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import feedback
from tfperf_lab.isolation import backends
from pipeline import write_submission
import tiny_course

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]
LESSON_ID = tiny_course.LESSON_ID


def _run(tiny, *argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(["--course", str(tiny.root), *map(str, argv)])
    return code, out.getvalue()


def _box(page: str) -> str:
    """The outcome box's text (tags stripped)."""
    found = re.search(r'<div class="tfperf-outcome">(.*?)</div>', page, flags=re.S)
    assert found, "no outcome box on the page"
    return re.sub(r"<[^>]+>", " ", found.group(1))


def test_every_submitted_file_gets_a_page_in_a_students_words(tiny, tmp_path):
    folder, work = tmp_path / "class", tmp_path / "work"
    lesson = tiny.lesson(LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    reach = tiny_course.append_to_answer(lesson.source_notebook(), "import ctypes  # a reach the review lists")
    write_submission(folder, "ben", lesson, reach)
    (folder / "cat").mkdir()
    (folder / "cat" / f"{LESSON_ID}.ipynb").write_text('{"cells": [', encoding="utf-8")  # cut short
    (folder / "dan").mkdir()
    (folder / "dan" / "holiday.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                                                   encoding="utf-8")
    code, printed = _run(tiny, "grade", folder, "--work", work, "--workers", "1")
    assert code == 0, printed
    pages = {student: WorkFolder(work).feedback(student, stem).read_text(encoding="utf-8")
             for student, stem in [("ana", LESSON_ID), ("ben", LESSON_ID), ("cat", LESSON_ID), ("dan", "holiday")]}
    for student, page in pages.items():
        assert "tfperf_lab" not in page, f"{student}'s page names the grader's internals"

    ana = _box(pages["ana"])
    assert "points graded automatically" in ana and "not graded yet, so the 0 the page shows for them is not a mark" in ana, ana
    ben = _box(pages["ben"])
    assert "wait for your instructor" in ben and "You need not do anything" in ben, ben
    cat = _box(pages["cat"])
    assert "could not be graded" in cat and "not valid notebook JSON" in cat and "Open your work in Jupyter" in cat, cat
    dan = _box(pages["dan"])
    assert "could not be graded" in dan and "fresh copy of the lesson" in dan, dan

    code, printed = _run(tiny, "review", work, "--reject", "ben", LESSON_ID, "--by", "prof")
    assert code == 0, printed
    after = _box(WorkFolder(work).feedback("ben", LESSON_ID).read_text(encoding="utf-8"))
    assert "prof" in after and "decided not to pay" in after and "wait for your instructor" not in after, after


def test_the_machines_fault_and_a_timeout_say_whose_they_are():
    from tfperf_lab.grading.results import CellResult, SubmissionResult

    machine = SubmissionResult("ana", LESSON_ID, machine=["the grader's own code failed (SystemError: x)"])
    headline, items = feedback.outcome_items(machine)
    assert "not of your notebook" in headline and "need not do anything" in items[0]
    stopped = SubmissionResult("ana", LESSON_ID, error="the notebook did not finish within 270 s and was stopped")
    headline, items = feedback.outcome_items(stopped)
    assert "could not be graded" in headline and "a loop that never ends" in " ".join(items), items
    partial = SubmissionResult("ana", LESSON_ID, cells=[CellResult("a", 2, 2, "auto", "passed"),
                                                        CellResult("b", 0, 2, "auto", "timeout", "stopped")])
    headline, items = feedback.outcome_items(partial)
    assert headline.startswith("2 of 4 points") and any("keeps its points" in item and "b" in item for item in items)
    page = feedback.outcome_page(SubmissionResult("<b>x</b>", LESSON_ID, error="<script>alert(1)</script>"), "t <i>")
    assert "<script>" not in page and "<b>x</b>" not in page and "<i>" not in page
