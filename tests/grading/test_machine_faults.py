"""Issue 37: a fault of the grading machine is never written as the student's. A machine that cannot see the course, or
cannot freeze a sandbox to time its speed checks, gives a row that says "the grading machine's fault", saves nothing
as finished, and makes `tfperf-lab grade` exit non-zero; the same plain command, once the machine is fixed, grades
those rows and only those. Graded on the tiny lesson (tests/tiny_course.py)."""

import csv

import pytest

from tfperf_lab import cli
from tfperf_lab.course import CourseNotFound, WorkFolder
from tfperf_lab.grading import job
from tfperf_lab.grading.results import MACHINE
from tfperf_lab.speed import judge
from pipeline import write_submission
import tiny_course

pytestmark = pytest.mark.pipeline


def _grade(tiny, folder, work, capsys) -> tuple[int, dict, str]:
    code = cli.main(["--course", str(tiny.root), "grade", str(folder), "--work", str(work), "--workers", "1"])
    printed = capsys.readouterr()
    with (work / "grades.csv").open(encoding="utf-8") as handle:
        return code, {row["student"]: row for row in csv.DictReader(handle)}, printed.out + printed.err


@pytest.mark.parametrize("fault", ["no course on the worker", "no freezer"])
def test_a_machine_fault_is_the_machines_row_exits_non_zero_and_the_next_plain_grade_grades_it(tiny, tmp_path, monkeypatch, capsys, fault):
    folder, work = tmp_path / "class", tmp_path / "work"
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    with monkeypatch.context() as broken:
        if fault == "no course on the worker":
            class Elsewhere:  # what `run_job` finds on a worker started where the course is not
                @staticmethod
                def find(start=None):
                    raise CourseNotFound(f"no TF Performance Lab course in {start} or its parents")
            broken.setattr(job, "Course", Elsewhere)
        else:
            broken.setattr(judge.Judge, "cannot_freeze", property(lambda self: "freezer: no cgroup freezer holds here",
                                                                  lambda self, value: None), raising=False)
        code, rows, printed = _grade(tiny, folder, work, capsys)
    assert code == 3, printed
    assert rows["ana"]["status"].startswith(MACHINE), rows["ana"]
    assert ("CourseNotFound" if fault.startswith("no course") else "cannot freeze") in rows["ana"]["status"], rows["ana"]
    assert "not graded by the grading machine's fault" in printed
    assert not WorkFolder(work).state("ana", tiny_course.LESSON_ID).exists(), "a machine's fault was kept as finished"

    code, rows, printed = _grade(tiny, folder, work, capsys)  # the machine fixed: the same command
    assert code == 0, printed
    assert rows["ana"]["status"] == "graded" and float(rows["ana"]["score"]) == float(rows["ana"]["max_score"]), rows["ana"]
    assert WorkFolder(work).state("ana", tiny_course.LESSON_ID).exists()
