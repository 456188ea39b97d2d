"""Every lesson through the real nbgrader pipeline: release, autograde, feedback, time budget.

The graded submissions are the course's own notebooks: the reference solution (full marks), the
untouched student version (zero on every autograded cell), and the reference again with no MNIST
available and no network (it must still pass, on the generated digits).
"""

import os

import pytest

from tfperf_lab.grading import batch
from tfperf_lab.course import figures, lint, notebook, stamp, WorkFolder
from pipeline import COURSE, hidden_lines, leaks, write_submission

pytestmark = pytest.mark.pipeline
# TFPERF_TEST_LESSONS=01,03 restricts these tests to some lessons while developing one (CI runs all).
ONLY = [item for item in os.environ.get("TFPERF_TEST_LESSONS", "").split(",") if item]
LESSONS = [lesson for lesson in COURSE.lessons if not ONLY or any(lesson.id.startswith(prefix) for prefix in ONLY)]
IDS = [lesson.id for lesson in LESSONS]


def class_submissions():
    """Every lesson's reference solution, in the test run's class (two workers, the default: measured free of false
    failures, see test_flake_records; kernels given a temporary folder whose leftovers the class reports)."""
    return {(lesson.id, "reference"): lesson.source_notebook() for lesson in LESSONS}


@pytest.fixture(scope="session")
def graded(graded_class, tmp_path_factory):
    """The references from the class; in one run of two workers, offline (no TFPERF_DATA, empty Keras cache, no
    network), the untouched student versions, so every lesson's own cells also run on the generated digits, and lesson
    01's reference once more."""
    # by this module's name: the class grades a notebook that several modules submit once, under the first one's name
    references = {("reference", lesson.id): graded_class.of("test_pipeline", lesson.id)["reference"] for lesson in LESSONS}
    work, submitted = tmp_path_factory.mktemp("work"), tmp_path_factory.mktemp("untouched")
    for lesson in LESSONS:
        write_submission(submitted, "untouched", lesson, source=lesson.release)
    write_submission(submitted, "offline", LESSONS[0], source=LESSONS[0].source)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TFPERF_DATA", raising=False)
        patch.setenv("TFPERF_OFFLINE", "1")
        patch.setenv("KERAS_HOME", str(tmp_path_factory.mktemp("empty_keras")))
        results = batch.grade(COURSE, submitted, work=WorkFolder(work), workers=2, progress=False)
    return references | {(r.student, r.lesson): r for r in results}, work, graded_class.left_behind


@pytest.mark.parametrize("lesson_id", IDS)
def test_reference_solution_autogrades_to_full_marks(graded, lesson_id):
    result = graded[0][("reference", lesson_id)]
    assert result.error is None, result.lines()
    assert result.max_score > 0
    assert result.score == result.max_score, "\n".join(result.lines())


def test_grading_leaves_no_temporary_files_behind(graded):
    """Lessons 07 and 10 write TensorBoard logs to a temporary folder; graded, it lives and dies with the grading."""
    assert graded[2] == []


def test_reference_solution_passes_offline_on_generated_digits(graded):
    result = graded[0][("offline", LESSONS[0].id)]
    assert result.score == result.max_score, "\n".join(result.lines())


@pytest.mark.parametrize("lesson_id", IDS)
def test_untouched_student_version_scores_zero_on_every_autograded_cell(graded, lesson_id):
    result = graded[0][("untouched", lesson_id)]
    assert result.error is None, result.lines()
    auto = [cell for cell in result.cells if cell.kind == "auto"]
    assert auto and all(cell.score == 0 for cell in auto), "\n".join(result.lines())


@pytest.mark.parametrize("lesson_id", IDS)
def test_grading_stays_within_the_declared_time_budget(graded, lesson_id):
    lesson = COURSE.lesson(lesson_id)
    result = graded[0][("reference", lesson_id)]
    assert lesson.minutes_grading > 0
    assert result.seconds <= lesson.minutes_grading * 60, f"{lesson_id} took {result.seconds:.0f} s to grade"


@pytest.mark.parametrize("lesson_id", IDS)
def test_feedback_shows_no_hidden_test_source_or_traceback(graded, lesson_id):
    result = graded[0][("untouched", lesson_id)]
    html = result.feedback.read_text(encoding="utf-8")
    lesson = COURSE.lesson(lesson_id)
    assert hidden_lines(lesson), "the lesson should have hidden tests"
    assert not leaks(html, lesson), f"the feedback shows {leaks(html, lesson)[:3]}"


def test_no_feedback_page_of_the_class_shows_hidden_test_source_or_traceback(graded_class):
    """Every notebook of the test run's class: the references, and the unoptimized, broken and dishonest answers whose
    hidden tests fail (their tracebacks run through the hidden lines)."""
    results = graded_class.results
    assert len(results) > len(LESSONS) and all(r.feedback and r.feedback.exists() for r in results.values()), \
        [key for key, r in results.items() if not (r.feedback and r.feedback.exists())]
    found = {f"{lesson}/{student}": leaks(r.feedback.read_text(encoding="utf-8"), COURSE.lesson(lesson))
             for (lesson, student), r in results.items()}
    assert not any(found.values()), {key: shown[:3] for key, shown in found.items() if shown}


def test_grades_csv_has_one_column_per_graded_cell(graded):
    lines = (graded[1] / "grades.csv").read_text().splitlines()
    header = lines[0].split(",")
    expected = [f"{lesson.id}:{cell['id']}" for lesson in LESSONS for cell in lesson.grade_cells()]
    assert header[:8] == ["student", "lesson", "score", "max_score", "status", "review", "submitted", "late_penalty"] \
        and header[8:] == expected
    assert len(lines) == 2 + len(LESSONS)  # the last run in this work folder: the untouched versions and the offline one


def test_student_versions_equal_a_fresh_release(graded_class):
    """``tfperf-lab release`` would change nothing: the shared cells are stamped and the figures rendered in every
    source, and the student versions nbgrader generated from today's sources for the test run's class (the grading
    releases every lesson into its work folder, as the release does into lessons/) equal the committed ones. The class's
    release spares a second nbgrader run of every lesson (36 s in CI)."""
    where, recorded = stamp.location(COURSE), figures.recorded()
    for lesson in LESSONS:
        source = notebook.read(lesson.source)
        assert stamp.stamped(source, where) == source, f"solutions/{lesson.id}: shared cells are stale: run `tfperf-lab release`"
        assert figures.rendered(source, lesson.id, recorded) == source, f"solutions/{lesson.id}: figures are stale: run `tfperf-lab release`"
        fresh = notebook.read(graded_class.work / "release" / lesson.id / f"{lesson.id}.ipynb")
        assert fresh == notebook.read(lesson.release), f"lessons/{lesson.id} is stale: run `tfperf-lab release`"


@pytest.mark.parametrize("path", [p for lesson in LESSONS for p in (lesson.source, lesson.release)], ids=str)
def test_notebooks_follow_the_course_rules(path):
    assert lint.lint(COURSE, path) == []


def test_lint_holds_each_lesson_to_the_run_time_of_its_metadata():
    nb = notebook.read(LESSONS[0].source)
    assert LESSONS[0].run_time_text in " ".join("".join(nb["cells"][0]["source"]).split())
    nb["metadata"]["tfperf"]["minutes"]["full"] += 1  # the promise no longer matches what the first cell says
    assert any("must state the run time" in problem for problem in lint.structure(nb))


def test_every_lesson_folder_has_a_source_and_a_student_version():
    sources = sorted(p.name for p in COURSE.solutions.iterdir() if p.is_dir())
    released = sorted(p.name for p in COURSE.releases.iterdir() if p.is_dir())
    assert sources == released == [lesson.id for lesson in COURSE.lessons]
