"""Settling the review list with one command (`tfperf-lab review`), through the instructor's path on the tiny lesson.

A class of three is graded with `tfperf-lab grade`: two answers that are right but import ``ctypes`` (a finding, so the
structural and speed cells are withheld) and an honest one. `tfperf-lab review WORK` lists the findings in context
with what each withheld cell earned; ``--accept`` pays those points into the gradebook, the CSV and the feedback
page, ``--reject`` keeps 0, both without running a notebook. Grading the folder again keeps the decisions of
unchanged files (with ``--force`` too, paying what that grading measured); a changed file loses its decision and is
back on the list.
"""

import contextlib
import csv
import io
import json
import pathlib
import re

import pytest
from nbgrader.api import Gradebook

from tfperf_lab import cli
from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import decisions
from tfperf_lab.grading.results import SubmissionResult
from tfperf_lab.isolation import backends
import tiny_course

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]
LESSON_ID = tiny_course.LESSON_ID
WITHHELD = ("scale_has_no_loop", "scale_is_faster")
REACH = "import ctypes  # a reach the review lists"


def _run(tiny, *argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--course", str(tiny.root), *map(str, argv)])
    return code, out.getvalue(), err.getvalue()


def _rows(work: pathlib.Path) -> dict[str, dict]:
    with (work / "grades.csv").open(encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _state(work: pathlib.Path, student: str) -> SubmissionResult:
    return SubmissionResult.from_dict(json.loads(WorkFolder(work).state(student, LESSON_ID).read_text(encoding="utf-8"))["result"])


def _grades(tiny, work: pathlib.Path, student: str) -> dict:
    with Gradebook(WorkFolder(work).gradebook_url, course_id=tiny.id) as gradebook:
        return {cell: (g.manual_score, g.needs_manual_grade) for cell in WITHHELD
                for g in [gradebook.find_grade(cell, LESSON_ID, LESSON_ID, student)]}


def _feedback_score(work: pathlib.Path, student: str, cell: str) -> str:
    """The score the feedback page's table of contents shows for one graded cell: "x / y"."""
    page = WorkFolder(work).feedback(student, LESSON_ID).read_text(encoding="utf-8")
    return re.search(rf'href="#{cell}">[^<]*</a> \(Score: ([\d.]+ / [\d.]+)\)', page).group(1)


@pytest.fixture(scope="module")
def graded(tiny, tmp_path_factory):
    folder, work = tmp_path_factory.mktemp("review-class"), tmp_path_factory.mktemp("review-work")
    submissions = {"accepted": tiny_course.with_code(tiny, REACH), "rejected": tiny_course.with_code(tiny, REACH),
                   "honest": tiny.lesson(LESSON_ID).source_notebook()}
    for student, nb in submissions.items():
        (folder / student).mkdir()
        (folder / student / f"{LESSON_ID}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    code, out, err = _run(tiny, "grade", folder, "--work", work, "--workers", 2)
    assert code == 0, out + err
    return folder, work


def test_grading_withholds_and_records_what_the_withheld_cells_earned(graded):
    _, work = graded
    rows = _rows(work)
    for student in ("accepted", "rejected"):
        row, result = rows[student], _state(work, student)
        assert row["review"] and all(float(row[f"{LESSON_ID}:{cell}"]) == 0 for cell in WITHHELD), row
        assert set(result.withheld) == set(WITHHELD), result.lines()
        assert result.withheld["scale_has_no_loop"]["earned"] == 1.0  # its structure test passed
        assert result.findings and result.findings[0]["cell"] == tiny_course.ANSWER and "ctypes" in result.findings[0]["code"]
        assert all(result.withheld[cell]["findings"] == [f"cell {tiny_course.ANSWER} line {result.findings[0]['line']}"]
                   for cell in WITHHELD)
    assert not rows["honest"]["review"] and float(rows["honest"]["score"]) == float(rows["honest"]["max_score"])


def test_the_list_shows_each_finding_in_context_and_what_the_withheld_cells_earned(tiny, graded):
    _, work = graded
    code, out, _ = _run(tiny, "review", work)
    assert code == 0, out
    assert f"{LESSON_ID} (accepted)" in out and f"{LESSON_ID} (rejected)" in out and "(honest)" not in out, out
    line = _state(work, "accepted").findings[0]["line"]
    assert f"finding: cell {tiny_course.ANSWER}, line {line}:" in out, out
    assert f">{line:4d} | {REACH}" in out, out  # the line itself, marked
    assert f" {line - 1:4d} | " in out and f" {line - 2:4d} | " in out, out  # two lines of context before it
    assert "withheld: scale_has_no_loop: its test earned 1 of 1" in out, out
    assert "withheld: scale_is_faster: its test earned" in out and "speed check tiny_scale_vs_loop" in out, out
    assert "2 submission(s) on the review list" in out and "2 waiting for a decision" in out, out


def test_accept_pays_the_earned_points_and_reject_keeps_zero_without_running_anything(tiny, graded):
    _, work = graded
    autograded = {s: WorkFolder(work).autograded(s, LESSON_ID).stat().st_mtime_ns for s in ("accepted", "rejected")}
    earned = {cell: info["earned"] for cell, info in _state(work, "accepted").withheld.items()}
    code, out, err = _run(tiny, "review", work, "--accept", "accepted", LESSON_ID, "--by", "prof")
    assert code == 0 and "accepted by prof" in out, out + err
    code, out, err = _run(tiny, "review", work, "--reject", "rejected", LESSON_ID, "--by", "prof")
    assert code == 0 and "rejected by prof" in out, out + err
    rows = _rows(work)
    for cell in WITHHELD:
        assert float(rows["accepted"][f"{LESSON_ID}:{cell}"]) == earned[cell], rows["accepted"]
        assert float(rows["rejected"][f"{LESSON_ID}:{cell}"]) == 0, rows["rejected"]
    assert rows["accepted"]["review"].startswith("accepted by prof: ") and rows["rejected"]["review"].startswith("rejected by prof: ")
    assert float(rows["accepted"]["score"]) == float(rows["honest"]["score"]) - 2 + earned["scale_is_faster"]
    assert set(rows) == {"accepted", "rejected", "honest"}
    assert _grades(tiny, work, "accepted") == {cell: (earned[cell], False) for cell in WITHHELD}
    assert _grades(tiny, work, "rejected") == {cell: (0.0, False) for cell in WITHHELD}
    result = _state(work, "accepted")
    assert result.decision["decision"] == "accepted" and {c.id: c.score for c in result.cells if c.id in WITHHELD} == earned
    record = json.loads((work / "review" / "accepted" / f"{LESSON_ID}.json").read_text(encoding="utf-8"))
    saved = json.loads(WorkFolder(work).state("accepted", LESSON_ID).read_text(encoding="utf-8"))
    assert record["sha256"] == saved["sha256"] and record["by"] == "prof" and record["paid"] == earned and record["at"]
    for cell in WITHHELD:
        assert _feedback_score(work, "accepted", cell) == f"{earned[cell]:.1f} / {2.0 if cell == 'scale_is_faster' else 1.0:.1f}"
        assert _feedback_score(work, "rejected", cell).startswith("0.0 / ")
    assert {s: WorkFolder(work).autograded(s, LESSON_ID).stat().st_mtime_ns for s in autograded} == autograded  # nothing ran


def test_unknown_names_a_submission_not_on_the_list_and_a_decision_already_taken_are_told(tiny, graded):
    _, work = graded
    code, _, err = _run(tiny, "review", work, "--accept", "nobody", LESSON_ID)
    assert code == 1 and "no student 'nobody'" in err and "honest" in err, err
    code, _, err = _run(tiny, "review", work, "--accept", "accepted", "99_nothing")
    assert code == 2 and "99_nothing" in err, err
    code, _, err = _run(tiny, "review", work, "--accept", "honest", LESSON_ID)
    assert code == 1 and "not on the review list" in err, err
    code, out, _ = _run(tiny, "review", work, "--reject", "rejected", LESSON_ID, "--by", "prof")
    assert code == 0 and "already rejected by prof" in out, out
    code, out, _ = _run(tiny, "review", work, "--accept", "rejected", LESSON_ID, "--by", "ta")  # changing it is allowed
    assert code == 0 and "was rejected by prof" in out and "changed to accepted" in out, out
    code, out, _ = _run(tiny, "review", work, "--reject", "rejected", LESSON_ID, "--by", "prof")
    assert code == 0 and "changed to rejected" in out, out
    history = json.loads((work / "review" / "rejected" / f"{LESSON_ID}.json").read_text(encoding="utf-8"))["history"]
    assert [item["decision"] for item in history] == ["rejected", "accepted"]
    code, out, _ = _run(tiny, "review", work)
    assert "0 waiting for a decision" in out and "accepted by prof on" in out, out


def test_grading_again_keeps_the_decisions_of_unchanged_files_and_drops_a_changed_ones(tiny, graded):
    folder, work = graded
    before = _rows(work)
    code, out, err = _run(tiny, "grade", folder, "--work", work)  # nothing changed: nothing graded again
    assert code == 0 and _rows(work) == before, out + err
    code, out, err = _run(tiny, "grade", folder, "--work", work, "--force")  # graded again: the decisions are taken again
    assert code == 0, out + err
    rows = _rows(work)
    accepted = _state(work, "accepted")
    assert accepted.decision and accepted.decision["by"] == "prof", accepted.lines()
    for cell in WITHHELD:
        assert float(rows["accepted"][f"{LESSON_ID}:{cell}"]) == accepted.withheld[cell]["earned"], rows["accepted"]
        assert float(rows["rejected"][f"{LESSON_ID}:{cell}"]) == 0, rows["rejected"]
    assert float(rows["accepted"][f"{LESSON_ID}:scale_has_no_loop"]) == 1.0
    assert rows["accepted"]["review"].startswith("accepted by prof") and rows["rejected"]["review"].startswith("rejected by prof")
    assert _grades(tiny, work, "accepted")["scale_has_no_loop"] == (1.0, False)
    assert _grades(tiny, work, "rejected")["scale_has_no_loop"] == (0.0, False)

    mine = folder / "accepted" / f"{LESSON_ID}.ipynb"
    mine.write_text(json.dumps(tiny_course.with_code(tiny, REACH + "\nprint('changed')")), encoding="utf-8")
    code, out, err = _run(tiny, "grade", folder, "--work", work)
    assert code == 0, out + err
    rows, result = _rows(work), _state(work, "accepted")
    assert result.decision is None and any("dropped; back on the review list" in note for note in result.notes), result.lines()
    assert all(float(rows["accepted"][f"{LESSON_ID}:{cell}"]) == 0 for cell in WITHHELD) and rows["accepted"]["review"], rows
    assert not rows["accepted"]["review"].startswith("accepted"), rows["accepted"]
    assert _grades(tiny, work, "accepted") == {cell: (None, True) for cell in WITHHELD}
    assert decisions.load(WorkFolder(work), "accepted", LESSON_ID) is None
    assert list((work / "review" / "accepted").glob(f"{LESSON_ID}.dropped-*.json"))
    assert rows["rejected"]["review"].startswith("rejected by prof")  # a classmate's decision is untouched
    code, out, _ = _run(tiny, "review", work)
    assert "1 waiting for a decision" in out and f"{LESSON_ID} (accepted)" in out, out
