"""Stage 3 of grading, score: read the executed notebook once and decide every cell's points, on the host.

Inputs: the autograded notebook nbgrader wrote from what came back out of the sandbox, the gradebook, the `Execution`
(did the run finish) and the `Staged` submission (its review list, found when staging). The rules: a run that did not
finish scores every autograded cell 0 as "not run"; speed points need a passing measurement from the grader (or, where
it could not judge, from the course's harness: decided once, in the executed notebook, by `execute.enforce_speed`), and
only while the output tests each speed cell is paid with
(``paid_with``) pass; a submission on the review list (`tfperf_lab.grading.review`) has the speed cells and the
structural cells that share their evidence, of the exercise a finding is in and of later ones (`review_scope`),
withheld and marked for a person to grade, whoever timed it, and a person's decision on that very file paid again
(`tfperf_lab.grading.decisions`);
a structural cell otherwise keeps whatever its own test gave it, whatever the speed says; a manual score that appeared
while the notebook ran is put back (only an instructor sets one, and never from inside a sandbox).
"""

from __future__ import annotations

import dataclasses

from nbgrader.api import Gradebook, MissingEntry

from tfperf.report import Record, parse_records

from ..course import notebook
from ..isolation import runner
from . import decisions, review
from ..course import Course, Lesson, WorkFolder
from .autograde import Execution
from .results import CellResult, SubmissionResult
from .stage import Staged


NOTEBOOK_LIMIT_MESSAGE = "stopped: the notebook's time limit ran out in this cell (an endless loop?)"
KERNEL_DIED_MESSAGE = "the kernel died while this cell ran (os._exit, a crash or out of memory)"


def cell_outcomes(executed: dict) -> dict[str, tuple[str, str]]:
    """grade_id -> (status from outputs, one-line message) of an executed notebook. What the sandbox's runner wrote
    into the cells a time limit or a dead kernel stopped (`tfperf_lab.isolation.runner`) comes first: the cell the
    notebook's limit ran out in is a "timeout", the cell the kernel died in an "error", the cells after either "not run"."""
    outcomes = {}
    for cell in executed["cells"]:
        grade_id = notebook.nbgrader_meta(cell).get("grade_id") or cell.get("id")
        outputs = cell.get("outputs", []) or []
        errors = [o for o in outputs if o.get("output_type") == "error"]
        stderr = [o for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        stopped = next((o for o in errors if o.get("ename") in (runner.NOTEBOOK_LIMIT, runner.NOT_RUN, runner.KERNEL_DIED)), None)
        if stopped is not None:
            ename = stopped.get("ename")
            if ename == runner.NOTEBOOK_LIMIT:
                outcomes[grade_id] = ("timeout", NOTEBOOK_LIMIT_MESSAGE)
            elif ename == runner.KERNEL_DIED:
                outcomes[grade_id] = ("error", KERNEL_DIED_MESSAGE)
            else:
                evalue = notebook.text(stopped.get("evalue", "")).strip()
                outcomes[grade_id] = ("not run", evalue.splitlines()[0][:300] if evalue else "not run")
            continue
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


SYNTAX = ("SyntaxError", "IndentationError", "TabError")


def syntax_errors(executed: dict) -> list[tuple[str, str, str]]:
    """(cell, " at line N" or "", the error) for every cell Python could not read: ``("make_callable_solution",
    " at line 4", "SyntaxError: invalid syntax")``. A cell with a syntax error defines nothing, so the tests after it
    fail with a NameError that does not say why; the feedback says it from these."""
    import re

    found = []
    for cell in executed["cells"]:
        for output in cell.get("outputs", []) or []:
            if output.get("output_type") == "error" and output.get("ename") in SYNTAX:
                evalue = notebook.text(output.get("evalue", ""))
                line = re.search(r"line (\d+)", evalue)
                reason = re.sub(r"\s*\([^()]*line \d+\)$", "", evalue).strip() or output["ename"]
                name = notebook.nbgrader_meta(cell).get("grade_id") or cell.get("id") or "?"
                found.append((name, f" at line {line.group(1)}" if line else "", f"{output['ename']}: {reason[:200]}"))
                break
    return found


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
    # Speed points were decided once, in the executed notebook (`execute.enforce_speed`); here the result shows
    # what decided them: the grader's verdicts when it judged (the notebook's own records of those checks dropped).
    if execution.judged:
        graded = {name for names in lesson.speed_checks().values() for name in names}
        verdicts = parse_records(execution.verdicts, source="the grader's verdicts")
        records = verdicts + [r for r in records if r.name not in graded]
        unreadable = None  # the notebook's records no longer decide anything
    result = SubmissionResult(student, lesson.id, notes=list(staged.notes), measurements=records, seconds=execution.seconds,
                              sandbox=execution.backend, judged=execution.judged, review=[str(finding) for finding in staged.review],
                              attempts=execution.attempts, machine=list(execution.machine))
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
        _withhold_speed_of_wrong_outputs(gradebook, lesson, result)
        _withhold_for_review(gradebook, lesson, result, staged.review, staged.notebook)
        decisions.apply(gradebook, work, lesson, result, staged.sha256)
        gradebook.db.commit()
    broken = syntax_errors(notebook.read(autograded)) if finished else []
    for name, line, reason in broken:
        result.notes.append(f"cell {name} has a syntax error{line}: {reason}. Python could not read the cell, so nothing it "
                            "defines exists, and every test that uses it fails with a NameError")
    if broken:
        for cell in result.cells:
            if cell.status == "error" and cell.message.startswith("NameError"):
                cell.message += f" (cell {broken[0][0]} has a syntax error{broken[0][1]})"
    limit = [cell_id for cell_id, (status, message) in outcomes.items() if status == "timeout" and message == NOTEBOOK_LIMIT_MESSAGE]
    timed_out = [cell_id for cell_id, (status, message) in outcomes.items() if status == "timeout" and cell_id not in limit]
    died = [cell_id for cell_id, (status, message) in outcomes.items() if message == KERNEL_DIED_MESSAGE]
    if timed_out:
        result.notes.append(f"cells that ran out of time (stopped at the cell time limit, scored 0, the rest graded): {', '.join(timed_out)}")
    for cell_id in limit:
        result.notes.append(f"the notebook's time limit ran out in cell {cell_id} (an endless loop?): it was stopped, the cells "
                            "after it were not run (0 points), and every cell before it keeps its points")
    for cell_id in died:
        result.notes.append(f"the kernel died while cell {cell_id} ran (os._exit, a crash or out of memory): the cells after it "
                            "were not run, and every cell before it keeps its points")
    if finished and execution.stopped and not limit and not died:  # stopped where no cell says so (before the first cell)
        result.notes.append(execution.stopped)
    return result


def review_scope(nb: dict, review_cells: dict[str, list[str]], found: list[review.Finding], *,
                 openers=None) -> dict[str, list[review.Finding]]:
    """Which review cells each finding withholds: review cell id -> its findings, in the order found.

    ``nb`` is the submission as it runs (the staged notebook), split into exercises at its section headings
    (`notebook.exercises`; ``openers``: the release's heading cells, so a learner's own headings open nothing). An
    exercise's review cells are the review cells it holds and every review cell that shares their speed checks (a
    structural cell ``review_with`` one of them, wherever it sits). A finding withholds the review cells of the exercise
    that holds it and of every exercise with a test cell after it (code reaches only what runs after it, and a patch in
    one exercise's answer runs before every later exercise's tests), never those of an earlier exercise; a finding in a
    cell outside every exercise (set-up, a demonstration, a cell the learner added there) withholds those of every
    exercise with a test cell after it. A finding in a cell the notebook does not hold withholds every review cell.
    """
    position = {cell.get("id"): index for index, cell in enumerate(nb["cells"])}
    tests_at = {cell.get("id"): index for index, cell in enumerate(nb["cells"]) if notebook.nbgrader_meta(cell).get("grade")}
    scopes = []  # (start, stop, the review cells it withholds, index of its last test cell or -1, is it an exercise)
    for section in notebook.sections(nb, openers=openers):
        own = [cell for cell in section["graded"] if cell in review_cells]
        checks = {check for cell in own for check in review_cells[cell]}
        withheld = set(own) | {cell for cell, linked in review_cells.items() if checks & set(linked)}
        last_test = max((tests_at[cell] for cell in section["tests"] if cell in tests_at), default=-1)
        scopes.append((section["start"], section["stop"], withheld, last_test, bool(section["graded"])))
    scope: dict[str, list[review.Finding]] = {}
    for finding in found:
        where = position.get(finding.cell)
        if where is None:
            targets = set(review_cells)
        else:
            _, _, withheld, _, exercise = next(item for item in scopes if item[0] <= where < item[1])
            later = {cell for item in scopes if item[4] and item[3] > where for cell in item[2]}
            targets = (withheld if exercise else set()) | later
        for cell in sorted(targets):
            scope.setdefault(cell, []).append(finding)
    return scope


def _withhold_speed_of_wrong_outputs(gradebook: Gradebook, lesson: Lesson, result: SubmissionResult) -> None:
    """Speed is paid only for correct outputs: a speed cell one of whose output tests (`Lesson.speed_outputs`, the
    ``paid_with`` it names) did not pass scores 0 (the speed check compares what each call returns; those tests check
    everything the answer computes)."""
    status = {cell.id: cell for cell in result.cells}
    for speed_cell, outputs in lesson.speed_outputs().items():
        cell = status.get(speed_cell)
        wrong = [name for name in outputs if name in status and status[name].status != "passed"]
        if cell is None or not cell.score or not wrong:
            continue
        gradebook.find_grade(cell.id, lesson.id, lesson.id, result.student).auto_score = 0.0
        cell.score, cell.status = 0.0, "failed"
        cell.message = (f"speed points withheld: speed is paid only for correct outputs, and {', '.join(wrong)} did not pass "
                        f"(your answer was timed: {cell.message or 'fast enough'})")


def _withhold_for_review(gradebook: Gradebook, lesson: Lesson, result: SubmissionResult, found: list[review.Finding],
                         nb: dict | None = None) -> None:
    """A submission on the review list: the review cells its findings reach (`review_scope`: speed cells and the
    structural cells ``review_with`` them, of the finding's own exercise and later ones) score 0 and are marked "needs manual grade"
    in the gradebook (the formgrader lists them), whoever timed the speed. What each had earned (its test and the
    grader's verdict) is kept in ``result.withheld``, for a person's decision (`tfperf_lab.grading.decisions`)."""
    if not found:
        return
    result.findings = [dataclasses.asdict(finding) for finding in found]
    if nb is None:
        scope = {cell: list(found) for cell in lesson.review_cells()}
    else:
        openers = {section["heading"] for section in notebook.sections(lesson.release_notebook()) if section["heading"]}
        scope = review_scope(nb, lesson.review_cells(), found, openers=openers)
    for cell in result.cells:
        if cell.id not in scope:
            continue
        reasons = sorted({(finding.cell, finding.line) for finding in scope[cell.id]})
        where = ", ".join(f"cell {name} line {line}" for name, line in reasons[:3]) + (", ..." if len(reasons) > 3 else "")
        grade = gradebook.find_grade(cell.id, lesson.id, lesson.id, result.student)
        grade.needs_manual_grade = True
        result.withheld[cell.id] = {"earned": cell.score or 0.0, "status": cell.status, "message": cell.message,
                                    "findings": [f"cell {name} line {line}" for name, line in reasons]}
        earned = f" (its test passed: {cell.score:g} of {cell.max_score:g})" if cell.score else ""
        grade.auto_score = 0.0
        cell.score, cell.status = 0.0, "review"
        cell.message = (f"withheld for review{earned}: the code reaches into the course's or the interpreter's machinery "
                        f"({where}); your instructor decides")
