"""A JupyterHub classroom through nbgrader's exchange, end to end, in a temporary exchange folder.

The instructor releases lesson 01; two simulated students (own home, own Jupyter folders, own
student config) fetch it; alice submits the reference answers typed into her copy, bob submits the
release untouched; the instructor collects, autogrades (this course's grader, two workers as `tfperf-lab grade`
has), generates and releases feedback; each student fetches feedback. Two lesson-01 gradings in all, side by side.
"""

import concurrent.futures
import hashlib
import json
import re

import pytest

from tfperf_lab.grading import exchange
from tfperf_lab.course import notebook, WorkFolder
from pipeline import COURSE, hidden_lines, leaks

pytestmark = pytest.mark.pipeline
LESSON = COURSE.lesson("01_callable_handles")
COURSE_ID = "tfperf-hub-test"  # not the default id: the hub's course id reaches every step


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _answer_from_solutions(path) -> None:
    """What a student who solved everything submits: their fetched copy with the reference answers typed in."""
    answers = {cell["id"]: cell for cell in LESSON.source_notebook()["cells"]
               if cell.get("metadata", {}).get("nbgrader", {}).get("solution")}
    fetched = notebook.read(path)
    typed = 0
    for cell in fetched["cells"]:
        if cell.get("id") in answers:
            lines = "".join(answers[cell["id"]]["source"]).splitlines(keepends=True)
            cell["source"] = "".join(line for line in lines if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
            typed += 1
    assert typed == len(answers) > 0
    path.write_text(json.dumps(fetched, indent=1), encoding="utf-8")


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    base = tmp_path_factory.mktemp("hub")
    root = exchange.make_exchange_root(base / "exchange")
    instructor = exchange.Instructor(COURSE, root, WorkFolder(base / "instructor-work"), course_id=COURSE_ID, check_owner=False)
    students = {name: exchange.Student(name, base / "home" / name, root, COURSE_ID).setup() for name in ("alice", "bob")}

    def each_student(step: str) -> dict:  # the two students act at the same time, as in a classroom
        with concurrent.futures.ThreadPoolExecutor(len(students)) as pool:
            return dict(zip(students, pool.map(lambda student: getattr(student, step)(LESSON.id), students.values())))

    instructor.release([LESSON.id])
    fetched = each_student("fetch")
    fetched_release = notebook.read(fetched["bob"])
    _answer_from_solutions(fetched["alice"])
    submitted = {name: _sha(path) for name, path in fetched.items()}
    each_student("submit")

    collected = instructor.collect(LESSON.id)
    results = {result.student: result for result in instructor.autograde(LESSON.id, collected)}
    released = instructor.return_feedback(LESSON.id, sorted(results))
    received = each_student("fetch_feedback")
    return {"root": root, "instructor": instructor, "students": students, "fetched": fetched, "fetched_release": fetched_release,
            "submitted": submitted, "collected": collected, "results": results, "released": released, "received": received}


def test_release_reaches_students_without_solutions_or_hidden_tests(classroom):
    outbound = classroom["root"] / COURSE_ID / "outbound" / LESSON.id / f"{LESSON.id}.ipynb"
    assert notebook.read(outbound) == classroom["fetched_release"] == notebook.read(LESSON.release)
    text = json.dumps(classroom["fetched_release"])
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert not [line for line in hidden_lines(LESSON) if json.dumps(line)[1:-1] in text]


def test_exchange_folders_keep_students_apart(classroom):
    course_dir = classroom["root"] / COURSE_ID
    assert exchange.mode(course_dir / "inbound") == 0o2733  # students write, nobody but the owner lists
    assert exchange.mode(course_dir / "feedback") == 0o711  # a file is reachable only by its hashed name
    names = [path.name for path in (course_dir / "feedback").iterdir()]
    assert len(names) == 2 and not any(student in name for name in names for student in ("alice", "bob"))


def test_both_submissions_collected_byte_for_byte(classroom):
    collected, work = classroom["collected"], classroom["instructor"].work.root
    assert sorted(collected) == ["alice", "bob"] and collected["alice"] == [] and collected["bob"] == []
    for name, digest in classroom["submitted"].items():
        inbound = list((classroom["root"] / COURSE_ID / "inbound").glob(f"{name}+{LESSON.id}+*/{LESSON.id}.ipynb"))
        assert len(inbound) == 1 and _sha(inbound[0]) == digest
        assert _sha(work / "collected" / name / LESSON.id / f"{LESSON.id}.ipynb") == digest
        assert _sha(classroom["fetched"][name]) == digest, f"{name}'s own notebook changed after submitting"


def test_scores_follow_the_answers(classroom):
    alice, bob = classroom["results"]["alice"], classroom["results"]["bob"]
    assert alice.error is None and bob.error is None, alice.lines() + bob.lines()
    # alice: every autograded cell, the speed check included (speed checks must not flake, see `tfperf-lab flake`)
    assert all(cell.score == cell.max_score for cell in alice.cells if cell.kind == "auto"), "\n".join(alice.lines())
    assert all(cell.score == 0 for cell in bob.cells if cell.kind == "auto"), "\n".join(bob.lines())
    # written answers wait for the instructor
    assert [c.score for c in alice.cells if c.kind == "manual"] == [c.score for c in bob.cells if c.kind == "manual"] == [None]


def test_the_exchange_grades_through_the_same_sandbox(classroom):
    """The exchange path runs nbgrader's autograde with the course's SandboxedExecute, as `tfperf-lab grade` does."""
    assert {result.sandbox for result in classroom["results"].values()} == {"bubblewrap"}


def test_each_student_receives_only_their_own_feedback(classroom):
    work = classroom["instructor"].work
    for name, files in classroom["received"].items():
        assert [path.name for path in files] == [f"{LESSON.id}.html"], files
        mine = work.feedback(name, LESSON.id)
        assert files[0].read_bytes() == mine.read_bytes() == classroom["released"][name].read_bytes()
        result = classroom["results"][name]
        total = sum(cell.max_score for cell in result.cells)
        assert re.search(rf"Score: {result.score:.1f} / {total:.1f}", files[0].read_text(encoding="utf-8"))
    alice, bob = (classroom["received"][name][0].read_bytes() for name in ("alice", "bob"))
    assert alice != bob


def test_feedback_has_no_hidden_test_source_or_traceback(classroom):
    assert hidden_lines(LESSON), "lesson 01 should have hidden tests"
    for name, files in classroom["received"].items():
        html = files[0].read_text(encoding="utf-8")
        assert not leaks(html, LESSON), f"{name}'s feedback shows {leaks(html, LESSON)[:3]}"


def test_a_failing_step_names_the_step_the_student_and_nbgraders_reason(classroom, tmp_path):
    stranger = exchange.Student("carol", tmp_path / "carol", classroom["root"], COURSE_ID)
    with pytest.raises(exchange.ExchangeStepError, match=r"nbgrader fetch_assignment failed for student carol .*"
                                                         r"Assignment not found.*99_no_such_lesson"):
        stranger.fetch("99_no_such_lesson")


def test_grading_again_collects_and_grades_nothing_new(classroom, capsys):
    instructor = classroom["instructor"]
    code = exchange.main(["grade", "01", f"--root={instructor.root}", f"--course-id={COURSE_ID}", f"--work={instructor.work.root}"],
                         course=COURSE)
    assert code == 0
    assert f"{LESSON.id}: 0 graded" in capsys.readouterr().out
