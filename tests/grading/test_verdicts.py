"""Answers that earned speed points by changing what the notebook's own process measures.

Each submission below is a slow answer plus a trick played inside the learner's kernel: the timing harness's numpy
or clock replaced, a record forged, the baseline slowed, a memo serving the inputs again, a trace count or a call
count faked. When the kernel timed the checks, each of them scored its speed cell (and the faked structural cell);
now none may: the grader times the speed (`tfperf_lab.speed.judge`), the structural cells count what they check where the
kernel cannot hide it, and code that patches the machinery is on the review list (`tfperf_lab.grading.review`), while the
honest reference in the same class keeps every point.
"""

from __future__ import annotations

import pytest

from pipeline import COURSE, assert_keeps_and_loses, class_results, scores
from tfperf_lab.course import variants

pytestmark = pytest.mark.pipeline

L01 = COURSE.lesson("01_callable_handles")
L03 = COURSE.lesson("03_tf_function")
CHEATS = {variant.name: variant for variant in variants.CHEATS}
CASES_01 = {"reference": L01.source_notebook()} | {v.name: v.notebook(L01) for v in CHEATS.values() if v.lesson == L01.id}
CASES_03 = {"reference": L03.source_notebook()} | {v.name: v.notebook(L03) for v in CHEATS.values() if v.lesson == L03.id}


def class_submissions():
    return {(L01.id, name): nb for name, nb in CASES_01.items()} | {(L03.id, name): nb for name, nb in CASES_03.items()}


graded_01, graded_03 = class_results(L01, name="graded_01"), class_results(L03, name="graded_03")


def test_every_cheat_keeps_its_correct_cells_and_loses_the_faked_ones(graded_01, graded_03):
    for name, variant in CHEATS.items():
        assert_keeps_and_loses((graded_01 if variant.lesson == L01.id else graded_03)[name], variant.keeps, variant.loses)


def test_the_reference_keeps_every_point(graded_01, graded_03):
    for result, lesson in ((graded_01["reference"], L01), (graded_03["reference"], L03)):
        got = scores(result)
        assert result.error is None and all(got[c["id"]] == c["points"] for c in lesson.grade_cells() if c["kind"] == "auto"), "\n".join(result.lines())
        assert all(m.technique and "grader" in m.technique for m in result.measurements if m.name.startswith("exercise_")), result.measurements


@pytest.mark.parametrize("case", ["cheat_percentile", "cheat_clock", "cheat_forged_record", "cheat_slowed_baseline"])
def test_a_slow_answer_cannot_change_the_measurement(graded_01, case):
    """Findings 1-4: whatever the kernel does to numpy, the clock, the harness or the baseline, the grader's number stands."""
    result = graded_01[case]
    got = scores(result)
    assert result.error is None, "\n".join(result.lines())
    assert got["handle_matches_sess_run"] == 2, "\n".join(result.lines())  # the answers are correct...
    assert got["handle_is_faster"] == 0, "\n".join(result.lines())  # ...and slow
    passing = [m for m in result.measurements if m.name == "exercise_handle_vs_sess_run" and m.passed]
    assert not passing, passing


def test_a_forged_record_is_not_read(graded_01):
    result = graded_01["cheat_forged_record"]
    assert any("never served" in note for note in result.notes), result.notes


def test_an_unbound_session_run_loses_the_structure_point(graded_01):
    """Lesson 01: ``v1.Session.run(sess, ...)`` passes a count on the session; the count on the class's ``_run`` sees it."""
    got = scores(graded_01["cheat_unbound_run"])
    assert got["handle_matches_sess_run"] == 2 and got["handle_built_once"] == 0 and got["handle_is_faster"] == 0, \
        "\n".join(graded_01["cheat_unbound_run"].lines())


def test_a_memo_finds_nothing_to_remember(graded_03):
    """Finding 5: every timed call gets inputs the grader drew, so a memoised eager step is as slow as the eager one."""
    got = scores(graded_03["cheat_memo"])
    assert got["train_step_is_faster"] == 0, "\n".join(graded_03["cheat_memo"].lines())


def test_a_faked_trace_count_loses_both_points(graded_03):
    """Lesson 03: a step that retraces per batch size claims one trace on its own object: the trace test reads the count
    through TensorFlow's function class (no review needed: the attribute reaches nothing), and the grader's fresh batch
    sizes expose the speed."""
    result = graded_03["cheat_fake_trace_count"]
    got = scores(result)
    assert not result.review and not graded_03["reference"].review, result.lines()
    assert got["train_step_traces_once"] == 0 and got["train_step_is_faster"] == 0, "\n".join(result.lines())
    assert "TensorFlow traced your step" in next(c.message for c in result.cells if c.id == "train_step_traces_once"), result.lines()


def test_a_grader_that_cannot_time_the_checks_grades_nothing_and_says_why(tmp_path, monkeypatch):
    from tfperf_lab.grading import batch
    from tfperf_lab.speed import judge

    def refuse(path):
        raise OSError(36, "File name too long")

    monkeypatch.setattr(judge, "_listener", refuse)
    mine = tmp_path / "mine" / f"{L01.id}.ipynb"
    mine.parent.mkdir()
    mine.write_bytes(L01.source.read_bytes())
    result = batch.check(COURSE, mine)
    said = "\n".join(result.lines())
    assert "could not start timing this lesson's speed checks" in said and "not of the notebook" in said, said
    assert not any(cell.score for cell in result.cells), said
    assert mine.read_bytes() == L01.source.read_bytes()
