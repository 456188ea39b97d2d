"""Issue 37: an appeal judges a graded submission's speed checks N more times and writes what each time measured (every
verdict, its raw rounds, the machine's state), changing no grade. Graded on the tiny lesson (tests/tiny_course.py)."""

import json

import pytest

from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import appeal, batch
from pipeline import write_submission
import tiny_course

pytestmark = pytest.mark.pipeline


def test_an_appeal_regrades_n_times_keeps_every_round_and_changes_no_grade(tiny, tmp_path):
    folder, work = tmp_path / "class", WorkFolder(tmp_path / "work")
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    batch.grade(tiny, folder, work=work, with_feedback=False, progress=False)
    csv_before = work.grades_csv.read_text(encoding="utf-8")
    said = []
    bundle_folder = appeal.regrade(tiny, work, "ana", tiny_course.LESSON_ID, runs=2, progress=said.append)
    bundle = json.loads((bundle_folder / "appeal.json").read_text(encoding="utf-8"))
    (check,) = {name for names in lesson.speed_checks().values() for name in names}
    assert [v["check"] for v in bundle["original"]["verdicts"]] == [check]
    assert [run["run"] for run in bundle["regraded"]] == [1, 2] and len(said) == 2
    for run in bundle["regraded"]:
        (verdict,) = run["verdicts"]
        assert verdict["check"] == check and verdict["passed"] and verdict["speedup"] >= verdict["threshold"]
        assert len(verdict["baseline_seconds"]) == len(verdict["candidate_seconds"]) == verdict["rounds"] >= 2
        assert run["machine_before"]["cpu_count"] and run["machine_before"]["load_average"] is not None
    page = (bundle_folder / "appeal.md").read_text(encoding="utf-8")
    assert f"| {check} |" in page and "| 2 of 2 |" in page
    assert work.grades_csv.read_text(encoding="utf-8") == csv_before, "an appeal changed a grade"


def test_an_appeal_of_nothing_graded_or_of_an_unknown_check_says_so(tiny, tmp_path):
    work = WorkFolder(tmp_path / "work")
    with pytest.raises(appeal.AppealError, match="grade the class first"):
        appeal.regrade(tiny, work, "nobody", tiny_course.LESSON_ID, runs=1)
    with pytest.raises(appeal.AppealError, match="at least 1"):
        appeal.regrade(tiny, work, "nobody", tiny_course.LESSON_ID, runs=0)
