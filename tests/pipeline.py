"""Helpers of the pipeline tests: the course under test, submissions built from its own notebooks, and grading them."""

import json
import pathlib
import shutil

from tfperf_lab.grading import batch
from tfperf_lab.course import Course, Lesson, notebook, variants, WorkFolder
from tfperf_lab.grading.results import SubmissionResult

ROOT = pathlib.Path(__file__).resolve().parents[1]
COURSE = Course.find(ROOT)


def write_submission(folder: pathlib.Path, student: str, lesson: Lesson, notebook: dict | None = None,
                     source: pathlib.Path | None = None) -> pathlib.Path:
    """Put a notebook at FOLDER/<student>/<lesson>.ipynb, from a dict or a file."""
    target = folder / student / f"{lesson.id}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if notebook is not None:
        target.write_text(json.dumps(notebook), encoding="utf-8")
    else:
        shutil.copy(source, target)
    return target


def with_changes(lesson: Lesson, changes: dict[str, dict[str, str]]) -> dict:
    """The reference solution with text replacements applied to several cells: {cell id: {old: new}}."""
    return variants.apply(lesson.source_notebook(), {cell: tuple(replace.items()) for cell, replace in changes.items()})


def with_solution(lesson: Lesson, grade_id: str, replace: dict[str, str]) -> dict:
    """The reference solution with text replacements applied to one solution cell."""
    return with_changes(lesson, {grade_id: replace})


def scores(result) -> dict[str, float | None]:
    return {cell.id: cell.score for cell in result.cells}


def assert_keeps_and_loses(result, keeps, loses) -> None:
    """The submission was graded, every cell of KEEPS scored points and every cell of LOSES scored exactly 0.

    A cell name that the result lacks counts as a failure on either side, so a renamed test cell cannot pass unnoticed.
    """
    assert result.error is None, "\n".join(result.lines())
    got = scores(result)
    lost = [cell for cell in keeps if not got.get(cell)]
    kept = [cell for cell in loses if got.get(cell) != 0]
    assert not lost and not kept, f"should keep points but did not: {lost}; should lose them but did not: {kept}\n" + "\n".join(result.lines())


def hidden_lines(lesson: Lesson) -> list[str]:
    """Lines of the source's hidden test regions (longer than 12 characters) that appear nowhere in the student version."""
    visible = json.dumps(lesson.release_notebook())
    lines = []
    for cell in lesson.source_notebook()["cells"]:
        for region in notebook.hidden_regions(notebook.source(cell)):
            lines += [line.strip() for line in region.splitlines()
                      if len(line.strip()) > 12 and json.dumps(line.strip())[1:-1] not in visible]
    return lines


def leaks(html: str, lesson: Lesson) -> list[str]:
    """What a feedback page shows that it must not: hidden test lines, the hidden-test markers, IPython traceback frames.

    ("Cell In[12], line 3" and the "---->" marker are IPython's; a lesson may print TensorFlow's own
    "(most recent call last)" op history as ordinary output, which is fine.)
    """
    found = [line for line in hidden_lines(lesson) if line in html]
    return found + [mark for mark in ("BEGIN HIDDEN TESTS", "Cell In[", "----&gt; ") if mark in html]


def grade_submissions(tmp_path_factory, lesson: Lesson, notebooks: dict[str, dict]) -> dict[str, SubmissionResult]:
    """Grade one notebook per student (as an instructor would, feedback aside); student -> result."""
    folder = tmp_path_factory.mktemp(lesson.id)
    for student, submitted in notebooks.items():
        write_submission(folder, student, lesson, submitted)
    results = batch.grade(COURSE, folder, work=WorkFolder(tmp_path_factory.mktemp("work")), with_feedback=False, progress=False)
    keep_measurements(results)
    return {result.student: result for result in results}


MEASURED: list = []  # (lesson, student, Record) of every graded speed check in this test run: conftest prints their margins


def keep_measurements(results) -> None:
    """Add the graded speed checks of ``results`` to MEASURED."""
    MEASURED.extend((result.lesson, result.student, record) for result in results for record in result.measurements if record.threshold)
