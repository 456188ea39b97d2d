"""Exports (`tfperf_lab.grading.exports`): the registry of platforms, one module each, and what each writes from a graded
work folder: Canvas's gradebook import, Gradescope's and PrairieLearn's ``results.json`` (checked field by field against
each platform's published format), and Gradescope's autograder zip. Nothing is graded: the results are built in memory
(the tiny lesson's cells, tests/tiny_course.py) and saved as a work folder's states. The glue that grades a submission
where the platform puts it runs in tests/grading/test_platform_glue.py."""

from __future__ import annotations

import csv
import json
import pathlib
import shutil
import stat
import zipfile

import pytest

import tiny_course
from tfperf.report import Record
from tfperf_lab import cli
from tfperf_lab.course import Course, WorkFolder
from tfperf_lab.grading import exports, roster as roster_
from tfperf_lab.grading.exports import canvas, gradescope, prairielearn
from tfperf_lab.grading.results import CellResult, SubmissionResult

ROOT = pathlib.Path(__file__).resolve().parents[2]
LESSON = tiny_course.LESSON_ID
GONE = "99_gone"  # a lesson graded once, no longer in the course
FINDING = "cell scale_solution, line 7: reads the caller's frame: inspect.currentframe()"
ERROR = "the notebook did not finish: it ran out of time (90 s)"
MEASURED = "speed check tiny_scale_vs_loop: 48.12x (95% CI 45.00-51.00x, needs >= 3x): passed"
HEAD = "A tiny lesson (00_tiny): {score} / 6 points autograded; 1 more graded by hand (written answers), not in this score"
NAMES = {"scale_matches": "fast_scale gives 3v - 1.", "scale_rejects_matrices": "fast_scale refuses a matrix.",
         "scale_has_no_loop": "fast_scale has no Python loop.",
         "scale_is_faster": "fast_scale is at least 3x faster than the loop."}  # the test cells' docstrings


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


def refused_file() -> SubmissionResult:
    return SubmissionResult("dave", LESSON, error="dave.ipynb is not a notebook: it is not JSON")


def machine_fault() -> SubmissionResult:
    return SubmissionResult("erin", LESSON, machine=["the sandbox could not start: bubblewrap is missing"])


def save(work: pathlib.Path, items: list[SubmissionResult]) -> WorkFolder:
    """A work folder as `tfperf-lab grade` leaves it: one state file per graded submission (a fault in faults/)."""
    folder = WorkFolder(work)
    for result in items:
        state = (folder.faults if result.machine else folder.state)(result.student, result.lesson)
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"sha256": "0" * 64, "source": f"/submissions/{result.student}/{result.lesson}.ipynb",
                                     "result": result.to_dict()}), encoding="utf-8")
    return folder


def read_csv(path: pathlib.Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


# ------------------------------------------------------------------------------------------------------------- registry


def test_every_platform_registers_itself_from_its_own_module():
    assert exports.PLATFORMS == ("canvas", "gradescope", "gradescope-autograder", "prairielearn")
    modules = {name: entry.write.__module__ for name, entry in exports.REGISTRY.items()}
    assert modules == {"canvas": "tfperf_lab.grading.exports.canvas", "gradescope": "tfperf_lab.grading.exports.gradescope",
                       "gradescope-autograder": "tfperf_lab.grading.exports.gradescope_autograder",
                       "prairielearn": "tfperf_lab.grading.exports.prairielearn"}
    assert not exports.REGISTRY["gradescope-autograder"].reads_grades and exports.REGISTRY["canvas"].reads_grades
    assert all(entry.help and entry.files for entry in exports.REGISTRY.values())


def test_a_new_platform_is_one_decorated_function(course, tmp_path, monkeypatch):
    monkeypatch.setattr(exports, "REGISTRY", dict(exports.REGISTRY))

    @exports.register("lines", help="one line per row", files="rows.txt")
    def write(request):
        target = request.folder / "rows.txt"
        target.parent.mkdir(parents=True)
        target.write_text("".join(f"{r.student} {r.lesson} {r.score:g}\n" for r in request.rows), encoding="utf-8")
        return exports.Written("lines", request.folder, [target])

    assert "lines" in exports.PLATFORMS
    written = exports.export(course, save(tmp_path / "work", results()), "lines")
    assert written.files[0].read_text(encoding="utf-8").splitlines()[0] == f"alice {LESSON} 6"
    assert written.summary() == f"lines: 1 file(s) written in {tmp_path / 'work' / 'exports' / 'lines'} (rows.txt)"
    with pytest.raises(ValueError, match="two exporters are named 'lines'"):
        exports.register("lines", help="", files="")(lambda request: None)


def test_descriptions_are_the_test_cells_docstrings(course):
    lesson = course.lesson(LESSON)
    assert exports.descriptions(lesson) == {**NAMES, "why_vectorize": "written answer (why_vectorize)"}
    assert exports.descriptions(None) == {}


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
    rows, notes = canvas.canvas_table(results(), course)
    canvas_accepts(rows)
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LESSON, GONE],
        ["Points Possible", "", "", "", "", "7", "4"],  # the lesson's points, written answers too; a gone lesson's from its results
        ["alice", "", "", "alice", "", "6", "3.5"],  # the written answer is not graded by hand yet: left out, named
        ["bob", "", "", "bob", "", "3", ""],  # the withheld cells count 0; no roster: an unknown lesson stays blank
        ["carol", "", "", "carol", "", "0", ""],  # ran out of time: 0, never blank
    ]
    assert notes == [
        f"could not be graded or did not run to the end (scored as it stands, 0 for what never ran): carol's {LESSON} ({ERROR})",
        "written answers not graded by hand yet (left out of the total until you grade them in the formgrader; export again "
        f"then): alice's {LESSON} (why_vectorize), bob's {LESSON} (why_vectorize)",
        f"on the review list, waiting for a decision (withheld cells exported as 0): bob {LESSON}"]


def test_canvas_adds_the_manual_scores_and_takes_the_late_penalty(course):
    alice, bob = results()[:2]
    alice.late = {"penalty": 1.5, "days": 1, "policy": "per-day", "submitted": "", "due": "", "extended": False, "how": ""}
    rows, notes = canvas.canvas_table([alice, bob], course, manual={("alice", LESSON): {"why_vectorize": 1.0},
                                                                    ("bob", LESSON): {"why_vectorize": None}})
    assert rows[2:] == [["alice", "", "", "alice", "", "5.5"], ["bob", "", "", "bob", "", "3"]]  # 6 - 1.5 + 1
    assert f"late penalties taken: alice's {LESSON} -1.5" in notes
    assert any(note.endswith(f"bob's {LESSON} (why_vectorize)") for note in notes)


def test_canvas_takes_ids_and_the_assignment_column_from_canvas_own_export_with_a_row_for_every_student(course, tmp_path):
    export = tmp_path / "canvas-export.csv"
    export.write_text(
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,A tiny lesson (4321),Current Score\n"
        "    Points Possible,,,,,7,(read only)\n"
        '"Liddell, Alice",101,S-001,alice,Section 1,,\n'
        '"Builder, Bob",102,S-002,s-bob,Section 2,,\n'
        "bob,103,S-003,someone-else,Section 2,,\n"
        '"Doe, Dan",104,S-004,dan,Section 1,,\n', encoding="utf-8")
    work = save(tmp_path / "work", [*results()[:3], refused_file(), machine_fault()])
    written = exports.export(course, work, "canvas", roster=export, out=tmp_path / "out")
    assert written.files == [tmp_path / "out" / "canvas" / "grades.csv"]
    rows = read_csv(written.files[0])
    canvas_accepts(rows)
    assert rows == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "A tiny lesson (4321)"],  # matched by title, with its ID
        ["Points Possible", "", "", "", "", "7"],
        ["Liddell, Alice", "101", "S-001", "alice", "Section 1", "6"],  # matched on SIS Login ID
        ["Builder, Bob", "102", "S-002", "s-bob", "Section 2", "0"],  # on the roster, nothing handed in: 0
        ["bob", "103", "S-003", "someone-else", "Section 2", "3"],  # no login "bob": matched on the name
        ["Doe, Dan", "104", "S-004", "dan", "Section 1", "0"],
        ["carol", "", "", "carol", "", "0"],  # not on the roster: the folder's name, noted
        ["dave", "", "", "dave", "", "0"],  # refused: 0
        ["erin", "", "", "erin", "", ""],  # the grading machine's fault: left out until graded again
    ]
    said = "\n".join(written.notes)
    assert "carol is not on the roster" in said and "dave is not on the roster" in said
    assert f"nothing handed in: 0 for s-bob's {LESSON}, dan's {LESSON}" in said
    assert f"by the grading machine's fault" in said and f"erin's {LESSON}" in said


def test_canvas_names_submission_folders_with_a_mapping(course, tmp_path):
    ours = tmp_path / "roster.csv"
    ours.write_text("student,name,email,sis_id,section\nana,Ana A,ana@uni.edu,S1,A\ncarl,Carl C,carl@uni.edu,S3,B\n",
                    encoding="utf-8")
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("folder,student\nalice,ana\n", encoding="utf-8")
    work = save(tmp_path / "work", results()[:1])
    rows = read_csv(exports.export(course, work, "canvas", roster=ours, mapping=mapping).files[0])
    assert rows[2:] == [["Ana A", "", "S1", "ana", "A", "6"], ["Carl C", "", "S3", "carl", "B", "0"]]


def test_a_roster_that_cannot_be_read_is_refused(course, tmp_path):
    work = save(tmp_path / "work", results())
    names = tmp_path / "names.csv"
    names.write_text("name,email\nalice,a@example.org\n", encoding="utf-8")
    with pytest.raises(exports.ExportError, match="no 'student' column"):
        exports.export(course, work, "canvas", roster=names)
    with pytest.raises(exports.ExportError, match="cannot be read"):
        exports.export(course, work, "canvas", roster=tmp_path / "missing.csv")
    with pytest.raises(exports.ExportError, match="give a roster"):
        exports.export(course, work, "canvas", mapping=names)


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
        assert isinstance(test["name"], str) and isinstance(test.get("number", ""), str)
    for entry in data.get("leaderboard", []):
        assert set(entry) <= {"name", "value", "order"} and entry.get("order", "desc") in {"asc", "desc"}
    assert gradescope.problems(data) == []
    json.dumps(data)


def _gradescope(course, result) -> dict:
    lesson = exports.lesson_of(course, result.lesson)
    return gradescope.gradescope_result(result, lesson, exports.hidden_cells(course, lesson), exports.descriptions(lesson))


def test_gradescope_results_of_a_graded_submission(course):
    data = _gradescope(course, results()[0])
    gradescope_accepts(data)

    def test(number, cell, points, output="passed", visibility="visible"):
        return {"name": NAMES[cell], "number": number, "score": points, "max_score": points, "status": "passed",
                "output": output, "visibility": visibility, "extra_data": {"cell": cell}}

    assert data == {
        "score": 6.0,
        "output": "\n".join([HEAD.format(score=6), MEASURED, "measured tiny_headline: 2.50x (95% CI 2.00-3.00x)"]),
        "tests": [
            # the one cell with a hidden-test region shows after the grades are published; the others at once
            test("1", "scale_matches", 2.0, visibility="after_published"), test("2", "scale_rejects_matrices", 1.0),
            test("3", "scale_has_no_loop", 1.0), test("4", "scale_is_faster", 2.0, output="passed\n" + MEASURED),
        ],
        "leaderboard": [{"name": "tiny_scale_vs_loop", "value": 48.123, "order": "desc"}],  # speed checks only
    }


def test_gradescope_results_of_a_submission_on_the_review_list(course):
    data = _gradescope(course, results()[1])
    gradescope_accepts(data)
    assert data["score"] == 3.0
    assert data["output"].splitlines() == [
        HEAD.format(score=3), "review: on the review list; the withheld cells score 0 until your instructor decides",
        f"  finding: {FINDING}", MEASURED]
    withheld = {test["extra_data"]["cell"]: test for test in data["tests"]
                if test["extra_data"]["cell"] in ("scale_has_no_loop", "scale_is_faster")}
    assert [(t["score"], t["max_score"], t["status"]) for t in withheld.values()] == [(0.0, 1.0, "failed"), (0.0, 2.0, "failed")]
    assert withheld["scale_has_no_loop"]["output"] == "review: " + _withheld("scale_has_no_loop", 1.0).message
    assert withheld["scale_is_faster"]["output"] == "review: " + _withheld("scale_is_faster", 2.0).message + "\n" + MEASURED


def test_gradescope_leaderboard_has_only_passed_speed_checks(course):
    slow = SubmissionResult("fay", LESSON, cells=_cells(scale_is_faster=CellResult("scale_is_faster", 0.0, 2.0, "auto", "failed",
                                                                                   "AssertionError: 1.2x, needs 3x")),
                            measurements=[_verdict(passed=False)])
    data = _gradescope(course, slow)
    gradescope_accepts(data)
    assert "leaderboard" not in data and data["score"] == 4.0


def test_gradescope_a_notebook_that_ran_out_of_time_fails_its_tests_with_why(course):
    data = _gradescope(course, results()[2])
    gradescope_accepts(data)
    assert data["score"] == 0.0 and "/.work/logs/" not in json.dumps(data)
    assert [(t["name"], t["status"], t["output"]) for t in data["tests"]] == [
        *((NAMES[cell], "failed", "not run: the notebook stopped before this cell ran") for cell in NAMES),
        (gradescope.STOPPED, "failed", ERROR)]
    assert data["output"].splitlines() == [HEAD.format(score=0), f"stopped before its end: {ERROR}"]


def test_gradescope_a_file_never_run_or_the_machine_s_fault_scores_0_with_why(course):
    refused = _gradescope(course, refused_file())
    fault = _gradescope(course, machine_fault())
    for data in (refused, fault):
        gradescope_accepts(data)
        assert data["score"] == 0.0 and data["tests"] == []
    assert refused["output"] == "A tiny lesson (00_tiny): NOT GRADED: dave.ipynb is not a notebook: it is not JSON"
    assert "the grading machine, not the notebook" in fault["output"]


def test_gradescope_hides_every_test_until_published_where_the_hidden_ones_are_not_known(course):
    data = gradescope.gradescope_result(results()[3], None, exports.hidden_cells(course, None))
    gradescope_accepts(data)
    assert data["tests"] == [{"name": "old_test", "number": "1", "score": 3.5, "max_score": 4.0, "status": "failed",
                              "output": "failed: AssertionError: close", "visibility": "after_published",
                              "extra_data": {"cell": "old_test"}}]
    assert data["output"] == f"{GONE}: 3.5 / 4 points autograded" and "leaderboard" not in data


def test_the_format_check_finds_what_gradescope_would_refuse():
    assert gradescope.problems({"score": 1, "tests": [{"name": "x", "status": "error", "visibility": "soon", "colour": 1}],
                                "leaderboard": [{"name": "x"}], "grade": 2}) == [
        "unknown key 'grade'", "test 'x': unknown key 'colour'", "test 'x': status 'error'", "test 'x': visibility 'soon'",
        "leaderboard entry {'name': 'x'}"]


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
    assert prairielearn.problems(data) == []


def _prairielearn(course, result) -> dict:
    lesson = exports.lesson_of(course, result.lesson)
    return prairielearn.prairielearn_result(result, lesson, exports.descriptions(lesson))


def test_prairielearn_results_of_a_graded_and_a_reviewed_submission(course):
    alice, bob = (_prairielearn(course, result) for result in results()[:2])
    for data in (alice, bob):
        prairielearn_accepts(data)

    def test(cell, points, kind="autograded test", output=""):
        return {"name": NAMES[cell], "description": f"{kind}, cell {cell}", "points": points, "max_points": points,
                "message": "passed", "output": output}

    assert alice == {
        "gradable": True, "score": 1.0, "message": HEAD.format(score=6),
        "output": "\n".join([HEAD.format(score=6), MEASURED, "measured tiny_headline: 2.50x (95% CI 2.00-3.00x)"]),
        "tests": [test("scale_matches", 2.0), test("scale_rejects_matrices", 1.0), test("scale_has_no_loop", 1.0),
                  test("scale_is_faster", 2.0, "speed test (tiny_scale_vs_loop)", MEASURED)],
    }
    assert bob["score"] == 0.5 and bob["message"] == HEAD.format(score=3)
    assert f"  finding: {FINDING}" in bob["output"].splitlines()
    assert [(t["name"], t["points"], t["message"].split(":")[0]) for t in bob["tests"]] == [
        (NAMES["scale_matches"], 2.0, "passed"), (NAMES["scale_rejects_matrices"], 1.0, "passed"),
        (NAMES["scale_has_no_loop"], 0.0, "review"), (NAMES["scale_is_faster"], 0.0, "review")]


def test_prairielearn_a_timeout_is_graded_with_a_failed_test_never_not_gradable(course):
    data = _prairielearn(course, results()[2])
    prairielearn_accepts(data)
    assert data["gradable"] is True and data["score"] == 0.0
    assert data["tests"][-1] == {"name": prairielearn.STOPPED, "description": "the whole notebook", "points": 0.0,
                                 "max_points": 0.0, "message": f"failed: {ERROR}", "output": ""}
    assert all(t["message"] == "not run: the notebook stopped before this cell ran" for t in data["tests"][:-1])


def test_prairielearn_only_a_file_that_is_no_notebook_is_not_gradable(course):
    data = _prairielearn(course, refused_file())
    prairielearn_accepts(data)
    assert data == {"gradable": False, "score": 0.0, "message": "A tiny lesson (00_tiny): NOT GRADED: dave.ipynb is not a "
                    "notebook: it is not JSON", "format_errors": ["dave.ipynb is not a notebook: it is not JSON"],
                    "output": "A tiny lesson (00_tiny): NOT GRADED: dave.ipynb is not a notebook: it is not JSON", "tests": []}


# ------------------------------------------------------------------------------------------------ work folder, command


def test_nothing_hidden_or_instructor_only_leaves_in_any_export(course, tmp_path):
    work = save(tmp_path / "work", [*results(), refused_file(), machine_fault()])
    text = ""
    for platform in exports.PLATFORMS:
        if exports.REGISTRY[platform].reads_grades:
            written = exports.export(course, work, platform)
            text += "".join(path.read_text(encoding="utf-8") for path in written.files)
    hidden = tiny_course.MATCHES.split("### BEGIN HIDDEN TESTS\n")[1].split("### END")[0]
    assert text and "BEGIN HIDDEN" not in text and "Traceback" not in text and "/.work/logs/" not in text
    assert not any(line.strip() in text for line in hidden.splitlines() if line.strip())


def test_export_reads_the_class_rows_and_writes_each_platform_files(course, tmp_path):
    work = save(tmp_path / "work", results())
    written = exports.export(course, work, "gradescope")
    out = work.root / "exports" / "gradescope"
    assert sorted(written.files) == sorted([out / "alice" / LESSON / "results.json", out / "alice" / GONE / "results.json",
                                            out / "bob" / LESSON / "results.json", out / "carol" / LESSON / "results.json"])
    assert json.loads((out / "bob" / LESSON / "results.json").read_text(encoding="utf-8")) == \
        {**_gradescope(course, results()[1]), "extra_data": {"student": "bob", "lesson": LESSON}}
    learn = exports.export(course, work, "prairielearn", out=tmp_path / "elsewhere")
    assert len(learn.files) == 4 and learn.summary() == \
        f"prairielearn: 4 file(s) written in {tmp_path / 'elsewhere' / 'prairielearn'} (<student>/<lesson>/results.json)"
    assert json.loads((tmp_path / "elsewhere" / "prairielearn" / "carol" / LESSON / "results.json").read_text())["gradable"] is True
    assert exports.export(course, work, "canvas").files == [work.root / "exports" / "canvas" / "grades.csv"]


def test_the_gradescope_autograder_zip_holds_the_scripts_and_the_course_only(course, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(course.root, root)
    for name, text in {"pyproject.toml": "[project]\nname = 'x'\n", "README.md": "# x\n", "tfperf/__init__.py": '"""x"""\n',
                       "tfperf/ranges.json": "{}\n", "tfperf_lab/__init__.py": '"""x"""\n', "tfperf_lab/__pycache__/a.pyc": "",
                       f"lessons/{LESSON}/{LESSON}.ipynb": "{}\n", "autograder/roster.csv": "student\nana\n",
                       ".venv/bin/python": "", ".work/gradebook.db": "", "docs/flake/run.json": "{}", "tests/test_x.py": "",
                       f"solutions/{LESSON}/.ipynb_checkpoints/x.ipynb": "{}"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    written = exports.export(Course(root), WorkFolder(tmp_path / "empty-work"), "gradescope-autograder")  # nothing graded: fine
    target = tmp_path / "empty-work" / "exports" / "gradescope-autograder" / "autograder.zip"
    assert written.files == [target] and "autograder/roster.csv" in written.notes[-1]
    with zipfile.ZipFile(target) as archive:
        names = sorted(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        run = archive.read("run_autograder").decode()
        setup = archive.read("setup.sh").decode()
    assert names == sorted(["setup.sh", "run_autograder", "pyproject.toml", "README.md", "tfperf/__init__.py",
                            "tfperf/ranges.json", "tfperf_lab/__init__.py", f"lessons/{LESSON}/{LESSON}.ipynb",
                            f"solutions/{LESSON}/{LESSON}.ipynb", "autograder/nbgrader_config.py"])
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert len(run.strip().splitlines()) == 3 and "gradescope_autograder run --submission /autograder/submission" in run
    assert "/autograder/results/results.json" in run and "pip" not in run  # installs nothing
    assert setup.startswith("#!/usr/bin/env bash") and 'pip install "/autograder/source[grader]"' in setup and "bubblewrap" in setup
    with pytest.raises(exports.ExportError, match="lacks"):
        exports.export(course, WorkFolder(tmp_path / "w2"), "gradescope-autograder")


def test_the_command_exports_and_refuses_an_empty_work_folder(course, tmp_path, capsys):
    work = save(tmp_path / "work", results())
    assert cli.main(["--course", str(course.root), "export", str(work.root), "--to", "canvas", "--out", str(tmp_path / "x")]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == f"canvas: 1 file(s) written in {tmp_path / 'x' / 'canvas'} (grades.csv)"
    assert any(line.startswith("note: could not be graded or did not run to the end") and "carol's" in line for line in said)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["--course", str(course.root), "export", str(empty), "--to", "gradescope"]) == 2
    assert "nothing was graded in" in capsys.readouterr().err
    ours = tmp_path / "r.csv"
    ours.write_text("student\nalice\nzoe\n", encoding="utf-8")
    assert cli.main(["--course", str(course.root), "export", str(work.root), "--to", "gradescope", "--roster", str(ours)]) == 0
    assert "1 roster row(s) with nothing handed in: no results.json" in capsys.readouterr().out  # zoe
    assert cli.main(["--course", str(course.root), "export", str(work.root), "--to", "canvas",
                     "--mapping", str(ours)]) == 2
    assert "give a roster" in capsys.readouterr().err
    assert not (empty / "exports").exists()
    assert roster_.read(ours).ids == ["alice", "zoe"]
