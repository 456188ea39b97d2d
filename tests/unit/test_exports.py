"""Exports (`tfperf_lab.grading.exports`): a graded work folder as Canvas's gradebook import, Gradescope's and
PrairieLearn's ``results.json``, checked field by field against each platform's published format. Nothing is graded:
the results are built in memory (the tiny lesson's cells, tests/tiny_course.py) and saved as a work folder's states."""

from __future__ import annotations

import csv
import json
import pathlib
import shutil

import pytest

import tiny_course
from tfperf.report import Record
from tfperf_lab import cli
from tfperf_lab.course import Course, WorkFolder
from tfperf_lab.grading import exports
from tfperf_lab.grading.results import CellResult, SubmissionResult

ROOT = pathlib.Path(__file__).resolve().parents[2]
LESSON = tiny_course.LESSON_ID
GONE = "99_gone"  # a lesson graded once, no longer in the course
FINDING = "cell scale_solution, line 7: reads the caller's frame: inspect.currentframe()"
ERROR = "the notebook did not finish: it ran out of time (90 s)"
MEASURED = "speed check tiny_scale_vs_loop: 48.12x (95% CI 45.00-51.00x, needs >= 3x): passed"
HEAD = "A tiny lesson (00_tiny): {score} / 6 points autograded; 1 more graded by hand (written answers), not in this score"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    """The tiny course's source (with its hidden test), nothing released: enough for titles, points and hidden cells."""
    root = tmp_path_factory.mktemp("export-course")
    (root / "autograder").mkdir()
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", root / "autograder" / "nbgrader_config.py")
    source = root / "solutions" / LESSON / f"{LESSON}.ipynb"
    source.parent.mkdir(parents=True)
    source.write_text(json.dumps(tiny_course.source_notebook()), encoding="utf-8")
    return Course(root)


def _verdict(passed: bool = True) -> Record:
    return Record("tiny_scale_vs_loop", 48.123456, (45.0, 51.0), passed=passed, threshold=3.0)


def _cells(**changed) -> list[CellResult]:
    cells = {"scale_matches": CellResult("scale_matches", 2.0, 2.0, "auto", "passed"),
             "scale_rejects_matrices": CellResult("scale_rejects_matrices", 1.0, 1.0, "auto", "passed"),
             "scale_has_no_loop": CellResult("scale_has_no_loop", 1.0, 1.0, "auto", "passed"),
             "scale_is_faster": CellResult("scale_is_faster", 2.0, 2.0, "auto", "passed"),
             "why_vectorize": CellResult("why_vectorize", None, 1.0, "manual", "manual", "graded by your instructor")}
    cells.update(changed)
    return list(cells.values())


def _withheld(cell_id: str, points: float) -> CellResult:
    return CellResult(cell_id, 0.0, points, "auto", "review",
                      f"withheld for review (its test passed: {points:g} of {points:g}): the code reaches into the "
                      "course's or the interpreter's machinery (cell scale_solution line 7); your instructor decides")


def results() -> list[SubmissionResult]:
    """alice: every test passed, a speed check and a measurement without threshold; bob: on the review list (two cells
    withheld, no decision yet); carol: did not finish (the error names the instructor's log); alice again, in a lesson
    the course no longer has."""
    alice = SubmissionResult("alice", LESSON, cells=_cells(), measurements=[
        _verdict(), Record("tiny_headline", 2.5, (2.0, 3.0))], judged=True)
    bob = SubmissionResult("bob", LESSON, cells=_cells(scale_has_no_loop=_withheld("scale_has_no_loop", 1.0),
                                                       scale_is_faster=_withheld("scale_is_faster", 2.0)),
                           measurements=[_verdict()], review=[FINDING], judged=True,
                           withheld={"scale_has_no_loop": {"earned": 1.0, "status": "passed", "message": "", "findings": []},
                                     "scale_is_faster": {"earned": 2.0, "status": "passed", "message": "", "findings": []}})
    carol = SubmissionResult("carol", LESSON, error=ERROR + " (log: /home/teacher/course/.work/logs/carol-00_tiny.log)",
                             cells=[CellResult(c.id, 0.0, c.max_score, c.kind, "not run",
                                               "the notebook stopped before this cell ran") for c in _cells()])
    gone = SubmissionResult("alice", GONE, cells=[CellResult("old_test", 3.5, 4.0, "auto", "failed", "AssertionError: close")])
    return [alice, bob, carol, gone]


def save(work: pathlib.Path, items: list[SubmissionResult]) -> WorkFolder:
    """A work folder as `tfperf-lab grade` leaves it: one state file per graded submission."""
    folder = WorkFolder(work)
    for result in items:
        state = folder.state(result.student, result.lesson)
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"sha256": "0" * 64, "source": f"/submissions/{result.student}/{result.lesson}.ipynb",
                                     "result": result.to_dict()}), encoding="utf-8")
    return folder


# --------------------------------------------------------------------------------------------------------------- canvas


def canvas_accepts(rows: list[list[str]]) -> None:
    """The checks of Canvas's gradebook importer (canvas-lms app/models/gradebook_importer.rb: ``row_has_student_headers?``,
    ``update_column_count``, ``header?``, ``check_for_non_student_row``) on a file's rows."""
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    assert header[2] == "SIS User ID" and header[3] == "SIS Login ID"  # both: five student columns
    assert "Section" in header[4]  # the last student column
    assert "Points Possible" in rows[1][0]
    assert all(len(row) == len(header) for row in rows)


def test_canvas_has_one_row_per_student_one_column_per_lesson_and_points_possible(course):
    rows, notes = exports.canvas_table(results(), course)
    canvas_accepts(rows)
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LESSON, GONE],
        ["Points Possible", "", "", "", "", "6", "4"],  # the lesson's autograded points; a gone lesson's from its results
        ["alice", "", "", "alice", "", "6", "3.5"],
        ["bob", "", "", "bob", "", "3", ""],  # the withheld cells count 0; no submission of the gone lesson: blank
        ["carol", "", "", "carol", "", "", ""],  # not graded: blank, Canvas keeps what it has
    ]
    assert notes == [f"carol's {LESSON} was not graded ({ERROR}): left blank in Canvas",
                     f"on the review list, waiting for a decision (withheld cells exported as 0): bob {LESSON}"]


def test_canvas_takes_ids_and_the_assignment_column_from_canvas_own_export(course, tmp_path):
    roster = tmp_path / "canvas-export.csv"
    roster.write_text(
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,A tiny lesson (4321),Current Score\n"
        "    Points Possible,,,,,6,(read only)\n"
        '"Liddell, Alice",101,S-001,alice,Section 1,,\n'
        '"Builder, Bob",102,S-002,s-bob,Section 2,,\n'
        "bob,103,S-003,someone-else,Section 2,,\n", encoding="utf-8")
    written = exports.canvas(results()[:3], course, tmp_path / "out", roster=roster)
    assert written.files == [tmp_path / "out" / "canvas" / "grades.csv"]
    with written.files[0].open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    canvas_accepts(rows)
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "A tiny lesson (4321)"],  # matched by title, with its ID
        ["Points Possible", "", "", "", "", "6"],
        ["Liddell, Alice", "101", "S-001", "alice", "Section 1", "6"],  # matched on SIS Login ID
        ["bob", "103", "S-003", "someone-else", "Section 2", "3"],  # no login "bob": matched on the name
        ["carol", "", "", "carol", "", ""],
    ]
    assert written.notes[0].startswith("carol is not in the roster")


def test_a_roster_that_is_not_a_canvas_export_is_refused(course, tmp_path):
    roster = tmp_path / "names.csv"
    roster.write_text("name,email\nalice,a@example.org\n", encoding="utf-8")
    with pytest.raises(exports.ExportError, match="not a Canvas gradebook export"):
        exports.canvas(results(), course, tmp_path, roster=roster)
    with pytest.raises(exports.ExportError, match="cannot be read"):
        exports.canvas(results(), course, tmp_path, roster=tmp_path / "missing.csv")


# ----------------------------------------------------------------------------------------------------------- gradescope

GRADESCOPE_TOP = {"score", "execution_time", "output", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "number", "output", "tags", "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


def gradescope_accepts(data: dict) -> None:
    """Gradescope's ``results.json`` (gradescope-autograders.readthedocs.io/en/latest/specs/): known keys only, a score
    on top or on every test, known visibilities and statuses, leaderboard entries with a name and a value."""
    assert set(data) <= GRADESCOPE_TOP
    assert "score" in data or all("score" in test for test in data["tests"])
    for test in data["tests"]:
        assert set(test) <= GRADESCOPE_TEST
        assert test.get("visibility", "visible") in VISIBILITIES and test.get("status", "passed") in {"passed", "failed"}
    for entry in data.get("leaderboard", []):
        assert set(entry) <= {"name", "value", "order"} and entry.get("order", "desc") in {"asc", "desc"}
    json.dumps(data)


def test_gradescope_results_of_a_graded_submission(course):
    alice = results()[0]
    lesson = course.lesson(LESSON)
    data = exports.gradescope_result(alice, lesson, exports.hidden_cells(course, lesson))
    gradescope_accepts(data)
    assert data == {
        "score": 6.0,
        "output": "\n".join([HEAD.format(score=6), MEASURED, "measured tiny_headline: 2.50x (95% CI 2.00-3.00x)"]),
        "tests": [
            # the one cell with a hidden-test region shows after the grades are published; the others at once
            {"name": "scale_matches", "score": 2.0, "max_score": 2.0, "status": "passed", "output": "passed",
             "visibility": "after_published"},
            {"name": "scale_rejects_matrices", "score": 1.0, "max_score": 1.0, "status": "passed", "output": "passed",
             "visibility": "visible"},
            {"name": "scale_has_no_loop", "score": 1.0, "max_score": 1.0, "status": "passed", "output": "passed",
             "visibility": "visible"},
            {"name": "scale_is_faster", "score": 2.0, "max_score": 2.0, "status": "passed", "output": "passed\n" + MEASURED,
             "visibility": "visible"},
        ],
        "leaderboard": [{"name": "tiny_scale_vs_loop", "value": 48.123, "order": "desc"}],  # speed checks only
        "extra_data": {"student": "alice", "lesson": LESSON},
    }


def test_gradescope_results_of_a_submission_on_the_review_list(course):
    bob = results()[1]
    lesson = course.lesson(LESSON)
    data = exports.gradescope_result(bob, lesson, exports.hidden_cells(course, lesson))
    gradescope_accepts(data)
    assert data["score"] == 3.0
    assert data["output"].splitlines() == [
        HEAD.format(score=3), "review: on the review list; the withheld cells score 0 until your instructor decides",
        f"  finding: {FINDING}", MEASURED]
    withheld = {test["name"]: test for test in data["tests"] if test["name"] in ("scale_has_no_loop", "scale_is_faster")}
    assert [(t["score"], t["max_score"], t["status"]) for t in withheld.values()] == [(0.0, 1.0, "failed"), (0.0, 2.0, "failed")]
    assert withheld["scale_has_no_loop"]["output"] == "review: " + _withheld("scale_has_no_loop", 1.0).message
    assert withheld["scale_is_faster"]["output"] == "review: " + _withheld("scale_is_faster", 2.0).message + "\n" + MEASURED
    assert data["leaderboard"] == [{"name": "tiny_scale_vs_loop", "value": 48.123, "order": "desc"}]


def test_gradescope_results_of_a_submission_that_could_not_be_graded(course):
    data = exports.gradescope_result(results()[2], course.lesson(LESSON), exports.hidden_cells(course, course.lesson(LESSON)))
    gradescope_accepts(data)
    assert data == {"score": 0.0, "output": f"A tiny lesson (00_tiny): NOT GRADED: {ERROR}", "tests": [],
                    "extra_data": {"student": "carol", "lesson": LESSON}}  # no log path, no leaderboard


def test_gradescope_hides_every_test_until_published_where_the_hidden_ones_are_not_known(course):
    gone = results()[3]
    data = exports.gradescope_result(gone, None, exports.hidden_cells(course, None))
    gradescope_accepts(data)
    assert data["tests"] == [{"name": "old_test", "score": 3.5, "max_score": 4.0, "status": "failed",
                              "output": "failed: AssertionError: close", "visibility": "after_published"}]
    assert data["output"] == f"{GONE}: 3.5 / 4 points autograded" and "leaderboard" not in data


# --------------------------------------------------------------------------------------------------------- prairielearn


def prairielearn_accepts(data: dict) -> None:
    """PrairieLearn's external grading ``results.json`` (prairielearn.readthedocs.io, External grading, Grading results):
    a score in [0, 1] when gradable, tests with the fields ``<pl-external-grader-results>`` renders."""
    assert isinstance(data["gradable"], bool)
    if data["gradable"]:
        assert 0.0 <= data["score"] <= 1.0
    else:
        assert data["format_errors"]
    for test in data["tests"]:
        assert set(test) == {"name", "description", "points", "max_points", "message", "output"}
        assert 0 <= test["points"] <= test["max_points"]
    assert len(json.dumps(data)) < 1_000_000  # the documented 1 MB limit


def test_prairielearn_results_of_a_graded_and_a_reviewed_submission(course):
    lesson = course.lesson(LESSON)
    alice, bob = (exports.prairielearn_result(result, lesson) for result in results()[:2])
    for data in (alice, bob):
        prairielearn_accepts(data)
    assert alice == {
        "gradable": True, "score": 1.0, "message": HEAD.format(score=6),
        "output": "\n".join([HEAD.format(score=6), MEASURED, "measured tiny_headline: 2.50x (95% CI 2.00-3.00x)"]),
        "tests": [
            {"name": "scale_matches", "description": "autograded test", "points": 2.0, "max_points": 2.0,
             "message": "passed", "output": ""},
            {"name": "scale_rejects_matrices", "description": "autograded test", "points": 1.0, "max_points": 1.0,
             "message": "passed", "output": ""},
            {"name": "scale_has_no_loop", "description": "autograded test", "points": 1.0, "max_points": 1.0,
             "message": "passed", "output": ""},
            {"name": "scale_is_faster", "description": "speed test (tiny_scale_vs_loop)", "points": 2.0, "max_points": 2.0,
             "message": "passed", "output": MEASURED},
        ],
    }
    assert bob["score"] == 0.5 and bob["message"] == HEAD.format(score=3)
    assert f"  finding: {FINDING}" in bob["output"].splitlines()
    assert [(t["name"], t["points"], t["message"].split(":")[0]) for t in bob["tests"]] == [
        ("scale_matches", 2.0, "passed"), ("scale_rejects_matrices", 1.0, "passed"),
        ("scale_has_no_loop", 0.0, "review"), ("scale_is_faster", 0.0, "review")]


def test_prairielearn_results_of_a_submission_that_could_not_be_graded(course):
    data = exports.prairielearn_result(results()[2], course.lesson(LESSON))
    prairielearn_accepts(data)
    assert data == {"gradable": False, "score": 0.0, "message": f"A tiny lesson (00_tiny): NOT GRADED: {ERROR}",
                    "format_errors": [ERROR], "output": "", "tests": []}


# ------------------------------------------------------------------------------------------------ work folder, command


def test_nothing_hidden_or_instructor_only_leaves_in_any_export(course, tmp_path):
    work = save(tmp_path / "work", results())
    text = ""
    for platform in exports.PLATFORMS:
        written = exports.export(course, work, platform)
        text += "".join(path.read_text(encoding="utf-8") for path in written.files)
    hidden = tiny_course.MATCHES.split("### BEGIN HIDDEN TESTS\n")[1].split("### END")[0]
    assert text and "BEGIN HIDDEN" not in text and "Traceback" not in text and "/.work/logs/" not in text
    assert not any(line.strip() in text for line in hidden.splitlines() if line.strip())


def test_export_reads_the_saved_states_and_writes_each_platform_files(course, tmp_path):
    work = save(tmp_path / "work", results())
    gradescope = exports.export(course, work, "gradescope")
    out = work.root / "exports" / "gradescope"
    assert sorted(gradescope.files) == sorted([out / "alice" / LESSON / "results.json", out / "alice" / GONE / "results.json",
                                               out / "bob" / LESSON / "results.json", out / "carol" / LESSON / "results.json"])
    lesson = course.lesson(LESSON)
    assert json.loads((out / "bob" / LESSON / "results.json").read_text(encoding="utf-8")) == \
        exports.gradescope_result(results()[1], lesson, exports.hidden_cells(course, lesson))
    learn = exports.export(course, work, "prairielearn", out=tmp_path / "elsewhere")
    assert len(learn.files) == 4 and learn.summary() == \
        f"prairielearn: 4 file(s) written in {tmp_path / 'elsewhere' / 'prairielearn'} (<student>/<lesson>/results.json)"
    assert json.loads((tmp_path / "elsewhere" / "prairielearn" / "carol" / LESSON / "results.json").read_text())["gradable"] is False
    canvas = exports.export(course, work, "canvas")
    assert canvas.files == [work.root / "exports" / "canvas" / "grades.csv"]


def test_the_command_exports_and_refuses_an_empty_work_folder(course, tmp_path, capsys):
    work = save(tmp_path / "work", results())
    assert cli.main(["--course", str(course.root), "export", str(work.root), "--to", "canvas", "--out", str(tmp_path / "x")]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == f"canvas: 1 file(s) written in {tmp_path / 'x' / 'canvas'} (grades.csv)"
    assert f"note: carol's {LESSON} was not graded ({ERROR}): left blank in Canvas" in said
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["--course", str(course.root), "export", str(empty), "--to", "gradescope"]) == 2
    assert "nothing was graded in" in capsys.readouterr().err
    assert cli.main(["--course", str(course.root), "export", str(work.root), "--to", "gradescope",
                     "--roster", str(tmp_path / "r.csv")]) == 2
    assert "--roster is Canvas's gradebook export" in capsys.readouterr().err
    assert not (empty / "exports").exists()
