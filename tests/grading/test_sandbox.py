"""Grading built for untrusted code: each submission runs in its own disposable sandbox (`tfperf_lab.isolation.sandbox`).

One class of submissions of the tiny lesson (tests/tiny_course.py: the same machinery as a real lesson, seconds to
grade), graded once through `tfperf-lab grade`'s path (`batch.grade`, two workers), holds
one hostile answer per way a student tried to get at the grader: reading the hidden tests, the gradebook, other
students and the instructor's environment; writing a manual score; leaving a process behind; exhausting memory,
processes, disk or output; a symlink to the solutions; JSON that is not a notebook; a folder name that is a glob or
an option; HTML that runs in the instructor's browser; text that breaks feedback. The hostile code sits in the
answer cell after a correct answer, so what it fails to do shows as full marks on the correctness cells.
"""

import ast
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from nbgrader.api import Gradebook

from tfperf_lab.grading import batch
from tfperf_lab.isolation import backends
from tfperf_lab.course import WorkFolder
from tfperf_lab.course.config import GradingConfig
from pipeline import COURSE, scores
import tiny_course

pytestmark = [pytest.mark.pipeline, pytest.mark.skipif(backends.Bubblewrap().problem() is not None,
                                                       reason=f"no bubblewrap here: {backends.Bubblewrap().problem()}")]
L01 = COURSE.lesson("01_callable_handles")  # a learner's clone checks a real lesson
LESSON_ID, CORRECT = tiny_course.LESSON_ID, tiny_course.CORRECT
TOKEN = "hub-token-8f1e2d"
MARK = "tfperf-sandbox-test-orphan"


def _spy(course, work: pathlib.Path) -> str:
    """Code that looks for everything a grader must keep from student code and prints what it finds: the graded
    course's solutions and this repository's, the gradebook, a classmate's submission, the work folder, the README."""
    targets = [course.solutions / LESSON_ID / f"{LESSON_ID}.ipynb", L01.source, work / "gradebook.db", work / "submitted" / "victim",
               work, COURSE.readme]
    return (f"import os, pathlib\nfor target in {[str(t) for t in targets]!r}:\n"
            "    print(('LEAK ' if pathlib.Path(target).exists() else 'hidden ') + target)\n"
            f"for folder in {[str(pathlib.Path.home()), str(COURSE.root), str(course.root)]!r}:\n"
            "    print('listing', folder, sorted(os.listdir(folder)) if os.path.isdir(folder) else [])\n"
            "print('LEAK token' if os.environ.get('JUPYTERHUB_API_TOKEN') else 'no token')\n"
            "print('env:', sorted(os.environ))\n")


ORPHAN = (f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)  # {MARK}'],"
          " start_new_session=True)\n")
GRADEBOOK = ("try:\n    from nbgrader.api import Gradebook\n"
             "    with Gradebook('sqlite:///{db}', course_id='tf-performance-lab') as gb:\n"
             f"        for g in gb.find_submission_notebook({LESSON_ID!r}, {LESSON_ID!r}, 'forger').grades:\n"
             "            g.manual_score = g.max_score\n        gb.db.commit()\n    print('FORGED')\n"
             "except Exception as error:\n    print('no gradebook:', type(error).__name__)\n"
             "fast_scale = None  # a wrong answer: every test fails\n")
FORK = ("import os, time\nstarted = 0\ntry:\n    for _ in range(2000):\n        if os.fork() == 0:\n            time.sleep(5)\n"
        "            os._exit(0)\n        started += 1\nexcept OSError as error:\n    print('forks stopped at', started)\n")
FLOOD = "print('y' * (40 * 2**20))\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>' + 'z' * (40 * 2**20) + '</b>'))\n"
DISK = ("written = 0\ntry:\n    with open('big.bin', 'wb') as handle:\n        for _ in range(1024):\n"
        "            handle.write(b'0' * 2**20)\n            written += 1\nexcept OSError as error:\n    print('disk stopped at', written, 'MiB')\n")
XSS = ("from IPython.display import HTML, display\n"
       "display(HTML('<script>alert(\"owned\")</script><img src=x onerror=\"alert(1)\">'))\n")
MARKER_TEXT = "note = '### BEGIN HIDDEN TESTS inside a student string'\nprint(note)\n"


@pytest.fixture(scope="module")
def graded(tiny, tmp_path_factory):
    folder, work = tmp_path_factory.mktemp("hostile-class"), tmp_path_factory.mktemp("work")
    lesson = tiny.lesson(LESSON_ID)
    submissions = {
        "spy": tiny_course.with_code(tiny, _spy(tiny, work)),
        "forger": tiny_course.with_code(tiny, GRADEBOOK.format(db=work / "gradebook.db")),
        "orphan": tiny_course.with_code(tiny, ORPHAN),
        "forker": tiny_course.with_code(tiny, FORK),
        "flood": tiny_course.with_code(tiny, FLOOD),
        "disk": tiny_course.with_code(tiny, DISK),
        "xss": tiny_course.with_code(tiny, XSS),
        "marker": tiny_course.with_code(tiny, MARKER_TEXT),
        "victim": lesson.source_notebook(),
        "*": lesson.source_notebook(),
        "-dash": lesson.source_notebook(),
    }
    for student, nb in submissions.items():
        (folder / student).mkdir()
        (folder / student / f"{LESSON_ID}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    xss = submissions["xss"]
    manual = next(c for c in xss["cells"] if c.get("id") == "why_vectorize")
    manual["source"] = "My answer <script>alert('formgrader')</script> <img src=x onerror=alert(2)>"
    (folder / "xss" / f"{LESSON_ID}.ipynb").write_text(json.dumps(xss), encoding="utf-8")
    (folder / "linker").mkdir()
    (folder / "linker" / f"{LESSON_ID}.ipynb").symlink_to(lesson.source)
    for student, text in {"deep": "[" * 200_000 + "]" * 200_000, "numbers": json.dumps({"cells": [1, 2, 3], "metadata": {}}),
                          "listmeta": json.dumps({"cells": [], "metadata": []})}.items():
        (folder / student).mkdir()
        (folder / student / f"{LESSON_ID}.ipynb").write_text(text, encoding="utf-8")
    os.environ["JUPYTERHUB_API_TOKEN"] = TOKEN  # what a hub gives the instructor's server
    try:
        results = batch.grade(tiny, folder, work=WorkFolder(work), workers=2, progress=False)
    finally:
        os.environ.pop("JUPYTERHUB_API_TOKEN")
    return {r.student: r for r in results}, WorkFolder(work), folder


def _outputs(work: WorkFolder, student: str) -> str:
    """What the student's code printed (stream outputs; a traceback would quote the code itself)."""
    nb = json.loads(work.autograded(student, LESSON_ID).read_text(encoding="utf-8"))
    return "".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def _listing(text: str, folder: pathlib.Path) -> set[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"listing {folder} "))
    return set(ast.literal_eval(line.split(" ", 2)[2]))


def test_student_code_sees_no_solutions_gradebook_other_students_home_or_tokens(graded, tiny):
    results, work, _ = graded
    assert all(scores(results["spy"])[cell] for cell in CORRECT), results["spy"].lines()
    text = _outputs(work, "spy")
    assert "LEAK" not in text and text.count("hidden ") == 6 and "no token" in text, text[:2000]
    assert TOKEN not in text and TOKEN not in work.feedback("spy", LESSON_ID).read_text(encoding="utf-8")
    # of the instructor's home, this repository and the graded course's folder, only the read-only Python environment is there
    for folder in (pathlib.Path.home(), COURSE.root, tiny.root):
        python = {path.relative_to(folder).parts[0] for path in backends._python_paths() if path.is_relative_to(folder)}
        assert _listing(text, folder) <= python, (folder, _listing(text, folder), python)
        assert "solutions" not in _listing(text, folder)


def test_a_manual_score_cannot_be_written_from_a_notebook(graded, tiny):
    results, work, _ = graded
    assert "FORGED" not in _outputs(work, "forger")
    assert results["forger"].score == 0 and [c.score for c in results["forger"].cells if c.kind == "manual"] == [None]
    with Gradebook(work.gradebook_url, course_id=tiny.id) as gradebook:
        grades = gradebook.find_submission_notebook(LESSON_ID, LESSON_ID, "forger").grades
        assert all(g.manual_score is None for g in grades)


def test_no_process_outlives_its_sandbox(graded):
    results, _, _ = graded
    assert all(scores(results["orphan"])[cell] for cell in CORRECT), results["orphan"].lines()
    alive = subprocess.run(["pgrep", "-f", MARK], capture_output=True, text=True).stdout.split()
    assert not alive, f"processes left behind: {alive}"


def test_processes_files_and_outputs_are_limited(graded):
    results, work, _ = graded
    assert "forks stopped at" in _outputs(work, "forker"), results["forker"].lines()
    assert "disk stopped at 256 MiB" in _outputs(work, "disk"), results["disk"].lines()
    for student in ("forker", "disk", "flood"):
        assert all(scores(results[student])[cell] for cell in CORRECT), results[student].lines()
    assert work.autograded("flood", LESSON_ID).stat().st_size < 2 * 2**20
    assert work.feedback("flood", LESSON_ID).stat().st_size < 3 * 2**20
    assert not list(work.sandboxes.glob("*")) if work.sandboxes.exists() else True
    assert sum(p.stat().st_size for p in work.root.rglob("*") if p.is_file()) < 100 * 2**20


def test_a_symlink_to_the_solutions_is_refused(graded):
    results, _, _ = graded
    assert results["linker"].error and "symbolic link" in results["linker"].error and not results["linker"].cells


@pytest.mark.parametrize("student", ["deep", "numbers", "listmeta"])
def test_json_that_is_not_a_notebook_lands_on_its_own_row(graded, student):
    results, work, _ = graded
    assert results[student].error and "not" in results[student].error, results[student].lines()
    rows = work.grades_csv.read_text(encoding="utf-8").splitlines()
    assert any(row.startswith(f"{student},") for row in rows) and any(row.startswith("victim,") for row in rows)


@pytest.mark.parametrize("student", ["*", "-dash"])
def test_unsafe_student_folders_are_refused_and_harm_nobody(graded, student):
    results, _, _ = graded
    assert "not a usable student id" in (results[student].error or ""), results[student].lines()
    assert results["victim"].error is None and results["victim"].score == results["victim"].max_score, results["victim"].lines()


def test_html_in_outputs_and_written_answers_cannot_run(graded):
    results, work, _ = graded
    html = work.feedback("xss", LESSON_ID).read_text(encoding="utf-8")
    assert "<script>alert" not in html and not re.search(r"<img[^>]*onerror", html), "student HTML would run in the feedback"
    assert "&lt;script&gt;" in html
    nb = json.loads(work.autograded("xss", LESSON_ID).read_text(encoding="utf-8"))  # what the formgrader renders
    rendered = json.dumps([c["source"] for c in nb["cells"] if c["cell_type"] == "markdown"]
                          + [o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])])
    assert "<script>" not in rendered and not re.search(r"<img[^>]*onerror", rendered), "student HTML would run in the formgrader"


def test_student_text_with_the_hidden_tests_marker_still_gets_feedback(graded):
    results, work, _ = graded
    assert results["marker"].feedback is not None and work.feedback("marker", LESSON_ID).exists(), results["marker"].lines()
    assert not any("feedback could not" in note for note in results["marker"].notes)


def test_the_csv_says_the_sandbox_was_used_and_no_sandbox_is_stated(graded, tiny, tmp_path):
    results, work, folder = graded
    assert {r.sandbox for r in results.values() if not r.error} == {"bubblewrap"}
    (tmp_path / "one" / "victim").mkdir(parents=True)
    shutil.copy(folder / "victim" / f"{LESSON_ID}.ipynb", tmp_path / "one" / "victim")
    (plain,) = batch.grade(tiny, tmp_path / "one", work=WorkFolder(tmp_path / "w"), config=GradingConfig(backend="none"), progress=False, with_feedback=False)
    assert plain.status == "graded without a sandbox (--no-sandbox)"
    assert "graded without a sandbox" in (tmp_path / "w" / "grades.csv").read_text(encoding="utf-8")


def test_grade_refuses_without_a_sandbox_unless_told(tmp_path, monkeypatch):
    monkeypatch.setattr(backends.Bubblewrap, "problem", lambda self: "bubblewrap is not installed (test)")
    with pytest.raises(backends.SandboxUnavailable, match="--no-sandbox"):
        batch.grade(COURSE, tmp_path, work=WorkFolder(tmp_path / "w"), progress=False)


def test_check_works_in_a_learners_clone_without_solutions(tmp_path):
    clone = tmp_path / "clone"
    for name in ("autograder", "lessons"):
        shutil.copytree(COURSE.root / name, clone / name)
    shutil.copy(COURSE.pyproject, clone / "pyproject.toml")
    mine = tmp_path / f"{L01.id}.ipynb"
    nb = L01.release_notebook()
    reference = {c["id"]: c for c in L01.source_notebook()["cells"]}
    answer = "make_callable_solution"
    for cell in nb["cells"]:
        if cell.get("id") == answer:
            cell["source"] = "".join(line for line in reference[answer]["source"] if "### " not in line)
    mine.write_text(json.dumps(nb), encoding="utf-8")
    done = subprocess.run([str(pathlib.Path(sys.executable).parent / "tfperf-lab"), "check", str(mine)], cwd=clone,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "visible tests only" in done.stdout and "handle_matches_sess_run        2/2" in done.stdout, done.stdout
