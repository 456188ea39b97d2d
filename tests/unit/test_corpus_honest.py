"""Static checks of the honest-answer corpus (tests/corpus_honest.py): every entry builds a valid notebook of its lesson.

Fast: nothing runs and nothing is graded. Grading the GRADED entries and reading them with the review list is wired in
elsewhere.
"""

import ast
import collections

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tfperf_lab.course import notebook

from corpus_honest import GRADED, HONEST, Honest
from pipeline import COURSE

LESSON_IDS = [lesson.id for lesson in COURSE.lessons]
BY_NAME = {entry.name: entry for entry in HONEST}


def solution_ids(lesson_id: str) -> set[str]:
    return {cell["id"] for cell in COURSE.lesson(lesson_id).source_notebook()["cells"]
            if cell.get("cell_type") == "code" and notebook.nbgrader_meta(cell).get("solution")}


def test_names_are_unique():
    counts = collections.Counter(entry.name for entry in HONEST)
    assert not [name for name, count in counts.items() if count > 1]


def test_at_least_45_entries_and_4_per_lesson():
    per_lesson = collections.Counter(entry.lesson for entry in HONEST)
    assert len(HONEST) >= 45
    assert set(per_lesson) <= set(LESSON_IDS), f"unknown lessons: {set(per_lesson) - set(LESSON_IDS)}"
    assert {lesson: per_lesson[lesson] for lesson in LESSON_IDS if per_lesson[lesson] < 4} == {}


def test_graded_is_a_subset_with_at_least_2_per_lesson():
    known = {(entry.lesson, entry.name) for entry in HONEST}
    assert GRADED <= known, f"GRADED names entries that do not exist: {GRADED - known}"
    per_lesson = collections.Counter(lesson for lesson, _ in GRADED)
    assert {lesson: per_lesson[lesson] for lesson in LESSON_IDS if per_lesson[lesson] < 2} == {}


def test_every_entry_says_its_style_and_changes_something():
    assert [entry.name for entry in HONEST if not entry.style.strip() or "\n" in entry.style.strip()] == []
    assert [entry.name for entry in HONEST if not entry.cells and not entry.scratch] == []


def test_graded_entries_replace_solution_cells():
    """A GRADED entry is an answer written differently, not only scratch cells around the reference."""
    assert [name for lesson, name in GRADED if not BY_NAME[name].cells] == []


@pytest.mark.parametrize("entry", HONEST, ids=[entry.name for entry in HONEST])
def test_entry_replaces_solution_cells_only(entry: Honest):
    assert isinstance(entry.cells, dict) and isinstance(entry.scratch, tuple)
    assert set(entry.cells) <= solution_ids(entry.lesson), f"not solution cells of {entry.lesson}: {set(entry.cells) - solution_ids(entry.lesson)}"
    assert all(isinstance(source, str) and source.strip() for source in [*entry.cells.values(), *entry.scratch])


@pytest.mark.parametrize("entry", HONEST, ids=[entry.name for entry in HONEST])
def test_entry_builds_a_valid_notebook(entry: Honest):
    lesson = COURSE.lesson(entry.lesson)
    original = lesson.source_notebook()
    nb = entry.notebook(lesson)
    nbformat.validate(nbformat.from_dict(nb))
    ids = [cell.get("id") for cell in nb["cells"]]
    assert len(ids) == len(set(ids)), "cell ids must stay unique"
    assert len(nb["cells"]) == len(original["cells"]) + len(entry.scratch)
    by_id = {cell.get("id"): cell for cell in nb["cells"]}
    for cell_id, source in entry.cells.items():
        cell = by_id[cell_id]
        assert notebook.source(cell) == source, f"cell {cell_id} does not hold the entry's text"
        assert notebook.nbgrader_meta(cell).get("solution"), f"cell {cell_id} lost its nbgrader metadata"
    # the scratch cells sit right after the last replaced cell, or at the end
    scratch_ids = [entry.scratch_id(index) for index in range(len(entry.scratch))]
    if scratch_ids:
        replaced = [ids.index(cell_id) for cell_id in entry.cells]
        start = max(replaced) + 1 if replaced else len(ids) - len(scratch_ids)
        assert ids[start : start + len(scratch_ids)] == scratch_ids
        assert [notebook.source(by_id[cell_id]) for cell_id in scratch_ids] == list(entry.scratch)
        assert all(by_id[cell_id]["cell_type"] == "code" for cell_id in scratch_ids)
    # every other cell is the source's, untouched
    untouched = [cell for cell in original["cells"] if cell.get("id") not in entry.cells]
    assert [cell for cell in nb["cells"] if cell.get("id") not in entry.cells and cell.get("id") not in scratch_ids] == untouched
    # a fresh copy each time: building twice gives the same notebook, and the lesson's source is not changed
    assert entry.notebook(lesson) == nb
    assert lesson.source_notebook() == original


@pytest.mark.parametrize("entry", HONEST, ids=[entry.name for entry in HONEST])
def test_entry_code_is_valid_python(entry: Honest):
    """Every new cell parses as IPython parses it (magics such as %timeit and %%time included)."""
    transform = TransformerManager().transform_cell
    for source in [*entry.cells.values(), *entry.scratch]:
        ast.parse(transform(source))


def test_notebook_refuses_another_lesson():
    entry = HONEST[0]
    other = next(lesson for lesson in COURSE.lessons if lesson.id != entry.lesson)
    with pytest.raises(ValueError):
        entry.notebook(other)
