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


@pytest.mark.parametrize("where", ["in the preprocessor", "around the autograde"])
def test_the_graders_own_exception_is_the_machines_and_twice_goes_to_a_person(tiny, tmp_path, monkeypatch, capsys, where):
    """Issue 50 item 9: an exception in the host's code the submission did not cause (here the SystemError CPython 3.11's
    parser raised when two grading threads parsed at once) is a machine-fault row the next plain `grade` grades again,
    never "NOT GRADED" as the notebook's; the same failure on the same file twice is listed for a person."""
    from tfperf_lab.course import skipping
    from tfperf_lab.grading import batch, score, store

    folder, work = tmp_path / "class", tmp_path / "work"
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())

    def broken(*args, **kwargs):
        raise SystemError("AST constructor recursion depth mismatch (before=48, after=47)")

    with monkeypatch.context() as patched:
        patched.setattr(skipping if where == "in the preprocessor" else score,
                        "skippable" if where == "in the preprocessor" else "score", broken)
        code, rows, printed = _grade(tiny, folder, work, capsys)
        assert code == 3, printed
        assert rows["ana"]["status"].startswith(MACHINE) and "SystemError" in rows["ana"]["status"], rows["ana"]
        assert "NOT GRADED:" not in printed and store.TWICE not in printed, printed
        assert not WorkFolder(work).state("ana", tiny_course.LESSON_ID).exists()

        code, rows, printed = _grade(tiny, folder, work, capsys)  # the same file, the same failure: a person should look
        assert code == 3, printed
        assert store.TWICE in rows["ana"]["status"] and "SystemError" in rows["ana"]["status"], rows["ana"]
        assert store.TWICE in printed
        assert cli.main(["--course", str(tiny.root), "review", str(work)]) == 0
        listed = capsys.readouterr().out
        assert store.TWICE in listed and "00_tiny (ana)" in listed, listed

    code, rows, printed = _grade(tiny, folder, work, capsys)  # the grader mended: the plain command grades it, in full
    assert code == 0, printed
    assert rows["ana"]["status"] == "graded" and float(rows["ana"]["score"]) == float(rows["ana"]["max_score"]), rows["ana"]
    assert not WorkFolder(work).faults("ana", tiny_course.LESSON_ID).exists()
    assert cli.main(["--course", str(tiny.root), "review", str(work)]) == 0
    assert store.TWICE not in capsys.readouterr().out


def test_a_sandbox_that_cannot_start_is_the_machines_fault(tiny, tmp_path, monkeypatch, capsys):
    """A sandbox that fails before the runner starts (bubblewrap refused by the machine: "Can't mount proc" in some
    containers) ran nothing of the learner's: the machine's row, graded again once the machine is fixed."""
    from tfperf_lab.isolation import backends

    folder, work = tmp_path / "class", tmp_path / "work"
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    real = backends.Bubblewrap.command

    def refused(self, job, inner, env, data, binds=()):
        return ["sh", "-c", "echo 'bwrap: Can'\"'\"'t mount proc on /newroot/proc: Operation not permitted' >&2; exit 1"]

    with monkeypatch.context() as broken:
        broken.setattr(backends.Bubblewrap, "command", refused)
        code, rows, printed = _grade(tiny, folder, work, capsys)
    assert code == 3, printed
    assert rows["ana"]["status"].startswith(MACHINE) and "could not start" in rows["ana"]["status"], rows["ana"]
    assert backends.Bubblewrap.command is real
    code, rows, printed = _grade(tiny, folder, work, capsys)
    assert code == 0 and rows["ana"]["status"] == "graded", rows["ana"]
