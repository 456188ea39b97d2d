"""A finding withholds only its own exercise: the exercise split of every lesson (`notebook.exercises`) and the rule the
score stage withholds by (`score.review_scope`), on the lessons' own notebooks with findings crafted here. Nothing is
executed."""

import re
import types

import pytest

from tfperf_lab.course import Course, notebook
from tfperf_lab.grading import score
from tfperf_lab.grading.results import CellResult, SubmissionResult
from tfperf_lab.grading.review import Finding

COURSE = Course.find()
LESSONS = [lesson.id for lesson in COURSE.lessons]
POINTS = re.compile(r"\((\d+) points?(?:, graded by hand)?\)")


def _points(nb: dict) -> dict[str, float]:
    return {cell["id"]: cell["points"] for cell in notebook.grade_cells(nb)}


def _openers(lesson) -> set[str]:
    return {section["heading"] for section in notebook.sections(lesson.release_notebook()) if section["heading"]}


def test_there_are_ten_lessons():
    assert len(LESSONS) == 10, LESSONS


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_every_graded_cell_falls_in_exactly_one_exercise_whose_heading_states_its_points(lesson_id):
    """Sections open at level 1-2 headings; an exercise is one that holds graded cells. Every graded cell of the source
    lies in exactly one, each exercise's heading says "(N points)" and its cells add up to N, and a written question
    graded by hand is a section of its own (no autograded test beside it)."""
    lesson = COURSE.lesson(lesson_id)
    nb = lesson.source_notebook()
    points, graded = _points(nb), [cell["id"] for cell in notebook.grade_cells(nb)]
    found = notebook.exercises(nb)
    held = [cell for exercise in found for cell in exercise["graded"]]
    assert sorted(held) == sorted(graded) and len(held) == len(set(held)), (held, graded)
    assert sum(1 for e in found if e["tests"]) >= 1
    for exercise in found:
        stated = POINTS.search(exercise["title"])
        assert stated, f"{lesson_id}: exercise heading without its points: {exercise['title']!r}"
        assert sum(points[cell] for cell in exercise["graded"]) == float(stated.group(1)), exercise
        manual = [cell for cell in exercise["graded"] if cell not in exercise["tests"]]
        if manual:  # a written question: its own section, graded by hand, with no test beside it
            assert not exercise["tests"] and "graded by hand" in exercise["title"], exercise
        cells = nb["cells"][exercise["start"]:exercise["stop"]]
        assert notebook.headings(cells[0]) and not any(notebook.headings(cell) for cell in cells[1:] if
                                                       re.search(r"(?m)^#{1,2}\s", notebook.source(cell))), exercise
    sections = notebook.sections(nb)
    assert sections[0]["start"] == 0 and sections[-1]["stop"] == len(nb["cells"])
    assert all(a["stop"] == b["start"] for a, b in zip(sections, sections[1:])), "sections must tile the notebook"


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_the_student_version_split_at_the_release_headings_matches_the_source(lesson_id):
    lesson = COURSE.lesson(lesson_id)
    source = [(e["title"], e["graded"]) for e in notebook.exercises(lesson.source_notebook())]
    release = [(e["title"], e["graded"]) for e in notebook.exercises(lesson.release_notebook(), openers=_openers(lesson))]
    assert release == source


def test_headings_ignore_fenced_code_and_level_three():
    cell = {"cell_type": "markdown", "source": "### Your task\n```python\n# not a heading\n```\n## 2. Exercise (3 points) ##\n"}
    assert notebook.headings(cell) == ["2. Exercise (3 points)"]
    assert notebook.headings({"cell_type": "code", "source": "# a comment"}) == []


def test_a_learners_own_heading_opens_no_section_and_a_deleted_one_merges_two():
    lesson = COURSE.lesson("03_tf_function")
    nb, openers = lesson.release_notebook(), _openers(lesson)
    a, b = (e for e in notebook.exercises(nb, openers=openers) if e["tests"])
    nb["cells"].insert(a["start"] + 2, {"cell_type": "markdown", "id": "mine", "metadata": {}, "source": "## My own notes"})
    assert [e["graded"] for e in notebook.exercises(nb, openers=openers)][:2] == [a["graded"], b["graded"]]
    del nb["cells"][b["start"] + 1]  # exercise B's heading (shifted by the cell inserted above)
    merged = notebook.exercises(nb, openers=openers)[0]
    assert merged["graded"] == a["graded"] + b["graded"]


# --- the withholding rule -----------------------------------------------------------------------------------------------


def _finding(cell: str, line: int = 1) -> Finding:
    return Finding(cell, line, "tfperf.link.serve = print", "reaches the grading internals")


def _answer(nb: dict, exercise: dict) -> str:
    """The id of the exercise's answer cell (its first solution cell)."""
    return next(c["id"] for c in nb["cells"][exercise["start"]:exercise["stop"]] if notebook.nbgrader_meta(c).get("solution"))


def _scope(lesson, nb, found):
    return score.review_scope(nb, lesson.review_cells(), found, openers=_openers(lesson))


def test_lesson_03_a_finding_in_exercise_b_withholds_only_exercise_b_and_one_in_a_also_the_later_b():
    """Code reaches only what runs after it: a finding in exercise B never costs exercise A; one in A's answer runs
    before B's tests too, so B's review cells wait for the same person."""
    lesson = COURSE.lesson("03_tf_function")
    nb = lesson.release_notebook()
    a, b, _ = notebook.exercises(nb, openers=_openers(lesson))
    exercise_b = {"fast_step_traces_at_most_twice", "fast_step_is_faster"}
    assert set(_scope(lesson, nb, [_finding(_answer(nb, b))])) == exercise_b
    assert set(_scope(lesson, nb, [_finding(_answer(nb, a))])) == {"train_step_traces_once", "train_step_is_faster"} | exercise_b


def test_lesson_06_the_forged_trace_count_of_exercise_2_no_longer_withholds_exercise_1():
    lesson = COURSE.lesson("06_gradient_tape")
    nb = lesson.release_notebook()
    second = notebook.exercises(nb, openers=_openers(lesson))[1]
    assert _answer(nb, second) == "train_step_solution"
    assert set(_scope(lesson, nb, [_finding("train_step_solution", 4)])) == {"train_step_traced_once", "train_step_is_faster"}


def test_a_cell_added_inside_an_exercise_belongs_to_it():
    lesson = COURSE.lesson("03_tf_function")
    nb = lesson.release_notebook()
    a = notebook.exercises(nb, openers=_openers(lesson))[0]
    nb["cells"].insert(a["stop"] - 1, {"cell_type": "code", "id": "learner-added", "metadata": {}, "source": "import gc", "outputs": []})
    assert {"train_step_traces_once", "train_step_is_faster"} <= set(_scope(lesson, nb, [_finding("learner-added")]))


def test_a_finding_outside_every_exercise_withholds_the_exercises_after_it_never_one_before():
    lesson = COURSE.lesson("03_tf_function")
    nb = lesson.release_notebook()
    a, b, _ = notebook.exercises(nb, openers=_openers(lesson))
    every = set(lesson.review_cells())
    before = {"cell_type": "code", "id": "early", "metadata": {}, "source": "import gc", "outputs": []}
    between = dict(before, id="between")
    after = dict(before, id="late")
    nb["cells"].insert(b["start"], between)  # just before exercise B's heading: the end of exercise A's section
    nb["cells"].insert(a["start"], before)  # before exercise A's heading: outside every exercise
    nb["cells"].append(after)  # after the written question and the summary
    assert set(_scope(lesson, nb, [_finding("early")])) == every
    assert set(_scope(lesson, nb, [_finding("late")])) == set()
    # "between" sits at the end of exercise A's section (a learner's cell belongs to the section it sits in)
    assert set(_scope(lesson, nb, [_finding("between")])) == {"train_step_traces_once", "train_step_is_faster",
                                                               "fast_step_traces_at_most_twice", "fast_step_is_faster"}


def test_a_finding_in_a_section_between_exercises_withholds_only_the_later_ones():
    lesson = COURSE.lesson("04_tf_data")
    nb = lesson.release_notebook()
    openers = _openers(lesson)
    first, second, _ = notebook.exercises(nb, openers=openers)
    serial = next(s for s in notebook.sections(nb, openers=openers) if s["title"].startswith("3. A truly serial"))
    assert first["stop"] <= serial["start"] < second["start"]
    demo = nb["cells"][serial["start"] + 1]["id"]
    assert set(_scope(lesson, nb, [_finding(demo)])) == {"fast_pipeline_is_faster"}
    setup = next(c["id"] for c in nb["cells"] if c.get("id") == "setup")
    assert set(_scope(lesson, nb, [_finding(setup)])) == set(lesson.review_cells())


def test_lesson_10_a_shared_speed_check_withholds_every_cell_that_shares_it():
    """Lesson 10's epoch check is shared by a structural cell of exercise 2 and two cells of the whole trainer: a finding in
    either withholds all three; a finding in exercise 1 or 3 (no review cell of their own) withholds the later ones."""
    lesson = COURSE.lesson("10_capstone")
    nb = lesson.release_notebook()
    ex1, ex2, ex3, together, _ = notebook.exercises(nb, openers=_openers(lesson))
    shared = {"train_step_compiled_once", "trainer_no_retracing", "trainer_is_faster"}
    assert set(_scope(lesson, nb, [_finding(_answer(nb, ex2))])) == shared
    added = {"cell_type": "code", "id": "mine", "metadata": {}, "source": "x", "outputs": []}
    nb["cells"].insert(together["start"] + 1, added)
    assert set(_scope(lesson, nb, [_finding("mine")])) == shared
    assert set(_scope(lesson, nb, [_finding(_answer(nb, ex1))])) == shared  # exercise 1's answer runs before them all
    assert set(_scope(lesson, nb, [_finding(_answer(nb, ex3))])) == {"trainer_no_retracing", "trainer_is_faster"} | (
        {"train_step_compiled_once"} & set(_scope(lesson, nb, [_finding(_answer(nb, ex3))])))


def test_a_finding_in_a_cell_the_notebook_lacks_withholds_everything():
    lesson = COURSE.lesson("06_gradient_tape")
    nb = lesson.release_notebook()
    assert set(_scope(lesson, nb, [_finding("no-such-cell")])) == set(lesson.review_cells())


class _Grades:
    """A stand-in for nbgrader's gradebook: find_grade gives one record per cell."""

    def __init__(self):
        self.grades = {}

    def find_grade(self, cell, notebook_id, assignment, student):
        return self.grades.setdefault(cell, types.SimpleNamespace(auto_score=None, manual_score=None, needs_manual_grade=False))


def test_withheld_cells_name_their_own_findings_and_keep_what_they_earned():
    lesson = COURSE.lesson("03_tf_function")
    nb = lesson.release_notebook()
    a, b, _ = notebook.exercises(nb, openers=_openers(lesson))
    points = {cell["id"]: cell["points"] for cell in lesson.grade_cells()}
    result = SubmissionResult("s", lesson.id, cells=[CellResult(cell, points[cell], points[cell], "auto", "passed")
                                                      for cell in points if cell != "when_tf_function_does_not_help"])
    result.cells[-1].score, result.cells[-1].status, result.cells[-1].message = 0.0, "failed", "speed points withheld: x"
    gradebook = _Grades()
    found = [_finding(_answer(nb, b), 7)]
    score._withhold_for_review(gradebook, lesson, result, found, nb)
    by_id = {cell.id: cell for cell in result.cells}
    assert set(result.withheld) == {"fast_step_traces_at_most_twice", "fast_step_is_faster"}
    assert result.withheld["fast_step_traces_at_most_twice"]["earned"] == points["fast_step_traces_at_most_twice"]
    assert result.withheld["fast_step_is_faster"] == {"earned": 0.0, "status": "failed", "message": "speed points withheld: x",
                                                      "findings": [f"cell {_answer(nb, b)} line 7"]}
    for cell in ("fast_step_traces_at_most_twice", "fast_step_is_faster"):
        assert by_id[cell].score == 0 and by_id[cell].status == "review"
        assert f"cell {_answer(nb, b)} line 7" in by_id[cell].message
        assert gradebook.grades[cell].needs_manual_grade and gradebook.grades[cell].auto_score == 0
    for cell in ("train_step_traces_once", "train_step_is_faster", "train_step_matches_eager"):
        assert by_id[cell].score == points[cell] and by_id[cell].status == "passed" and cell not in gradebook.grades
    assert result.findings == [{"cell": _answer(nb, b), "line": 7, "code": "tfperf.link.serve = print",
                                "why": "reaches the grading internals"}]
    assert SubmissionResult.from_dict(result.to_dict()) == result


def _all_passed(lesson) -> SubmissionResult:
    return SubmissionResult("s", lesson.id, cells=[CellResult(cell["id"], cell["points"], cell["points"], "auto", "passed")
                                                   for cell in lesson.grade_cells() if cell["kind"] == "auto"])


@pytest.mark.parametrize("lesson_id", LESSONS)
def test_every_speed_cell_names_the_output_tests_of_its_own_exercise_it_is_paid_with(lesson_id):
    """Each speed cell names its output tests (``paid_with``): tests of its own exercise, neither speed nor structural
    cells, and at least one."""
    lesson = COURSE.lesson(lesson_id)
    outputs, speed, structural = lesson.speed_outputs(), lesson.speed_checks(), lesson.review_cells()
    assert set(outputs) == set(speed)
    autograded = {cell["id"] for cell in lesson.grade_cells() if cell["kind"] == "auto"}
    for cell, tests in outputs.items():
        assert tests and set(tests) <= autograded, (cell, tests)
        assert not set(tests) & set(speed) and not set(tests) & set(structural), (cell, tests)
        section = next(s for s in notebook.exercises(lesson.source_notebook()) if cell in s["tests"])
        assert set(tests) <= set(section["tests"]), (cell, tests)


def test_a_fast_but_wrong_answer_loses_its_speed_cell_and_nothing_else():
    """Lesson 08's blur with REFLECT padding: its outputs test fails, so its passing speed check pays nothing."""
    lesson = COURSE.lesson("08_timeline_profiler")
    result = _all_passed(lesson)
    by_id = {cell.id: cell for cell in result.cells}
    by_id["fixed_matches_numpy"].score, by_id["fixed_matches_numpy"].status = 0.0, "failed"
    gradebook = _Grades()
    score._withhold_speed_of_wrong_outputs(gradebook, lesson, result)
    assert by_id["fixed_step_is_faster"].score == 0 and "fixed_matches_numpy did not pass" in by_id["fixed_step_is_faster"].message
    assert gradebook.grades["fixed_step_is_faster"].auto_score == 0
    assert {cell for cell, grade in gradebook.grades.items()} == {"fixed_step_is_faster"}
    right = _all_passed(lesson)
    score._withhold_speed_of_wrong_outputs(_Grades(), lesson, right)
    assert all(cell.score == cell.max_score for cell in right.cells)
