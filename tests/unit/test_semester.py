"""Issue 50 items 2 and 3: the late policy decided once (`semester.assess`), the roster read from its CSV, a Canvas export
and a mapping, and `store.rows` completing a class with the roster. The whole semester, graded, is
tests/grading/test_semester_walk.py."""

import datetime

import pytest

from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import roster, semester, store
from tfperf_lab.grading.results import CellResult, SubmissionResult

UTC = datetime.timezone.utc


def test_assess_decides_each_policy_once():
    def result(when):
        return SubmissionResult("ana", "L", cells=[CellResult("a", 10.0, 10.0, "auto", "passed")], submitted_at=when)

    term = semester.Semester(due={"L": datetime.datetime(2027, 2, 8, 23, 59, tzinfo=UTC)},
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


def test_rows_give_every_roster_student_a_row_and_note_a_stranger(tmp_path):
    class Lesson:
        id = "L"

        @staticmethod
        def grade_cells():
            return [{"id": "a", "points": 10.0, "kind": "auto"}]

    class Course:
        lessons = (Lesson,)

        @staticmethod
        def lesson(lesson_id):
            return Lesson

    listed = tmp_path / "roster.csv"
    listed.write_text("student,name\nana,Ana\nben,Ben\n", encoding="utf-8")
    graded = [SubmissionResult("ana", "L", cells=[CellResult("a", 10.0, 10.0, "auto", "passed")], submitted_at="2027-02-10T12:00:00+00:00"),
              SubmissionResult("eve", "L", cells=[CellResult("a", 10.0, 10.0, "auto", "passed")])]
    term = semester.Semester(due={"L": datetime.datetime(2027, 2, 8, 23, 59, tzinfo=UTC)}, policy="per-day", per_day=0.1)
    rows = {r.student: r for r in store.rows(WorkFolder(tmp_path / "work"), Course, given=graded, roster=roster.read(listed),
                                             semester=term)}
    assert sorted(rows) == ["ana", "ben", "eve"]
    assert rows["ana"].late["days"] == 2 and rows["ana"].score == 8.0
    assert not rows["ben"].submitted and rows["ben"].status == "not submitted" and rows["ben"].max_score == 10.0 and rows["ben"].score == 0
    assert "eve is not on the roster" in rows["eve"].notes
