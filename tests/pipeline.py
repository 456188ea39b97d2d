"""Helpers of the pipeline tests: build submissions from the course's own notebooks and grade them."""

import json
import pathlib
import shutil

from autograder import course, grading


def write_submission(folder: pathlib.Path, student: str, lesson: course.Lesson, notebook: dict | None = None,
                     source: pathlib.Path | None = None) -> pathlib.Path:
    """Put a notebook at FOLDER/<student>/<lesson>.ipynb, from a dict or a file."""
    target = folder / student / f"{lesson.id}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    if notebook is not None:
        target.write_text(json.dumps(notebook), encoding="utf-8")
    else:
        shutil.copy(source, target)
    return target


def with_changes(lesson: course.Lesson, changes: dict[str, dict[str, str]]) -> dict:
    """The reference solution with text replacements applied to several cells: {cell id: {old: new}}."""
    notebook = course.read_notebook(lesson.source)
    for cell in notebook["cells"]:
        if cell.get("id") in changes:
            text = "".join(cell["source"])
            for old, new in changes[cell["id"]].items():
                assert old in text, f"{old!r} not in {cell['id']}"
                text = text.replace(old, new)
            cell["source"] = text
    return notebook


def with_solution(lesson: course.Lesson, grade_id: str, replace: dict[str, str]) -> dict:
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


def hidden_lines(lesson: course.Lesson) -> list[str]:
    """Lines of the source's hidden test regions (longer than 12 characters) that appear nowhere in the student version."""
    visible = json.dumps(course.read_notebook(lesson.release))
    lines = []
    for cell in course.read_notebook(lesson.source)["cells"]:
        text = "".join(cell["source"])
        if "### BEGIN HIDDEN TESTS" in text:
            region = text.split("### BEGIN HIDDEN TESTS", 1)[1].split("### END HIDDEN TESTS", 1)[0]
            lines += [line.strip() for line in region.splitlines()
                      if len(line.strip()) > 12 and json.dumps(line.strip())[1:-1] not in visible]
    return lines


def leaks(html: str, lesson: course.Lesson) -> list[str]:
    """What a feedback page shows that it must not: hidden test lines, the hidden-test markers, IPython traceback frames.

    ("Cell In[12], line 3" and the "---->" marker are IPython's; a lesson may print TensorFlow's own
    "(most recent call last)" op history as ordinary output, which is fine.)
    """
    found = [line for line in hidden_lines(lesson) if line in html]
    return found + [mark for mark in ("BEGIN HIDDEN TESTS", "Cell In[", "----&gt; ") if mark in html]


def grade_submissions(tmp_path_factory, lesson: course.Lesson, notebooks: dict[str, dict]) -> dict[str, grading.SubmissionResult]:
    """Grade one notebook per student (as an instructor would, feedback aside); student -> result."""
    folder = tmp_path_factory.mktemp(lesson.id)
    for student, notebook in notebooks.items():
        write_submission(folder, student, lesson, notebook)
    results = grading.grade(folder, work=tmp_path_factory.mktemp("work"), with_feedback=False, progress=False)
    return {result.student: result for result in results}
