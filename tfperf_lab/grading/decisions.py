"""Settling the review list: a person's decision on a submission whose code reaches into the machinery.

The score stage withholds the review cells a finding reaches (`tfperf_lab.grading.score.review_scope`) and keeps, per
withheld cell, what it had earned: its test's points with the grader's speed verdict applied (``result.withheld``).
``tfperf-lab review WORK`` lists every submission on the list with its findings in context; ``--accept STUDENT
LESSON`` pays each withheld cell what it had earned, ``--reject`` keeps it at 0. Nothing runs again: the decision sets
those cells' manual scores in the gradebook (and clears "needs manual grade"), updates the saved state, rewrites the
CSV and that student's feedback page.

A decision lives in ``WORK/review/<student>/<lesson>.json`` with the sha256 of the file it was taken on, who took it
and when. It holds for that file only: a later grading of the same file (``--force`` too) takes it again (`apply`,
from the score stage, paying what that grading measured for the cells it withheld); a grading of a changed file drops
it (renamed ``<lesson>.dropped-<time>.json``), and the submission is back on the list.
"""

from __future__ import annotations

import datetime
import getpass
import json
import pathlib

from nbgrader.api import Gradebook, MissingEntry
from tfperf import present

from ..course import Course, Lesson, WorkFolder, notebook
from . import store
from .results import SubmissionResult, write_csv

DECISIONS = ("accepted", "rejected")


class ReviewError(Exception):
    """A decision that cannot be taken (unknown student or lesson, not on the list): the message says why."""


def load(work: WorkFolder, student: str, lesson_id: str) -> dict | None:
    """The decision taken on a submission, or None (none, or a file that cannot be read)."""
    try:
        record = json.loads(work.decision(student, lesson_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("decision") in DECISIONS else None


def _write(work: WorkFolder, record: dict) -> pathlib.Path:
    target = work.decision(record["student"], record["lesson"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return target


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _pay(gradebook: Gradebook, lesson: Lesson, result: SubmissionResult, record: dict) -> dict[str, float]:
    """Set every withheld cell of ``result`` by the decision, in the result and as the gradebook's manual score (no
    longer "needs manual grade"); returns cell id -> points paid."""
    accepted, day = record["decision"] == "accepted", record["at"][:10]
    paid = {}
    for cell in result.cells:
        info = result.withheld.get(cell.id)
        if info is None:
            continue
        points = float(info.get("earned") or 0.0) if accepted else 0.0
        grade = gradebook.find_grade(cell.id, lesson.id, lesson.id, result.student)
        grade.manual_score, grade.needs_manual_grade = points, False
        where = ", ".join(info.get("findings") or []) or "the lines the review names"
        if accepted:
            cell.score, cell.status = points, info.get("status") or "passed"
            cell.message = "; ".join(part for part in (info.get("message"), f"reviewed by {record['by']} on {day} ({where}): "
                                                      f"accepted, the points its test earned are paid") if part)
        else:
            cell.score, cell.status = 0.0, "rejected"
            cell.message = (f"withheld after review: {record['by']} read the code that reaches into the course's or the "
                            f"interpreter's machinery ({where}) on {day} and kept this cell at 0")
        paid[cell.id] = points
    result.decision = {"decision": record["decision"], "by": record["by"], "at": record["at"]}
    return paid


def clear_paid(course: Course, work: WorkFolder, student: str, lesson_id: str) -> None:
    """Before a submission is graded again: take back the manual scores its decision wrote (those still as it wrote
    them; one a person changed since in the formgrader stays), so nbgrader and the score stage see the fresh autograde.
    The score stage pays them again when the file is the one decided on (`apply`)."""
    record = load(work, student, lesson_id)
    if not record or not record.get("paid") or not work.has_gradebook:
        return
    with Gradebook(work.gradebook_url, course_id=course.id) as gradebook:
        for cell_id, points in record["paid"].items():
            try:
                grade = gradebook.find_grade(cell_id, lesson_id, lesson_id, student)
            except MissingEntry:
                continue
            if grade.manual_score is not None and abs(grade.manual_score - float(points)) < 1e-9:
                grade.manual_score = None
        gradebook.db.commit()


def apply(gradebook: Gradebook, work: WorkFolder, lesson: Lesson, result: SubmissionResult, sha256: str) -> None:
    """From the score stage, after withholding: the decision taken on this very file (same sha256) is taken again on
    what this grading measured; one taken on another version of the file is dropped, and the submission is back on the
    review list."""
    record = load(work, result.student, lesson.id)
    if record is None:
        return
    if record.get("sha256") != sha256:
        stamp = _now().replace(":", "").replace("-", "")[:15]
        work.decision(result.student, lesson.id).rename(work.decision(result.student, lesson.id).with_name(f"{lesson.id}.dropped-{stamp}.json"))
        result.notes.append(f"the review decision ({record['decision']} by {record['by']} on {record['at'][:10]}) was taken on "
                            f"another version of this file: dropped" + ("; back on the review list" if result.review else ""))
        return
    if not result.review:
        return
    record["paid"] = _pay(gradebook, lesson, result, record)
    _write(work, record)


def _stored(work: WorkFolder, student: str, lesson_id: str) -> "store.Entry":
    item = store.entry(work, student, lesson_id)
    if item is None or item.outcome != "graded":
        graded = store.graded_students(work)
        if student not in graded:
            raise ReviewError(f"no student {student!r} was graded in {work.root}"
                              + (f" (graded there: {', '.join(graded)})" if graded else " (nothing was graded there)"))
        lessons = store.lessons_of(work, student)
        raise ReviewError(f"{student} has no graded submission of {lesson_id} in {work.root} (graded: {', '.join(lessons) or 'none'})")
    return item


def decide(course: Course, work: WorkFolder, student: str, lesson_id: str, decision: str, *, by: str | None = None,
           csv_path: pathlib.Path | None = None, render=None) -> tuple[SubmissionResult, list[str]]:
    """Accept or reject one submission of the review list, without running anything: the gradebook's manual scores
    of its withheld cells, its saved state, the decision file, the CSV (from every saved state) and its feedback page.
    Returns the updated result and what to tell the person. Raises `ReviewError` (and `UnknownLesson`) with the reason.
    ``render(course, work, lesson_id, student, result)`` writes the feedback page (the command passes `batch.feedback`)."""
    if decision not in DECISIONS:
        raise ValueError(f"a decision is one of {DECISIONS}, not {decision!r}")
    lesson = course.lesson(lesson_id)
    saved = _stored(work, student, lesson.id)
    result = saved.result
    if not result.review:
        raise ReviewError(f"{student}'s {lesson.id} is not on the review list (no finding when it was graded): nothing to decide")
    if decision == "accepted" and result.withheld == {} and not result.findings:
        raise ReviewError(f"{student}'s {lesson.id} was graded before the grader recorded what withheld cells earned: grade it "
                          f"again (tfperf-lab grade FOLDER --work {work.root} --force), then accept it")
    said = []
    earlier = load(work, student, lesson.id)
    if earlier is not None and earlier.get("sha256") == saved.sha256:
        if earlier["decision"] == decision:
            return result, [f"{student}'s {lesson.id} was already {decision} by {earlier['by']} on {earlier['at'][:10]}: nothing changed"]
        said.append(f"{student}'s {lesson.id} was {earlier['decision']} by {earlier['by']} on {earlier['at'][:10]}: changed to {decision}")
    history = (earlier.get("history", []) + [{k: v for k, v in earlier.items() if k != "history"}]) if earlier else []
    record = {"student": student, "lesson": lesson.id, "sha256": saved.sha256, "source": saved.source,
              "decision": decision, "by": by or getpass.getuser(), "at": _now(), "findings": result.findings or result.review,
              "history": history}
    with Gradebook(work.gradebook_url, course_id=course.id) as gradebook:
        record["paid"] = _pay(gradebook, lesson, result, record)
        gradebook.db.commit()
    _write(work, record)
    if render is not None and not result.error and work.autograded(student, lesson.id).exists():
        try:
            result.feedback = render(course, work, lesson.id, student, result)
        except RuntimeError as error:
            said.append(f"{student}: {error}")
    store.decided(work, result)
    table = rewrite_csv(work, csv_path, course)
    try:  # the class page follows the decision (its review list and pass rates)
        from . import classpage

        classpage.write(store.rows(work, course), classpage.folder(work), course=course, csv=table)
    except Exception as error:  # noqa: BLE001  (the decision and the CSV stand: a page that cannot be drawn loses none)
        said.append(f"the class page could not be written again: {type(error).__name__}: {error}")
    paid = ", ".join(f"{cell} {points:g}" for cell, points in record["paid"].items()) or "no cell was withheld"
    said.append(f"{lesson.id} ({student}): {decision} by {record['by']}; paid {paid}; {result.score:g} / {result.max_score:g} "
                f"points autograded now")
    said.append(f"decision: {work.decision(student, lesson.id)}; grades: {table}"
                + (f"; feedback: {result.feedback}" if result.feedback else ""))
    return result, said


def rewrite_csv(work: WorkFolder, csv_path: pathlib.Path | None = None, course: Course | None = None) -> pathlib.Path:
    """The grades CSV again (the columns `tfperf-lab grade` writes), from every row of the store (`store.rows`)."""
    return write_csv(store.rows(work, course), csv_path or work.grades_csv)


def context(nb: dict, cell_id: str, line: int, around: int = 2) -> list[str]:
    """The finding's line of a cell with ``around`` lines either side, numbered, the line itself marked."""
    cell = next((c for c in nb.get("cells", []) if c.get("id") == cell_id), None)
    if cell is None:
        return [f"      (cell {cell_id} is not in the submitted notebook)"]
    lines = notebook.source(cell).splitlines()
    first, last = max(1, line - around), min(len(lines), line + around)
    return [f"    {'>' if number == line else ' '}{number:4d} | {lines[number - 1]}" for number in range(first, last + 1)]


def listing(course: Course, work: WorkFolder) -> list[str]:
    """Every submission on the review list: its findings with their lines in context, the cells withheld with the
    points their tests earned (and the grader's speed verdict), and its decision or how to take one."""
    out, pending, total = [], 0, 0
    for result in store.results(work):
        if not result.review:
            continue
        total += 1
        head = f"{result.lesson} ({result.student}): {result.score:g} / {result.max_score:g} points autograded"
        if result.decision:
            head += f"; {result.decision['decision']} by {result.decision['by']} on {result.decision['at'][:10]}"
        else:
            pending += 1
            head += "; waiting for a decision"
        out.append(head)
        try:
            submitted = notebook.read(work.submitted(result.student, result.lesson))
        except (OSError, ValueError):
            submitted = {"cells": []}
        if result.findings:
            for finding in result.findings:
                out.append(f"  finding: cell {finding['cell']}, line {finding['line']}: {finding['why']}")
                out += context(submitted, finding["cell"], int(finding["line"]))
        else:
            out += [f"  finding: {text}" for text in result.review]
        try:
            checks = course.lesson(result.lesson).speed_checks()
        except Exception:  # noqa: BLE001  (a lesson no longer in the course: list it without its checks)
            checks = {}
        cells = {cell.id: cell for cell in result.cells}
        if not result.withheld:
            out.append("  withheld: nothing (no exercise's test runs after the findings)" if result.findings else
                       "  withheld: not recorded (graded before the grader kept what withheld cells earned: grade again with --force)")
        for cell_id, info in result.withheld.items():
            cell = cells.get(cell_id)
            most = f" of {cell.max_score:g}" if cell else ""
            line = f"  withheld: {cell_id}: its test earned {float(info.get('earned') or 0):g}{most}"
            if cell_id in checks:
                verdicts = [m for m in result.measurements if m.name in checks[cell_id]]
                line += "".join(f"; {present.measurement(m, outcome=' ')}" for m in verdicts)
            if cell is not None and result.decision:
                line += f"; now {cell.score:g}"
            out.append(line)
        if result.decision:
            other = "reject" if result.decision["decision"] == "accepted" else "accept"
            out.append(f"  change it: tfperf-lab review {work.root} --{other} {result.student} {result.lesson}")
        else:
            out.append(f"  settle: tfperf-lab review {work.root} --accept {result.student} {result.lesson}   "
                       f"(or --reject {result.student} {result.lesson})")
    out.append(f"{total} submission(s) on the review list in {work.root}, {pending} waiting for a decision" if total
               else f"no submission on the review list in {work.root}")
    return out
