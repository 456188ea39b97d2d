"""Issue 50 item 6: grades back where they live, with the glue shipped and run, on the tiny lesson (tests/tiny_course.py).

Each platform's glue runs in the platform's own directory layout: a scratch folder bound at ``/autograder`` (Gradescope)
or ``/grade`` (PrairieLearn) by bubblewrap, the rest of this machine read-only and ``/tmp`` empty, as in the platform's
container. Gradescope's ``run_autograder`` is the one of the zip ``tfperf-lab export --to gradescope-autograder`` builds,
unpacked in ``/autograder/source`` (what its ``setup.sh`` installs stands in as ``/autograder/venv``: this test
environment); PrairieLearn's entrypoint is ``python -m tfperf_lab.grading.exports.prairielearn grade``. Inside, the
course's own sandbox runs where bubblewrap can nest, else the glue grades without it and says so in the results.
Then a class of three on a Canvas roster: every roster student has a row, and a 0 where nothing came."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

import tiny_course
from pipeline import write_submission
from tfperf_lab import cli
from tfperf_lab.course import Course, WorkFolder
from tfperf_lab.grading import exports
from tfperf_lab.grading.exports import gradescope, prairielearn
from tfperf_lab.isolation import backends

ROOT = pathlib.Path(__file__).resolve().parents[2]
LESSON = tiny_course.LESSON_ID
NAMES = {"fast_scale gives 3v - 1.", "fast_scale refuses a matrix.", "fast_scale has no Python loop.",
         "fast_scale is at least 3x faster than the loop."}  # the test cells' docstrings: the tests' names
ENDLESS = "while True:\n    pass\n"

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]


def platform(mount: str, scratch: pathlib.Path, command: list[str], *, chdir: str, binds: dict[str, pathlib.Path] = {},
             cgroups: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``command`` as a platform's container would: ``scratch`` at ``mount`` (plus ``binds``, writable), this
    machine's folders read-only, an empty /tmp, HOME in it. ``cgroups``: the container may make cgroups (writable
    /sys/fs/cgroup, as a container given its own cgroup: what the grader's speed checks need, to freeze the learner's
    side while the reference is timed); else read-only, as in a plain unprivileged container."""
    args = ["bwrap", "--tmpfs", "/"]
    for entry in sorted(pathlib.Path("/").iterdir()):
        if entry.name in ("proc", "dev", "tmp", "sys") or entry.name.startswith("."):
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry), str(entry)]
        elif entry.is_dir():
            args += ["--ro-bind", str(entry), str(entry)]
    args += ["--ro-bind", "/sys", "/sys", *(["--bind", "/sys/fs/cgroup", "/sys/fs/cgroup"] if cgroups else []), "--dev", "/dev",
             "--proc", "/proc", "--tmpfs", "/tmp", "--setenv", "HOME", "/tmp", "--unsetenv", "TFPERF_COURSE",
             "--bind", str(scratch), mount]
    for inside, outside in binds.items():
        args += ["--bind", str(outside), inside]
    args += ["--die-with-parent", "--chdir", chdir, "--", *command]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def isolation_said(output: str, sandbox: str | None) -> None:
    """The results say how the notebook was isolated: the course's sandbox, or the container only (and why)."""
    if sandbox == "none":
        assert "graded without the course's sandbox" in output, output
    else:
        assert "graded without the course's sandbox" not in output, output


# -------------------------------------------------------------------------------------------------------------- Gradescope


@pytest.fixture(scope="module")
def autograder(tiny, tmp_path_factory) -> pathlib.Path:
    """``tfperf-lab export --to gradescope-autograder`` of the tiny course (with this repository's package sources)."""
    root = tmp_path_factory.mktemp("gradescope-course")
    course = root / "course"
    shutil.copytree(tiny.root, course)
    for name in ("tfperf", "tfperf_lab"):
        shutil.copytree(ROOT / name, course / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, course / name)
    (course / "autograder" / "roster.csv").write_text("student\nana\n", encoding="utf-8")
    out = root / "out"
    assert cli.main(["--course", str(course), "export", str(root / "work"), "--to", "gradescope-autograder", "--out", str(out)]) == 0
    return out / "gradescope-autograder" / "autograder.zip"


def run_autograder(zip_path: pathlib.Path, scratch: pathlib.Path, notebook: dict) -> tuple[dict, subprocess.CompletedProcess]:
    """Gradescope's layout in ``scratch``: the zip unpacked in source/, run_autograder copied beside it (with the zip's
    mode), the submission in submission/; then /autograder/run_autograder, from /autograder, as Gradescope runs it."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(scratch / "source")
        mode = archive.getinfo("run_autograder").external_attr >> 16
    shutil.copy(scratch / "source" / "run_autograder", scratch / "run_autograder")
    (scratch / "run_autograder").chmod(mode & 0o777)
    (scratch / "venv").symlink_to(sys.prefix)  # what setup.sh installs: this test environment
    (scratch / "submission").mkdir()
    (scratch / "submission" / f"{LESSON}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (scratch / "results").mkdir()
    done = platform("/autograder", scratch, ["/autograder/run_autograder"], chdir="/autograder")
    results = scratch / "results" / "results.json"
    assert results.exists(), f"no results.json:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert gradescope.problems(data) == [], data
    return data, done


def test_gradescope_grades_a_reference_submission_in_its_layout(tiny, autograder, tmp_path):
    began = time.monotonic()
    with zipfile.ZipFile(autograder) as archive:
        assert "autograder/roster.csv" not in archive.namelist() and "setup.sh" in archive.namelist()
    data, done = run_autograder(autograder, tmp_path / "scratch", tiny.lesson(LESSON).source_notebook())
    report = json.dumps(data, indent=1) + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    assert data["score"] == 6.0 and data["extra_data"]["lesson"] == LESSON, report
    assert {test["name"] for test in data["tests"]} == NAMES, report  # what each test checks, not its grade id
    assert all(test["status"] == "passed" and test["score"] == test["max_score"] for test in data["tests"]), report
    assert [test["number"] for test in data["tests"]] == ["1", "2", "3", "4"]
    assert data["leaderboard"] == [{"name": tiny_course.SPEED_CHECK, "value": data["leaderboard"][0]["value"], "order": "desc"}]
    assert data["leaderboard"][0]["value"] >= 3.0 and data["execution_time"] >= 1
    assert {test["visibility"] for test in data["tests"]} == {"visible", "after_published"}  # the hidden test's cell: later
    isolation_said(data["output"], data["extra_data"]["sandbox"])
    assert "6 / 6 points" in done.stdout  # the instructor's stdout has the per-cell report
    print(f"Gradescope, reference: {time.monotonic() - began:.1f} s, sandbox {data['extra_data']['sandbox']}")


def test_gradescope_grades_a_blank_submission_with_failed_tests_that_say_why(tiny, autograder, tmp_path):
    began = time.monotonic()
    data, done = run_autograder(autograder, tmp_path / "scratch", tiny.lesson(LESSON).release_notebook())
    report = json.dumps(data, indent=1) + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
    failed = [test for test in data["tests"] if test["status"] == "failed"]
    assert data["score"] < 6.0 and failed, report
    assert all(test["score"] == 0 and test["output"].split(":")[0] in ("failed", "error", "not run") for test in failed), report
    assert any("NotImplementedError" in test["output"] for test in failed), report
    assert "leaderboard" not in data and "Traceback" not in json.dumps(data), report
    print(f"Gradescope, blank: {time.monotonic() - began:.1f} s")


# ------------------------------------------------------------------------------------------------------------ PrairieLearn


def external_grader(tiny, tmp_path, files: dict[str, str | dict], *seconds: str,
                    cgroups: bool = True) -> tuple[dict, subprocess.CompletedProcess]:
    """PrairieLearn's layout in a scratch folder at /grade (the files in student/, data/data.json), the course in the
    grader's image (a copy at /course); the entrypoint runs from /grade."""
    scratch, course = tmp_path / "grade", tmp_path / "course"
    shutil.copytree(tiny.root, course)
    (scratch / "student").mkdir(parents=True)
    for name, content in files.items():
        (scratch / "student" / name).write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    (scratch / "data").mkdir()
    (scratch / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}), encoding="utf-8")
    done = platform("/grade", scratch, [sys.executable, "-m", "tfperf_lab.grading.exports.prairielearn", "grade",
                                        "--course", "/course", *seconds], chdir="/grade", binds={"/course": course},
                    cgroups=cgroups)
    results = scratch / "results" / "results.json"
    assert results.exists(), f"no results.json:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert prairielearn.problems(data) == [], data
    return data, done


def test_prairielearn_grades_a_reference_submission_in_its_layout(tiny, tmp_path):
    began = time.monotonic()
    data, done = external_grader(tiny, tmp_path, {f"{LESSON}.ipynb": tiny.lesson(LESSON).source_notebook()})
    report = json.dumps(data, indent=1) + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 0 and data["gradable"] is True and data["score"] == 1.0, report
    assert {test["name"] for test in data["tests"]} == NAMES, report
    assert all(test["points"] == test["max_points"] > 0 for test in data["tests"]), report
    assert data["message"].startswith("A tiny lesson (00_tiny): 6 / 6 points"), report
    isolation_said(data["output"], "none" if "graded without the course's sandbox" in data["output"] else "bubblewrap")
    print(f"PrairieLearn, reference: {time.monotonic() - began:.1f} s")


def test_prairielearn_a_timeout_is_a_graded_result_with_a_failed_test(tiny, tmp_path):
    """An endless loop in the answer: the notebook's limit (15 s here) stops it; the result is gradable (an attempt
    used, a score of what it earned) with failed tests saying why, never "not gradable"."""
    began = time.monotonic()
    notebook = tiny_course.with_code(tiny, ENDLESS)
    data, done = external_grader(tiny, tmp_path, {f"{LESSON}.ipynb": notebook}, "--notebook-seconds", "15")
    report = json.dumps(data, indent=1) + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
    assert data["gradable"] is True and data["score"] == 0.0, report
    stopped = [test for test in data["tests"] if test["name"] == prairielearn.STOPPED]
    assert stopped and "time limit" in stopped[0]["message"] and "not run: not run" not in json.dumps(data), report
    assert all(test["points"] == 0 and test["message"] for test in data["tests"]), report
    assert {test["name"] for test in data["tests"]} == NAMES | {prairielearn.STOPPED}, report
    assert time.monotonic() - began < 60
    print(f"PrairieLearn, timeout: {time.monotonic() - began:.1f} s")


def test_prairielearn_a_file_that_is_no_notebook_is_not_gradable(tiny, tmp_path):
    data, done = external_grader(tiny, tmp_path, {"answer.py": "print('hello')\n"})
    assert data["gradable"] is False and data["tests"] == [], data
    assert "no notebook (.ipynb) was handed in (found: answer.py)" in data["format_errors"][0], data


# ----------------------------------------------------------------------------------------------------------------- Canvas


def test_canvas_export_has_a_row_for_every_roster_student_and_a_0_where_nothing_came(tiny, tmp_path, capsys):
    """alice hands in the reference (and gets 1 point by hand for her written answer), bob a file that is no notebook
    from a folder named by the LMS (the mapping names him), carol nothing."""
    began = time.monotonic()
    folder, work = tmp_path / "class", tmp_path / "work"
    write_submission(folder, "alice", tiny.lesson(LESSON), tiny.lesson(LESSON).source_notebook())
    (folder / "BobB_77").mkdir(parents=True)
    (folder / "BobB_77" / f"{LESSON}.ipynb").write_text("this is not a notebook", encoding="utf-8")
    roster = tmp_path / "canvas-gradebook.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,A tiny lesson (5150)\n"
                      "    Points Possible,,,,,7\n"
                      '"Liddell, Alice",201,S-1,alice,Sec 1,\n"Builder, Bob",202,S-2,bob,Sec 1,\n"Carroll, Carol",203,S-3,carol,Sec 2,\n',
                      encoding="utf-8")
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("folder,student\nBobB_77,bob\n", encoding="utf-8")
    where = ["--roster", str(roster), "--mapping", str(mapping)]
    assert cli.main(["--course", str(tiny.root), "grade", str(folder), "--work", str(work), "--workers", "1", *where]) == 0, \
        capsys.readouterr()
    from nbgrader.api import Gradebook

    with Gradebook(WorkFolder(work).gradebook_url, course_id=tiny.id) as gradebook:  # a person grades the written answer
        gradebook.find_grade("why_vectorize", LESSON, LESSON, "alice").manual_score = 1.0
        gradebook.db.commit()
    capsys.readouterr()
    assert cli.main(["--course", str(tiny.root), "export", str(work), "--to", "canvas", *where]) == 0
    said = capsys.readouterr().out
    with (work / "exports" / "canvas" / "grades.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    state = json.loads(WorkFolder(work).state("alice", LESSON).read_text(encoding="utf-8"))["result"]
    alice = sum(cell["score"] or 0 for cell in state["cells"] if cell["kind"] == "auto")
    assert rows[:2] == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "A tiny lesson (5150)"],
                        ["Points Possible", "", "", "", "", "7"]], rows
    assert rows[2:] == [["Liddell, Alice", "201", "S-1", "alice", "Sec 1", exports.number(alice + 1.0)],  # 1 by hand
                        ["Builder, Bob", "202", "S-2", "bob", "Sec 1", "0"],  # refused: 0
                        ["Carroll, Carol", "203", "S-3", "carol", "Sec 2", "0"]], (rows, said)  # nothing came: 0
    assert alice > 0 and f"nothing handed in: 0 for carol's {LESSON}" in said and "BobB_77's" not in said, said
    assert "not on the roster" not in said, said
    print(f"Canvas, a class of three: {time.monotonic() - began:.1f} s")


def test_prairielearn_a_container_that_cannot_time_speed_checks_costs_the_student_no_attempt(tiny, tmp_path):
    """No writable cgroup (a plain unprivileged container): the grader cannot freeze the learner's side while it times
    the reference, so it measures no speed check; that is the grading machine's fault, never the student's: "not
    gradable" (no attempt used), saying why, for the instructor to give the grader's image its cgroup."""
    began = time.monotonic()
    data, done = external_grader(tiny, tmp_path, {f"{LESSON}.ipynb": tiny.lesson(LESSON).source_notebook()}, cgroups=False)
    report = json.dumps(data, indent=1) + "\n" + done.stdout[-2000:] + done.stderr[-2000:]
    assert data["gradable"] is False and data["score"] == 0.0, report
    assert "grading machine" in data["format_errors"][0] and "freeze" in data["format_errors"][0], report
    print(f"PrairieLearn, no cgroups: {time.monotonic() - began:.1f} s")
