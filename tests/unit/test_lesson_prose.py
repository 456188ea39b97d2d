"""Issue 51, item 1 and the labels of item 2: each lesson within its word budget, its grading talk in one note, and
every recorded range it quotes labelled as where one run on the course's 2-core machine lands
(`tfperf_lab.course.prose`)."""

import pytest

from tfperf_lab.course import notebook, prose, stamp
from pipeline import COURSE

LESSONS = COURSE.lessons


def _source(lesson):
    return notebook.read(lesson.source)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id[:2])
def test_each_lesson_fits_the_word_budget(lesson):
    count = prose.words(_source(lesson))
    assert count <= prose.WORD_BUDGET, f"{lesson.id}: {count:,} words of markdown, budget {prose.WORD_BUDGET:,}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id[:2])
def test_grading_talk_stays_in_the_lessons_one_note(lesson):
    nb = _source(lesson)
    notes = [cell for cell in nb["cells"] if cell.get("id") == prose.NOTE_ID]
    assert len(notes) == 1 and notebook.source(notes[0]).startswith(prose.NOTE_HEADING), f"{lesson.id}: no grading note"
    assert "docs/grading.md" in notebook.source(notes[0]), f"{lesson.id}: the note does not link docs/grading.md"
    at = nb["cells"].index(notes[0])
    assert [cell.get("id") for cell in nb["cells"][at + 1:]] == ["self-check-heading", "self-check"], \
        f"{lesson.id}: the note is not the last section before the self-check"
    talk = {cell.get("id"): prose.machinery(notebook.source(cell)) for cell in prose.body(nb)}
    assert not {cell: terms for cell, terms in talk.items() if terms}, f"{lesson.id}: grading talk in the lesson body"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id[:2])
def test_every_recorded_range_says_it_is_one_runs_on_the_2_core_machine(lesson):
    found = [where for cell in _source(lesson)["cells"] if cell["cell_type"] == "markdown"
             for where in prose.unlabelled_ranges(notebook.source(cell))]
    assert not found, f"{lesson.id}: " + "\n".join(found)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id[:2])
def test_the_student_version_keeps_the_note(lesson):
    released = notebook.read(lesson.release)
    assert any(cell.get("id") == prose.NOTE_ID for cell in released["cells"]), f"{lesson.id}: release the lesson again"


def test_the_rules_find_what_they_look_for():
    assert prose.machinery("Grading runs the <!--fig 03.x@reduced-->reduced profile<!--/fig--> in a sandbox.") == [
        "workload profiles ('reduced profile')", "the sandbox ('sandbox')"]
    assert prose.machinery("The TensorFlow profile shows the step; a CI of 95% is an interval.") == []
    assert prose.machinery("The grader's clock, read-only cells, hidden tests and nbgrader.") == [
        "the grader (\"grader's\")", "read-only cells ('read-only')", "hidden tests ('hidden tests')", "nbgrader ('nbgrader')"]
    labelled = "On the course's 2-core VM a run lands in <!--fig 03.tiny_ops_loop-->19.9-29.5x<!--/fig-->."
    bare = "The course measured <!--fig 03.tiny_ops_loop-->19.9-29.5x<!--/fig-->.\n\nNeeds <!--fig threshold:c-->3x<!--/fig-->."
    assert prose.unlabelled_ranges(labelled) == [] and len(prose.unlabelled_ranges(bare)) == 1
    assert prose.words("<!--fig 03.a-->1-2x<!--/fig--> runs" and {"cells": [
        {"cell_type": "markdown", "source": "two <!--fig 03.a-->1-2x<!--/fig--> words"}]}) == 3


def test_stamping_adds_a_missing_note_before_the_self_check_and_keeps_a_lessons_own():
    nb = _source(COURSE.lesson("05_metrics"))
    own = next(cell for cell in nb["cells"] if cell.get("id") == prose.NOTE_ID)
    nb["cells"].remove(own)
    added = stamp.stamped(nb, stamp.location(COURSE))
    ids = [cell.get("id") for cell in added["cells"]]
    assert ids[-3:] == [prose.NOTE_ID, "self-check-heading", "self-check"]
    assert notebook.source(added["cells"][-3]).startswith(prose.NOTE_HEADING)
    nb["cells"].insert(3, own | {"source": prose.NOTE_HEADING + "\n\nThis lesson's own words."})
    kept = stamp.stamped(nb, stamp.location(COURSE))
    assert notebook.source(kept["cells"][-3]) == prose.NOTE_HEADING + "\n\nThis lesson's own words."
