"""Submissions that lost their nbgrader metadata (and maybe their cell ids) get it back from the release.

A Colab download can lose both; cells are then matched by content. These tests run no notebook.
"""


import nbformat
import pytest

from tfperf_lab.course import notebook as nb_file
from tfperf_lab.grading import review, stage
from pipeline import COURSE
from hostile import _strip_metadata

LESSONS = COURSE.lessons


_copy = nb_file.copy


def _graded(notebook: dict) -> dict:
    return {c["metadata"]["nbgrader"]["grade_id"]: (c["cell_type"], c["metadata"]["nbgrader"]) for c in notebook["cells"]
            if "nbgrader" in c["metadata"]}


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.id)
@pytest.mark.parametrize("which", ["release", "source"])
def test_stripped_ids_and_metadata_are_matched_by_content_even_with_extra_cells(lesson, which):
    release = nb_file.read(lesson.release)
    original = nb_file.read(lesson.release if which == "release" else lesson.source)
    notebook = _strip_metadata(_copy(original), ids=True)
    for cell in notebook["cells"]:
        cell["metadata"]["colab"] = {"id": "x"}  # what Colab adds
    for at in (len(notebook["cells"]) // 3, 2 * len(notebook["cells"]) // 3):  # a learner's scratch cells
        notebook["cells"].insert(at, nbformat.v4.new_code_cell("print('trying something')"))
        notebook["cells"][at].pop("id")
    by_id, by_content = stage.repair_metadata(notebook, release)
    assert by_id == 0 and by_content == len(_graded(release))
    assert _graded(notebook) == _graded(release)
    for cell in notebook["cells"]:
        if "nbgrader" in cell["metadata"]:
            assert cell["id"] == cell["metadata"]["nbgrader"]["grade_id"]
    nbformat.validate(nbformat.from_dict(notebook))


def test_ids_alone_are_enough_and_nothing_is_matched_twice():
    release = nb_file.read(LESSONS[0].release)
    notebook = _strip_metadata(_copy(release), ids=False)
    assert stage.repair_metadata(notebook, release) == (len(_graded(release)), 0)
    assert _graded(notebook) == _graded(release)


def test_a_new_cell_without_an_id_in_a_notebook_that_kept_its_ids_gets_one():
    """An editor that writes no ids, or a hand-edited file: nbformat 4.5 wants an id on every cell (a warning today,
    an error in later nbformat versions), so the staged copy gets one even when nothing needed matching."""
    import warnings

    release = nb_file.read(LESSONS[0].release)
    notebook = _copy(release)
    notebook["cells"].insert(3, {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None})
    assert stage.repair_metadata(notebook, release) == (0, 0)
    assert all(cell.get("id") for cell in notebook["cells"]) and _graded(notebook) == _graded(release)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(nbformat.from_dict(notebook))


def test_an_answer_cell_among_several_new_cells_is_left_unmatched_not_guessed():
    release = nb_file.read(LESSONS[0].release)
    notebook = _strip_metadata(_copy(release), ids=True)
    answer = next(i for i, c in enumerate(release["cells"]) if c["metadata"].get("nbgrader", {}).get("solution")
                  and c["cell_type"] == "code")
    notebook["cells"][answer]["source"] = "def make_callable(*a, **k):\n    return None"
    notebook["cells"].insert(answer + 1, {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None})
    stage.repair_metadata(notebook, release)
    assert release["cells"][answer]["id"] not in _graded(notebook)
    tests = [c["metadata"]["nbgrader"]["grade_id"] for c in release["cells"] if c["metadata"].get("nbgrader", {}).get("grade")
             and not c["metadata"]["nbgrader"].get("solution")]
    assert set(tests) <= set(_graded(notebook)), "the test cells still match"


@pytest.mark.parametrize(("cell_id", "kind"), [("baseline_evaluation_case", "read-only cell"), ("evaluate_is_faster", "test cell")])
def test_a_deleted_read_only_or_test_cell_is_put_back_where_it_was_with_its_id(cell_id, kind):
    # nbgrader would re-add the test cell at the end without an id: a warning in nbformat 5.10, an error later
    import warnings

    release = nb_file.read(COURSE.lesson("05_metrics").release)
    at = next(i for i, c in enumerate(release["cells"]) if c.get("id") == cell_id)
    notebook = nb_file.copy(release)
    del notebook["cells"][at]
    assert f"{kind} {cell_id} was deleted" in " ".join(stage.tamper_notes(notebook, release))
    stage.restore_deleted(notebook, release)
    assert [c.get("id") for c in notebook["cells"]] == [c.get("id") for c in release["cells"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nbformat.validate(nbformat.from_dict(notebook))


@pytest.mark.parametrize(("lesson_id", "learner_cell", "flagged"), [
    ("10_capstone", "def slow_train(*args, **kwargs):\n    import time\n    time.sleep(1)", "slow_train"),
    ("05_metrics", "eager_evaluate = lambda *a: time.sleep(1)", "eager_evaluate"),
    ("04_tf_data", "SERIAL = tf.data.Options()", "SERIAL"),
    ("03_tf_function", "from math import sqrt as train_step", "train_step"),
])
def test_redefining_a_read_only_baseline_puts_the_submission_on_the_review_list(lesson_id, learner_cell, flagged):
    lesson = COURSE.lesson(lesson_id)
    release = nb_file.read(lesson.release)
    notebook = nb_file.read(lesson.source)
    assert review.review(notebook, release) == [], "the reference must not be flagged"
    notebook["cells"].append(nbformat.v4.new_code_cell(learner_cell))
    assert [finding.why for finding in review.review(notebook, release)] == [f"rebinds {flagged}, which the lesson's own cells define"]
