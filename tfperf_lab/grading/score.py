"""Stage 3 of grading, score: read the executed notebook once and decide every cell's points, on the host.

Inputs: the autograded notebook nbgrader wrote from what came back out of the sandbox, the gradebook, the `Execution`
(did the run finish) and the `Staged` submission (its review list, found when staging). The rules: a run that did not
finish scores every autograded cell 0 as "not run"; speed points need a passing measurement from the grader (or, where
it could not judge, from the course's harness); a submission on the review list (`tfperf_lab.grading.review`) has its speed
cells and the structural cells that share their evidence withheld and marked for a person to grade, whoever timed it;
a structural cell otherwise keeps whatever its own test gave it, whatever the speed says; a manual score that appeared
while the notebook ran is put back (only an instructor sets one, and never from inside a sandbox).
"""

from __future__ import annotations


from nbgrader.api import Gradebook, MissingEntry

from tfperf.report import Record, parse_records

from ..course import notebook
from . import review
from ..course import Course, Lesson, WorkFolder
from .autograde import Execution
from ..speed import TECHNIQUE
from .results import CellResult, SubmissionResult
from .stage import Staged


def cell_outcomes(executed: dict) -> dict[str, tuple[str, str]]:
    """grade_id -> (status from outputs, one-line message) of an executed notebook."""
    outcomes = {}
    for cell in executed["cells"]:
        grade_id = notebook.nbgrader_meta(cell).get("grade_id") or cell.get("id")
        outputs = cell.get("outputs", []) or []
        errors = [o for o in outputs if o.get("output_type") == "error"]
        stderr = [o for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        if errors:
            ename, evalue = errors[0].get("ename", "Error"), notebook.text(errors[0].get("evalue", ""))
            if ename in ("CellTimeoutError", "KeyboardInterrupt"):  # nbgrader interrupts a cell at its time limit
                outcomes[grade_id] = ("timeout", "stopped at the cell time limit (an endless loop?)")
                continue
            status = "failed" if ename == "AssertionError" else "error"
            outcomes[grade_id] = (status, f"{ename}: {evalue}".splitlines()[0][:300] if evalue else ename)
        elif stderr:
            first = ("".join(notebook.text(o.get("text")) for o in stderr).strip().splitlines() or [""])[0][:200]
            outcomes[grade_id] = ("error", "wrote to stderr: " + first)
        else:
            outcomes[grade_id] = ("passed", "")
    return outcomes


def manual_scores(work: WorkFolder, course: Course, lesson_id: str, student: str) -> dict[str, float | None]:
    """grade_id -> manual score in the gradebook now (taken before autograding, to put back anything that changed)."""
    try:
        with Gradebook(work.gradebook_url, course_id=course.id) as gradebook:
            return {g.name: g.manual_score for g in gradebook.find_submission_notebook(lesson_id, lesson_id, student).grades}
    except MissingEntry:
        return {}


def measurements(execution: Execution) -> tuple[list[Record], str | None]:
    """The records that came back out of the sandbox, and why none could be read (a broken or forged file)."""
    try:
        return parse_records(execution.records, source="the notebook's records"), None
    except ValueError as error:
        return [], f"its measurement records could not be read ({error}): no speed points"


def score(course: Course, work: WorkFolder, staged: Staged, execution: Execution, *, manual_before: dict[str, float | None]) -> SubmissionResult:
    """Points for every graded cell of one autograded submission, written to the gradebook and returned.

    When the grader judged the speed checks (`tfperf_lab.speed.judge`), its records alone decide speed points and stand in
    the result; the notebook's own records of those checks are dropped, its other measurements kept for the report.
    """
    lesson, student = staged.lesson, staged.student
    records, unreadable = measurements(execution)
    if execution.judged:
        graded = {name for names in lesson.speed_checks().values() for name in names}
        records = parse_records(execution.verdicts, source="the grader's verdicts") + [r for r in records if r.name not in graded]
        unreadable = None  # the notebook's records no longer decide anything
    result = SubmissionResult(student, lesson.id, notes=list(staged.notes), measurements=records, seconds=execution.seconds,
                              sandbox=execution.backend, judged=execution.judged, review=[str(finding) for finding in staged.review],
                              attempts=execution.attempts)
    if unreadable:
        result.notes.append(unreadable)
    result.notes += [str(note) for note in execution.judge_notes]
    result.notes += [f"this grading machine does not hold every limit: {warning}" for warning in execution.warnings]
    autograded = work.autograded(student, lesson.id)
    finished = execution.finished and autograded.exists()
    outcomes = cell_outcomes(notebook.read(autograded)) if finished else {}
    if not execution.finished:
        result.error = execution.problem or "the notebook did not finish"
    with Gradebook(work.gradebook_url, course_id=course.id) as gradebook:
        try:
            grades = {g.name: g for g in gradebook.find_submission_notebook(lesson.id, lesson.id, student).grades}
        except MissingEntry:
            grades = {}
        for cell in lesson.grade_cells():
            grade = grades.get(cell["id"])
            if grade is not None and cell["id"] in manual_before and grade.manual_score != manual_before[cell["id"]]:
                grade.manual_score = manual_before[cell["id"]]  # set while the notebook ran: never accepted
                result.notes.append(f"a manual score of {cell['id']} changed while the notebook ran: put back")
            if cell["kind"] == "manual":
                score_value = grade.manual_score if grade is not None else None
                result.cells.append(CellResult(cell["id"], score_value, cell["points"], "manual", "manual", "graded by your instructor"))
                continue
            status, message = outcomes.get(cell["id"], ("missing", "cell not found in the graded notebook"))
            if not finished:
                status, message = "not run", "the notebook stopped before this cell ran"
                if grade is not None:
                    grade.auto_score = 0.0
            score_value = (grade.score if grade is not None else 0.0) if finished else 0.0
            if status == "passed" and score_value < cell["points"]:
                status, message = "failed", "no points awarded"
            result.cells.append(CellResult(cell["id"], score_value, cell["points"], "auto", status, message))
        _withhold_speed_points(gradebook, lesson, result, unreadable=bool(unreadable), judged=execution.judged)
        _withhold_for_review(gradebook, lesson, result, staged.review)
        gradebook.db.commit()
    timed_out = [cell_id for cell_id, (status, _) in outcomes.items() if status == "timeout"]
    if timed_out:
        result.notes.append(f"cells that ran out of time (stopped, scored 0, the rest graded): {', '.join(timed_out)}")
    return result


def _withhold_speed_points(gradebook: Gradebook, lesson: Lesson, result: SubmissionResult, *, unreadable: bool, judged: bool) -> None:
    """Zero speed test cells that passed without a genuine measurement: no passing record from the grader (or, where
    the grader could not judge, from the harness), or records that could not be read."""
    checks = lesson.speed_checks()
    measured = {item.name: item for item in result.measurements if not judged or item.technique == TECHNIQUE}
    for cell in result.cells:
        if cell.id not in checks or not cell.score:
            continue
        if unreadable:
            reason = "its measurement records could not be read"
        elif not all(measured.get(name) is not None and measured[name].passed for name in checks[cell.id]):
            reason = ("the grader's own measurement did not pass" if judged
                      else "its speed check did not run through the course's timing harness")
        else:
            continue
        gradebook.find_grade(cell.id, lesson.id, lesson.id, result.student).auto_score = 0.0
        cell.score, cell.status, cell.message = 0.0, "failed", f"speed points withheld: {reason}"


def _withhold_for_review(gradebook: Gradebook, lesson: Lesson, result: SubmissionResult, found: list[review.Finding]) -> None:
    """A submission on the review list: its speed cells and the structural cells ``review_with`` them score 0 and are
    marked "needs manual grade" in the gradebook (the formgrader lists them), whoever timed the speed."""
    if not found:
        return
    where = ", ".join(sorted({f"cell {finding.cell} line {finding.line}" for finding in found})[:3])
    for cell in result.cells:
        if cell.id not in lesson.review_cells():
            continue
        grade = gradebook.find_grade(cell.id, lesson.id, lesson.id, result.student)
        grade.needs_manual_grade = True
        earned = f" (its test passed: {cell.score:g} of {cell.max_score:g})" if cell.score else ""
        grade.auto_score = 0.0
        cell.score, cell.status = 0.0, "review"
        cell.message = (f"withheld for review{earned}: the code reaches into the course's or the interpreter's machinery "
                        f"({where}); your instructor decides")
