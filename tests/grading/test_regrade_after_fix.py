"""Issue 50 item 5: safe re-grades. Each grade records the release it was taken against (`Lesson.fingerprint`: the
instructor's test, read-only and fixture cells). After a hidden test is fixed, a plain `tfperf-lab grade` names the
stale rows and grades them again, and only them; ``--only LESSON`` grades one lesson again and keeps every other row;
a manual score survives. Graded on a private copy of the tiny lesson (its source is edited here)."""

import contextlib
import csv
import io
import json

import pytest
from nbgrader.api import Gradebook

from tfperf_lab import cli
from tfperf_lab.course import WorkFolder, notebook
from tfperf_lab.grading import batch
from tfperf_lab.isolation import backends
from pipeline import write_submission
import tiny_course

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]
LESSON_ID = tiny_course.LESSON_ID
HIDDEN = "np.testing.assert_allclose(fast_scale(hidden_values), slow_scale(hidden_values))"


def _grade(course, folder, work, *extra) -> tuple[int, str, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(["--course", str(course.root), "grade", str(folder), "--work", str(work), "--workers", "1", *extra])
    with (work / "grades.csv").open(encoding="utf-8") as handle:
        return code, out.getvalue(), {row["student"]: row for row in csv.DictReader(handle)}


def _edit_hidden_test(course, old: str, new: str) -> None:
    path = course.lesson(LESSON_ID).source
    nb = notebook.read(path)
    cell = next(c for c in nb["cells"] if c.get("id") == tiny_course.CORRECT[0])
    text = notebook.source(cell)
    assert old in text
    cell["source"] = text.replace(old, new)
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def test_a_fixed_hidden_test_regrades_the_stale_rows_and_keeps_manual_scores(tmp_path):
    course = tiny_course.build(tmp_path / "course")
    folder, work = tmp_path / "class", tmp_path / "work"
    lesson = course.lesson(LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    code, printed, rows = _grade(course, folder, work)
    assert code == 0, printed
    full = float(rows["ana"]["max_score"])
    assert float(rows["ana"]["score"]) == full, rows["ana"]
    manual = next(cell["id"] for cell in lesson.grade_cells() if cell["kind"] == "manual")
    with Gradebook(WorkFolder(work).gradebook_url, course_id=course.id) as gradebook:
        gradebook.find_grade(manual, LESSON_ID, LESSON_ID, "ana").manual_score = 1.0
        gradebook.db.commit()

    _edit_hidden_test(course, HIDDEN, HIDDEN.replace("slow_scale(hidden_values)", "slow_scale(hidden_values) + 1.0"))  # a wrong fix
    code, printed, rows = _grade(course, folder, work)
    assert "graded again against the lesson's current tests" in printed and "ana/00_tiny" in printed, printed
    assert float(rows["ana"]["score"]) < full, "the stale grade was kept"
    assert rows["ana"][f"{LESSON_ID}:{tiny_course.CORRECT[0]}"] in ("0", "0.0"), rows["ana"]

    code, printed, rows = _grade(course, folder, work)  # nothing changed since: nothing is graded again
    assert "graded again against" not in printed, printed

    _edit_hidden_test(course, HIDDEN.replace("slow_scale(hidden_values)", "slow_scale(hidden_values) + 1.0"), HIDDEN)  # mended
    code, printed, rows = _grade(course, folder, work, "--only", LESSON_ID)
    assert code == 0, printed
    assert float(rows["ana"]["score"]) == full, rows
    with Gradebook(WorkFolder(work).gradebook_url, course_id=course.id) as gradebook:
        assert gradebook.find_grade(manual, LESSON_ID, LESSON_ID, "ana").manual_score == 1.0, "the manual score was lost"
    state = json.loads(WorkFolder(work).state("ana", LESSON_ID).read_text(encoding="utf-8"))
    assert state["release"] == course.lesson(LESSON_ID).fingerprint()
    assert batch.STALE in state["result"]["notes"], "the row does not say why it was graded again"


def test_the_fingerprint_follows_tests_and_fixtures_not_prose(tmp_path):
    nb = tiny_course.source_notebook()
    before = notebook.fingerprint(nb)
    prose = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and not notebook.is_protected(c))
    prose["source"] = "changed words"
    assert notebook.fingerprint(nb) == before
    test = next(c for c in nb["cells"] if c.get("id") == tiny_course.CORRECT[1])
    test["source"] = notebook.source(test) + "\n# fixed"
    assert notebook.fingerprint(nb) != before
