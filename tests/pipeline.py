"""Helpers of the pipeline tests: build submissions from the course's own notebooks and grade them."""

import json
import pathlib
import shutil

from autograder import course


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
