"""Broken and dishonest submissions of the tiny lesson, graded through the instructor's path (`grading.grade`).

Every case in hostile.py states its expected outcome; the whole batch must grade without crashing,
give every case a clear report, leave the submitted files untouched, and be resumable.
"""

import hashlib
import os
import pathlib
import re
import stat
import subprocess
import sys
import time

import pytest
from nbgrader.api import Gradebook

from tfperf_lab.grading import batch as grader
from tfperf_lab.course import WorkFolder
from tfperf_lab.course.config import GradingConfig
import hostile
from hostile import CASES, LESSON_ID
from pipeline import scores

pytestmark = pytest.mark.pipeline
BY_NAME = {case.name: case for case in CASES}


def _write(folder: pathlib.Path, case) -> pathlib.Path:
    built = case.build()
    path = folder / case.name / case.filename
    path.parent.mkdir(parents=True)
    path.write_bytes(built if isinstance(built, bytes) else __import__("json").dumps(built).encode())
    return path


def _digest(folder: pathlib.Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def course(tiny):
    hostile.use(tiny)
    return tiny


@pytest.fixture(scope="module")
def batch(course, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    for case in CASES:
        _write(folder, case)
    before = _digest(folder)
    for path in folder.rglob("*"):  # read-only, as collected submissions should be
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    work = tmp_path_factory.mktemp("work")
    began, cwd = time.monotonic(), os.getcwd()
    results = grader.grade(course, folder, work=WorkFolder(work), config=GradingConfig(cell_seconds=20), workers=2, progress=False)
    elapsed = time.monotonic() - began
    assert os.getcwd() == cwd, f"grading left the working directory in {os.getcwd()} (nbgrader's converters chdir in threads)"
    return folder, work, {r.student: r for r in results}, before, elapsed


@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_each_case_gets_its_stated_outcome(batch, course, name):
    case, result = BY_NAME[name], batch[2][name]
    report = "\n".join(result.lines())
    if case.error:
        assert result.error and re.search(case.error, result.error), report
    got = scores(result)
    assert all(got.get(cell) == max_points(course, cell) for cell in case.full), report
    assert all(got.get(cell) == 0 for cell in case.zero), report
    if case.note:
        for expected in case.note.split("|"):
            assert any(expected in note for note in result.notes), report
    if case.name in ("reference", "output_flood", "stderr_noise", "sys_exit"):
        assert not result.notes, report  # an untouched instructor copy raises no tampering notes
    for cell, status in case.status.items():
        assert next(c.status for c in result.cells if c.id == cell) == status, report


def max_points(course, cell_id: str) -> float:
    return next(cell["points"] for cell in course.lesson(LESSON_ID).grade_cells() if cell["id"] == cell_id)


def test_every_case_is_reported_and_listed_in_the_csv(batch):
    folder, work, results, _, _ = batch
    assert set(results) == set(BY_NAME)
    rows = (work / "grades.csv").read_text().splitlines()[1:]
    assert sorted(row.split(",")[0] for row in rows) == sorted(BY_NAME)


def test_grading_never_modifies_a_submitted_file(batch):
    folder, _, _, before, _ = batch
    assert _digest(folder) == before


def test_timed_out_cell_is_named_in_the_report(batch):
    result = batch[2]["infinite_loop"]
    assert any("ran out of time" in note and "scale_rejects_matrices" in note for note in result.notes), result.lines()


def test_regrading_reuses_finished_results_unless_forced(batch, course):
    folder, work, results, _, _ = batch
    began = time.monotonic()
    again = {r.student: r for r in grader.grade(course, folder, work=WorkFolder(work), progress=False)}
    assert time.monotonic() - began < 30  # nothing executed again
    assert {name: scores(r) for name, r in again.items()} == {name: scores(r) for name, r in results.items()}


def test_manual_grades_survive_an_autograde_rerun(batch, course, tmp_path):
    folder, work, _, _, _ = batch
    db = f"sqlite:///{work / 'gradebook.db'}"
    with Gradebook(db, course_id=course.id) as gradebook:
        grade = gradebook.find_grade("why_vectorize", LESSON_ID, LESSON_ID, "exception")
        grade.manual_score = 1.0
        gradebook.db.commit()
    single = tmp_path / "one"
    (single / "exception").mkdir(parents=True)
    (single / "exception" / f"{LESSON_ID}.ipynb").write_bytes((folder / "exception" / f"{LESSON_ID}.ipynb").read_bytes())
    (result,) = grader.grade(course, single, work=WorkFolder(work), force=True, progress=False)
    assert scores(result)["why_vectorize"] == 1.0
    with Gradebook(db, course_id=course.id) as gradebook:
        assert gradebook.find_grade("why_vectorize", LESSON_ID, LESSON_ID, "exception").manual_score == 1.0


def test_a_grading_run_killed_halfway_resumes_without_losing_finished_results(batch, course, tmp_path):
    folder = tmp_path / "class"
    for student in ("first", "second"):
        (folder / student).mkdir(parents=True)
        (folder / student / f"{LESSON_ID}.ipynb").write_bytes((batch[0] / "kernel_crash" / f"{LESSON_ID}.ipynb").read_bytes())
    work = tmp_path / "work"
    tool = str(pathlib.Path(sys.executable).parent / "tfperf-lab")
    # one worker, so that the kill lands between the two submissions (with two, both finish together)
    process = subprocess.Popen([tool, "--course", str(course.root), "grade", str(folder), "--work", str(work), "--workers", "1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    states = work / "state"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(states.rglob("*.json"))) < 1:
        time.sleep(0.5)
    os.killpg(process.pid, 9)
    process.wait()
    finished = {p: p.stat().st_mtime for p in states.rglob("*.json")}
    assert len(finished) == 1, f"the run should have been killed after the first submission: {finished}"
    results = grader.grade(course, folder, work=WorkFolder(work), progress=False)
    assert {p: p.stat().st_mtime for p in finished} == finished  # the finished one was not graded again
    assert len(list(states.rglob("*.json"))) == 2 and all("kernel died" in " ".join(r.notes) for r in results)
