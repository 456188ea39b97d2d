"""Demonstrations grading leaves out (`tfperf_lab.course.skipping`): never a cell the grade reads, and every cell an
answer or a test reads, directly or through the cells it reads.

That leaving them out changes no grade is proven by the graded class itself: every notebook of it (references,
unoptimized answers, attacks, the honest corpus) is graded with the demonstrations left out, against the points each
test module expects, which were set with every cell run.
"""

import copy

import pytest
from nbformat import from_dict

from tfperf_lab.course import notebook, skipping
from tfperf_lab.grading import execute
from pipeline import COURSE

LESSONS = COURSE.lessons


def _code(nb, cell_id):
    return next(c for c in nb["cells"] if c.get("id") == cell_id)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
def test_no_graded_answer_fixture_or_shared_cell_is_ever_left_out(lesson):
    nb = lesson.source_notebook()
    left_out = skipping.skippable(nb)
    assert left_out, f"{lesson.id}: no demonstration left out"
    for cell in nb["cells"]:
        if cell.get("id") in left_out:
            meta = notebook.nbgrader_meta(cell)
            assert not (meta.get("grade") or meta.get("solution") or meta.get("locked")), cell["id"]
            assert "speed-fixture" not in cell.get("metadata", {}).get("tags", []) and cell["id"] not in ("setup", "self-check")


def _a_left_out_binding(nb):
    """A left-out cell and a name it binds that no other cell binds."""
    left_out = skipping.skippable(nb)
    for cell in nb["cells"]:
        if cell.get("id") in left_out:
            names = skipping._Cell(notebook.source(cell)).binds
            others = set().union(*(skipping._Cell(notebook.source(c)).binds for c in nb["cells"]
                                   if c["cell_type"] == "code" and c is not cell))
            for name in sorted(names - others):
                return cell["id"], name
    raise AssertionError("no left-out cell binds a name of its own")


@pytest.mark.parametrize("lesson", [LESSONS[3], LESSONS[9]], ids=lambda lesson: lesson.id)
def test_an_answer_that_reads_a_demonstrations_name_runs_that_demonstration_and_what_it_reads(lesson):
    source = lesson.source_notebook()
    cell_id, name = _a_left_out_binding(source)
    submitted = copy.deepcopy(source)
    at = next(i for i, c in enumerate(submitted["cells"]) if c.get("id") == cell_id)
    answer = next(c for c in submitted["cells"][at:] if notebook.nbgrader_meta(c).get("solution") and c["cell_type"] == "code")
    answer["source"] = notebook.source(answer) + f"\n_peek = {name}\n"
    left_out = skipping.skippable(source, submitted)
    assert cell_id not in left_out
    # and every cell that cell needs runs too
    needs = skipping._Cell(notebook.source(_code(source, cell_id))).reads
    for cell in source["cells"]:
        if cell.get("id") in left_out:
            assert not (needs & skipping._Cell(notebook.source(cell)).binds), (cell["id"], needs)


def test_a_changed_or_added_cell_always_runs_and_shared_ids_leave_nothing_out():
    source = LESSONS[3].source_notebook()
    cell_id = sorted(skipping.skippable(source))[0]
    edited = copy.deepcopy(source)
    _code(edited, cell_id)["source"] = notebook.source(_code(edited, cell_id)) + "\n# mine"
    assert cell_id not in skipping.skippable(source, edited)
    twins = copy.deepcopy(source)
    twins["cells"].append(copy.deepcopy(_code(source, cell_id)))
    assert skipping.skippable(source, twins) == set()


def _tiny(*cells):
    return {"cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": text, "outputs": []} for i, text in enumerate(cells)]
            + [{"cell_type": "code", "id": "test", "metadata": {"nbgrader": {"grade": True, "grade_id": "test", "points": 1}},
                "source": "assert history and model", "outputs": []}]}


@pytest.mark.parametrize("text, runs", [
    ("history.append(1)", True),                  # changes what the test reads
    ("history[0] = 2", True),
    ("fitted = model.fit(x)", True),              # a kept value, but fit changes the model
    ("shape = history.copy()", False),            # reads only
    ("tf.debugging.enable_check_numerics()", True),  # global state no name shows
    ("writer = tf.summary.create_file_writer(d)", True),
    ("%timeit f()", True),                        # not Python: cannot be read
    ("plot = tf.constant(1)", False),             # a module's function changes nothing
])
def test_what_changes_state_the_grade_reads_runs(text, runs):
    nb = _tiny("import tensorflow as tf\nhistory, model = [], object()", text)
    assert ("c1" not in skipping.skippable(nb)) is runs


def test_a_left_out_cell_comes_back_with_its_text_and_a_note_whatever_the_sandbox_sent():
    executed = from_dict({"cells": [{"cell_type": "code", "id": "demo", "metadata": {}, "source": "", "execution_count": 3,
                                     "outputs": [{"output_type": "stream", "name": "stdout", "text": "forged"}]}],
                          "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    execute._put_back(executed, {"demo": "x = slow()"})
    cell = executed.cells[0]
    assert cell.source == "x = slow()" and cell.execution_count is None
    assert [o["text"] for o in cell.outputs] == [f"[{skipping.SKIPPED_NOTE}]\n"]


def test_leaving_out_empties_only_the_demonstrations_of_the_notebook_sent():
    lesson = LESSONS[9]
    sent = lesson.source_notebook()
    kept = execute._leave_out_demonstrations(COURSE, lesson.id, sent)
    assert set(kept) == skipping.skippable(lesson.source_notebook())
    for cell in sent["cells"]:
        assert (cell["source"] == "") is (cell.get("id") in kept) or cell["cell_type"] != "code"
