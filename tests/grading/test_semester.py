"""Issue 50 items 2 and 3: a roster in, due dates, late work and extensions, on a private copy of the tiny lesson.

A class of four on the roster: ana hands in on time, ben two days late (10% a day off), cal late but inside her
extension, and dan nothing; eve, who is not on the roster, hands in too. Every roster student has a row in the CSV,
the penalty is taken once (`semester.assess`) and shows on the CSV and the student's page."""

import contextlib
import csv
import io
import json

import pytest

from tfperf_lab import cli
from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import intake, roster, semester
from tfperf_lab.grading.results import SubmissionResult, CellResult
from tfperf_lab.isolation import backends
from pipeline import write_submission
import tiny_course

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]
LESSON_ID = tiny_course.LESSON_ID
SEMESTER = f"""
[due]
{LESSON_ID} = 2027-02-08T23:59:00+00:00

[late]
policy = "per-day"
per_day = 0.10
grace_minutes = 15

[extensions.cal]
{LESSON_ID} = 3
"""


def test_a_roster_and_a_late_policy_reach_the_csv_and_the_page(tmp_path):
    course = tiny_course.build(tmp_path / "course")
    (course.autograder / "semester.toml").write_text(SEMESTER, encoding="utf-8")
    (course.autograder / "roster.csv").write_text("student,name,email\nana,Ana A,ana@uni.edu\nben,Ben B,ben@uni.edu\n"
                                                  "cal,Cal C,cal@uni.edu\ndan,Dan D,dan@uni.edu\n", encoding="utf-8")
    folder, work = tmp_path / "class", tmp_path / "work"
    lesson = course.lesson(LESSON_ID)
    handed = {"ana": "2027-02-08T23:00:00+00:00", "ben": "2027-02-10T12:00:00+00:00", "cal": "2027-02-10T12:00:00+00:00",
              "eve": "2027-02-08T10:00:00+00:00"}
    for student, when in handed.items():
        write_submission(folder, student, lesson, lesson.source_notebook())
        intake.write_record(folder / student, {f"{LESSON_ID}.ipynb": when})
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(["--course", str(course.root), "grade", str(folder), "--work", str(work), "--workers", "2"])
    assert code == 0, out.getvalue()
    with (work / "grades.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"ana", "ben", "cal", "dan", "eve"}, rows.keys()
    full = float(rows["ana"]["max_score"])
    assert float(rows["ana"]["score"]) == full and rows["ana"]["late_penalty"] == "", rows["ana"]
    assert float(rows["ben"]["late_penalty"]) == pytest.approx(0.2 * full) and float(rows["ben"]["score"]) == pytest.approx(0.8 * full)
    assert "late 2 day(s)" in rows["ben"]["status"], rows["ben"]
    assert float(rows["cal"]["score"]) == full and rows["cal"]["late_penalty"] == "", rows["cal"]
    assert rows["dan"]["status"] == "not submitted" and float(rows["dan"]["score"]) == 0 and float(rows["dan"]["max_score"]) == full
    assert rows["eve"]["submitted"].startswith("2027-02-08T10:00")
    page = WorkFolder(work).feedback("ben", LESSON_ID).read_text(encoding="utf-8")
    assert "Handed in late" in page and "2 day" in page, "the late penalty is not on the student's page"


def test_assess_decides_each_policy_once():
    def result(when):
        return SubmissionResult("ana", "L", cells=[CellResult("a", 10.0, 10.0, "auto", "passed")], submitted_at=when)

    term = semester.Semester(due={"L": semester._when(__import__("datetime").datetime(2027, 2, 8, 23, 59, tzinfo=__import__("datetime").timezone.utc), "t")},
                             policy="per-day", per_day=0.25, most=0.5, grace_minutes=10)
    on_time = result("2027-02-09T00:05:00+00:00")
    semester.assess(on_time, term)
    assert on_time.late is None and on_time.score == 10
    three_days = result("2027-02-11T12:00:00+00:00")
    semester.assess(three_days, term)
    assert three_days.late["days"] == 3 and three_days.score == 5.0  # 75% capped at 50%
    term.policy, term.after_days = "zero-after", 1
    semester.assess(three_days, term)
    assert three_days.score == 0
    term.excused.add(("ana", "L"))
    semester.assess(three_days, term)
    assert three_days.late is None and three_days.excused and three_days.score == 10


def test_the_roster_reads_its_csv_a_canvas_export_and_a_mapping(tmp_path):
    ours = tmp_path / "roster.csv"
    ours.write_text("student,name,email,sis_id,section\nana,Ana A,ana.a@uni.edu,S1,A\n", encoding="utf-8")
    mapping = tmp_path / "map.csv"
    mapping.write_text("folder,student\nAnaA_1234,ana\n", encoding="utf-8")
    read = roster.read(ours, mapping)
    assert read.find("ana").name == "Ana A" and read.find("ana.a").id == "ana" and read.find("AnaA_1234").id == "ana"
    assert read.find("bob") is None
    canvas = tmp_path / "canvas.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section,00_tiny (4411)\n"
                      "    Points Possible,,,,,6\nDoe, Jane,901,S9,jdoe,Sec 1,\n".replace("Doe, Jane", '"Doe, Jane"'), encoding="utf-8")
    read = roster.read(canvas)
    assert read.source == "canvas" and read.find("jdoe").canvas_id == "901" and read.assignment_column("00_tiny", None) == "00_tiny (4411)"
    bad = tmp_path / "bad.csv"
    bad.write_text("who,what\n", encoding="utf-8")
    with pytest.raises(roster.RosterError, match="no 'student' column"):
        roster.read(bad)
