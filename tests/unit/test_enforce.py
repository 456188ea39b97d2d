"""Speed points are decided in one place (`tfperf_lab.grading.execute.enforce_speed`), by a `Deciding` typed by its
source: the grader's verdicts when it judged, else the course's harness records. Unit tests on small notebooks."""

import nbformat
import pytest

from tfperf.report import Record
from tfperf_lab.grading import execute
from tfperf_lab.grading.job import JobDone
from tfperf_lab.isolation.contract import Outcome

CHECKS = {"fast_is_faster": ["fast"], "both_are_faster": ["fast", "other"]}


def _notebook():
    nb = nbformat.v4.new_notebook()
    for grade_id in ["answer", *CHECKS]:
        cell = nbformat.v4.new_code_cell("assert True")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 1}
        nb.cells.append(cell)
    return nb


def _record(name: str, speedup: float, passed: bool) -> Record:
    return Record(name=name, speedup=speedup, ci=(speedup * 0.9, speedup * 1.1), passed=passed, threshold=2.0)


def _done(judged: bool, verdicts=(), notes=()) -> JobDone:
    return JobDone(Outcome({"cells": []}, "", 0.0, 0), judged, list(verdicts), list(notes), "")


def _verdicts(nb) -> dict[str, str]:
    """grade_id -> the SpeedVerdict message the cell got ("" when none)."""
    found = {}
    for cell in nb.cells:
        errors = [o["evalue"] for o in cell.outputs if o.get("ename") == execute.SPEED_VERDICT]
        found[cell.metadata["nbgrader"]["grade_id"]] = errors[0] if errors else ""
    return found


def _records_text(*records: Record) -> str:
    return "".join(record.to_json() + "\n" for record in records)


def test_the_graders_passing_verdicts_pay_and_its_missing_or_failing_ones_do_not():
    nb = _notebook()
    done = _done(True, [_record("fast", 3.0, True), _record("other", 1.1, False)])
    execute.enforce_speed(nb, CHECKS, execute.Deciding.of(done, ""))
    found = _verdicts(nb)
    assert found["answer"] == "" and found["fast_is_faster"] == ""
    assert found["both_are_faster"].startswith("no speed points from the grader: other: measured 1.10x")


def test_when_the_grader_judged_the_kernels_records_decide_nothing():
    """Provenance by source: a passing record the kernel wrote cannot stand in for a verdict the grader did not give."""
    forged = _records_text(_record("fast", 9.0, True), _record("other", 9.0, True))
    done = _done(True, [], ["speed check fast: the grader's reference process did not reach this check"])
    deciding = execute.Deciding.of(done, forged)
    assert deciding.source == "grader" and not deciding.records
    nb = _notebook()
    execute.enforce_speed(nb, CHECKS, deciding)
    found = _verdicts(nb)
    assert "did not reach this check" in found["fast_is_faster"]
    assert "other: not measured" in found["both_are_faster"]


def test_a_learners_own_check_is_decided_by_the_harness_records():
    nb = _notebook()
    deciding = execute.Deciding.of(_done(False), _records_text(_record("fast", 3.0, True)))
    assert deciding.source == "harness"
    execute.enforce_speed(nb, CHECKS, deciding)
    found = _verdicts(nb)
    assert found["fast_is_faster"] == ""
    assert found["both_are_faster"] == ("no speed points from the course's timing harness: other: its speed check did not "
                                        "run through the course's timing harness")


@pytest.mark.parametrize("text", ["not json\n", '{"name": "fast"}\n'])
def test_unreadable_records_pay_no_speed_point(text):
    nb = _notebook()
    deciding = execute.Deciding.of(_done(False), text)
    assert deciding.unreadable and "could not be read" in deciding.unreadable
    execute.enforce_speed(nb, CHECKS, deciding)
    found = _verdicts(nb)
    assert found["answer"] == ""
    assert all("could not be read" in found[grade_id] for grade_id in CHECKS)


def test_speed_is_enforced_in_one_place():
    """No second rule in the score stage: the only writer of a SpeedVerdict is enforce_speed."""
    import inspect

    from tfperf_lab.grading import score

    assert "_withhold_speed_points" not in dir(score)
    assert "SpeedVerdict" not in inspect.getsource(score)
