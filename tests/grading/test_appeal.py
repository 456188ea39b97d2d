"""Issue 37: an appeal judges a graded submission's speed checks N more times and writes what each time measured (every
verdict, its raw rounds, the machine's state), changing no grade. Issue 50 item 10: an appeal a student can read: per
check, the hint, both timed sides, the structural test beside it, the machine's state of the original grading and of
each run, and the profile grading really runs, under a one-paragraph summary. Graded on the tiny lesson
(tests/tiny_course.py): ana hands in the reference answer, bo a correct one that loops in Python (slow, and its structural
test fails)."""

import json
import shutil

import pytest

from tfperf.units import format_seconds
from tfperf_lab.course import WorkFolder
from tfperf_lab.grading import appeal, batch
from pipeline import write_submission
import tiny_course

pytestmark = pytest.mark.pipeline

STRUCTURAL = "scale_has_no_loop"


@pytest.fixture(scope="module")
def graded(tiny, tmp_path_factory):
    """ana's and bo's submissions of the tiny lesson, graded once as a class: (work folder, the lesson)."""
    root = tmp_path_factory.mktemp("appeal")
    folder, work = root / "class", WorkFolder(root / "work")
    lesson = tiny.lesson(tiny_course.LESSON_ID)
    write_submission(folder, "ana", lesson, lesson.source_notebook())
    write_submission(folder, "bo", lesson, tiny_course.append_to_answer(lesson.source_notebook(), tiny_course.LOOPING))
    batch.grade(tiny, folder, work=work, with_feedback=False, progress=False)
    return work, lesson


def _bundle(folder):
    return (json.loads((folder / "appeal.json").read_text(encoding="utf-8")),
            (folder / "appeal.md").read_text(encoding="utf-8"))


def test_an_appeal_regrades_n_times_keeps_every_round_and_changes_no_grade(tiny, graded):
    work, lesson = graded
    csv_before = work.grades_csv.read_text(encoding="utf-8")
    said = []
    bundle, page = _bundle(appeal.regrade(tiny, work, "ana", tiny_course.LESSON_ID, runs=2, progress=said.append))
    (check,) = {name for names in lesson.speed_checks().values() for name in names}
    assert [v["check"] for v in bundle["original"]["verdicts"]] == [check]
    assert [run["run"] for run in bundle["regraded"]] == [1, 2] and len(said) == 2
    for run in bundle["regraded"]:
        (verdict,) = run["verdicts"]
        assert verdict["check"] == check and verdict["passed"] and verdict["speedup"] >= verdict["threshold"]
        assert len(verdict["baseline_seconds"]) == len(verdict["candidate_seconds"]) == verdict["rounds"] >= 2
        assert verdict["rounds_dropped"] == len(verdict["dropped_rounds"])
        assert run["machine_before"]["cpu_count"] and run["machine_before"]["load_average"] is not None
        assert [row["status"] for row in run["tests"][check]] == ["passed", "passed", "passed"]
    assert page.splitlines()[2].startswith(f"**{check}**: the check passed in 2 of 2 new run(s)")
    assert "originally it passed" in page and f"the structural test {STRUCTURAL} passed originally and in every new run" in page
    assert "verdict: the check was paid originally" in page and f"## {check}" in page
    assert work.grades_csv.read_text(encoding="utf-8") == csv_before, "an appeal changed a grade"


def test_an_appeal_shows_the_hint_both_sides_the_structural_test_the_machine_and_the_profile(tiny, graded, monkeypatch):
    work, _ = graded
    monkeypatch.setenv("TFPERF_PROFILE", "full")  # whoever runs the appeal: grading runs the reduced profile all the same
    bundle, page = _bundle(appeal.regrade(tiny, work, "bo", tiny_course.LESSON_ID, runs=1, progress=None))
    check = tiny_course.SPEED_CHECK
    first, (run,) = bundle["original"], bundle["regraded"]
    # the hint, from the instructor's test cell
    assert bundle["checks"][check] == {"hint": "no Python loop", "cell": "scale_is_faster", "structural": [STRUCTURAL],
                                       "outputs": ["scale_matches"]}
    assert 'Hint it gives a learner when it fails: "no Python loop"' in page
    # both timed sides of the original verdict and the new run's: labels, medians, rounds kept and dropped
    for grading, row in ((first, "| original | fail |"), (run, "| run 1 | fail |")):
        (verdict,) = grading["verdicts"]
        assert not verdict["passed"] and verdict["speedup"] < verdict["threshold"] == 3.0
        assert verdict["baseline"]["label"] == "Python loop" and verdict["candidate"]["label"] == "your fast_scale"
        line = next(line for line in page.splitlines() if line.startswith(row))
        for side in ("baseline", "candidate"):
            assert verdict[side]["median"] > 0 and verdict[side]["calls_per_round"] >= 1
            assert format_seconds(verdict[side]["median"]) in line
        assert f"{verdict['rounds']} kept, {verdict['rounds_dropped']} dropped" in line
    assert "| Python loop (baseline), median per call | your fast_scale (answer), median per call |" in page
    # the structural test beside it, and the speed cell's own message (which carries the hint the learner saw)
    for grading in (first, run):
        tests = {row["cell"]: row for row in grading["tests"][check]}
        assert tests[STRUCTURAL]["role"] == "structural test" and tests[STRUCTURAL]["status"] == "failed"
        assert "fast_scale loops in Python" in tests[STRUCTURAL]["message"]
        assert tests["scale_is_faster"]["status"] == "failed" and "Hint: no Python loop" in tests["scale_is_faster"]["message"]
        assert tests["scale_matches"]["status"] == "passed"
    summary = page.split("\n\n")[1]
    assert summary.startswith(f"**{check}**: the check passed in 0 of 1 new run(s)")
    assert "originally it failed because its measured speedup" in summary and "the baseline (Python loop) took" in summary
    assert f"the structural test {STRUCTURAL} failed originally (fast_scale loops in Python) and failed in 1 of 1" in summary
    assert "verdict: the failure stands" in summary
    # the machine's state: the original grading's (recorded with its verdict) and each run's, before and after
    assert first["machine_note"] is None and first["machine"]["machine"]["cores"] >= 1
    assert first["machine"]["machine"]["load1"] is not None and first["machine"]["at"]
    assert first["verdicts"][0]["machine"] == first["machine"]["machine"]
    assert run["machine_before"]["machine"]["load1"] is not None and run["machine_after"]["machine"]["cores"] >= 1
    assert run["verdicts"][0]["machine"]["load1"] is not None
    assert "| original (during its speed check) | reduced |" in page and "| run 1 | reduced |" in page
    assert "The machine during the original grading's check: load" in summary
    # the profile grading runs, not this process's
    assert bundle["profile"] == first["profile"] == run["profile"] == "reduced"
    assert "profile" not in run["machine_before"] and "profile" not in run["machine_after"]
    assert "ran the reduced profile" in summary and "full" not in page


def test_an_appeal_of_a_grading_recorded_before_the_machine_state_says_so(tiny, graded, tmp_path):
    """A result graded before the records kept the machine's state and the dropped rounds still loads, and its appeal
    says what is not recorded rather than guessing."""
    work, _ = graded
    old = WorkFolder(tmp_path / "work")
    shutil.copytree(work.root / "state", old.root / "state")
    path = old.state("bo", tiny_course.LESSON_ID)
    stored = json.loads(path.read_text(encoding="utf-8"))
    for record in stored["result"]["measurements"]:
        for key in ("environment", "rule", "dropped", "time"):
            record.pop(key, None)
        for side in ("baseline", "candidate"):
            record[side].pop("metadata", None)
    path.write_text(json.dumps(stored), encoding="utf-8")
    first = appeal.original(tiny, old, "bo", tiny_course.LESSON_ID)
    (verdict,) = first["verdicts"]
    assert verdict["machine"] is None and verdict["rounds_dropped"] is None and verdict["baseline"]["median"] > 0
    assert first["machine"] is None and first["machine_note"] == appeal.NOT_RECORDED and first["profile"] == "reduced"
    page = appeal.summary({"student": "bo", "lesson": tiny_course.LESSON_ID, "runs": 0, "profile": first["profile"],
                           "checks": {}, "original": first, "regraded": []})
    assert "not recorded for the original grading" in page and "dropped: not recorded" in page
    assert f"| original | reduced | {appeal.NOT_RECORDED} |" in page


def test_grading_runs_the_reduced_profile_whatever_the_appeal_process_runs(monkeypatch):
    monkeypatch.setenv("TFPERF_PROFILE", "full")
    assert appeal.graded_profile() == "reduced"


def test_an_appeal_of_nothing_graded_or_of_an_unknown_check_says_so(tiny, tmp_path):
    work = WorkFolder(tmp_path / "work")
    with pytest.raises(appeal.AppealError, match="grade the class first"):
        appeal.regrade(tiny, work, "nobody", tiny_course.LESSON_ID, runs=1)
    with pytest.raises(appeal.AppealError, match="at least 1"):
        appeal.regrade(tiny, work, "nobody", tiny_course.LESSON_ID, runs=0)
