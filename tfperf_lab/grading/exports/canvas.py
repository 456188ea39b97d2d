"""Canvas: ``OUT/canvas/grades.csv`` for Canvas's Grades > Import, a row for every student and a number in every cell.

Follows the gradebook importer of Canvas (instructure/canvas-lms, ``app/models/gradebook_importer.rb``; the guide:
community.canvaslms.com, "How do I import grades in the Gradebook?"): the header is ``Student, ID, SIS User ID,
SIS Login ID, Section`` and then one column per assignment; a column titled ``NAME (12345)`` is matched to the
assignment of Canvas ID 12345, any other by its exact title, and a title Canvas does not have creates an assignment;
the second row, ``Points Possible``, gives each column's points. A student row is matched on ``ID`` (Canvas's user
id), then ``SIS User ID``, ``SIS Login ID``, then the name. A blank cell changes nothing in Canvas.

Here: one column per lesson graded, titled as the roster's Canvas assignment of the same lesson (its title is the
lesson's id or title, with its Canvas ID: give ``--roster`` Canvas's own gradebook export, Grades > Export) or by the
lesson's id. One row per student: every roster student (``--mapping`` names the submission folders no roster column
does), then any submission folder the roster does not know (noted). Each cell holds the lesson's points: the autograded
points after the late penalty (`SubmissionResult.score`), plus the written answers' points a person gave in the
formgrader (nbgrader's gradebook, read when exporting; one not graded yet is left out and named in the notes). Points
Possible counts both. Nothing handed in (a roster student's lesson, `tfperf_lab.grading.store.rows`' "not submitted"
row), a file refused, a notebook that ran out of time: 0, never blank. Left blank, with a note: a row of the grading
machine's fault (it is graded again by the next ``tfperf-lab grade``: export again then) and a lesson the student is
excused from (excuse it in Canvas); blank without a note: a lesson no roster says this student had (no roster, or a
folder the roster does not know). A cell withheld for review counts 0 (Canvas has no place for why: settle the list
first with ``tfperf-lab review``).
"""

from __future__ import annotations

import csv
import pathlib
from typing import TYPE_CHECKING

from . import Request, Written, lesson_of, number, ordered, register, why_not_graded

if TYPE_CHECKING:
    from ...course import Course, WorkFolder
    from ..results import SubmissionResult
    from ..roster import Roster, Student

STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # as tfperf_lab.grading.roster reads them
POINTS_POSSIBLE = "Points Possible"


def manual_scores(course: "Course | None", work: "WorkFolder", rows: list["SubmissionResult"]) -> dict[tuple[str, str], dict[str, float | None]]:
    """(student folder, lesson) -> grade_id -> the manual score nbgrader's gradebook holds now (None: not graded by hand
    yet), for every handed-in submission that has written answers; the result's own (from when it was graded) where the
    gradebook has no such submission."""
    wanted = [r for r in rows if r.submitted and not r.machine and any(c.kind == "manual" for c in r.cells)]
    found = {(r.student, r.lesson): {c.id: c.score for c in r.cells if c.kind == "manual"} for r in wanted}
    if not wanted or course is None or not work.has_gradebook:
        return found
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(work.gradebook_url, course_id=course.id) as gradebook:
        for result in wanted:
            try:
                grades = {g.name: g for g in gradebook.find_submission_notebook(result.lesson, result.lesson, result.student).grades}
            except MissingEntry:
                continue
            for cell_id in found[(result.student, result.lesson)]:
                if cell_id in grades:
                    found[(result.student, result.lesson)][cell_id] = grades[cell_id].manual_score
    return found


def _who(student: "Student | None", roster: "Roster | None", folder: str) -> list[str]:
    """The five student columns: a Canvas export's own row, else what the roster knows, else the folder's name as the
    student's name and login (Canvas matches a login or a name)."""
    if student is None:
        return [folder, "", "", folder, ""]
    row = roster.row(student) if roster is not None else None
    if row is not None:
        return [(row.get(column) or "").strip() for column in STUDENT_COLUMNS]
    return [student.name or student.id, student.canvas_id, student.sis_id, student.login or student.id, student.section]


def _most(lesson, lesson_id: str, rows: list["SubmissionResult"]) -> float:
    """A lesson's points: every graded cell's, written answers included."""
    if lesson is not None:
        return sum(cell["points"] for cell in lesson.grade_cells())
    return max((sum(c.max_score for c in r.cells) for r in rows if r.lesson == lesson_id and r.cells), default=0.0)


def canvas_table(rows: list["SubmissionResult"], course: "Course | None" = None, roster: "Roster | None" = None, *,
                 manual: dict[tuple[str, str], dict[str, float | None]] | None = None) -> tuple[list[list[str]], list[str]]:
    """Canvas's gradebook import for the class's rows (`tfperf_lab.grading.store.rows`): the rows of ``grades.csv`` and
    what the person exporting should know. ``manual``: `manual_scores` (default: the scores the rows hold)."""
    manual = manual if manual is not None else {
        (r.student, r.lesson): {c.id: c.score for c in r.cells if c.kind == "manual"} for r in rows if r.submitted}
    notes: list[str] = []
    lessons = ordered(rows, course)
    columns, points = [], []
    for lesson_id in lessons:
        lesson = lesson_of(course, lesson_id)
        column = roster.assignment_column(lesson_id, lesson.title if lesson else None) if roster is not None else None
        columns.append(column or lesson_id)
        points.append(number(_most(lesson, lesson_id, rows)))
    people: dict[tuple[str, str], dict] = {}
    for student in (roster.students if roster is not None else []):
        people[("roster", student.id)] = {"who": _who(student, roster, student.id), "results": {}}
    strangers = []
    for result in rows:
        student = roster.find(result.student) if roster is not None else None
        key = ("roster", student.id) if student is not None else ("folder", result.student)
        if key not in people:
            people[key] = {"who": _who(student, roster, result.student), "results": {}}
            if roster is not None:
                strangers.append(result.student)
        kept = people[key]["results"]
        earlier = kept.get(result.lesson)
        if earlier is None or (result.submitted and not earlier.submitted):
            kept[result.lesson] = result
        elif result.submitted:
            notes.append(f"{earlier.student} and {result.student} both hand in {key[1]}'s {result.lesson}: the higher score "
                         "is exported")
            if result.score > earlier.score:
                kept[result.lesson] = result
    for folder in sorted(set(strangers)):
        notes.append(f"{folder} is not on the roster: its row has the folder's name as Student and SIS Login ID and no "
                     f"Canvas ID; Canvas matches it by login or name, or lists it as unknown (add it to the roster, or "
                     f"name its student with --mapping)")
    ordered_people = [key for key in people if key[0] == "roster"] + sorted(key for key in people if key[0] == "folder")
    table = [[*STUDENT_COLUMNS, *columns], [POINTS_POSSIBLE, "", "", "", "", *points]]
    nothing, zero, pending, late, machine, excused = [], [], [], [], [], []
    for key in ordered_people:
        person = people[key]
        cells = []
        for lesson_id in lessons:
            result = person["results"].get(lesson_id)
            name = f"{key[1]}'s {lesson_id}"
            if result is None:  # not assigned to this student (`store.rows`: the roster's lessons), or no roster says so
                cells.append("")
            elif result.machine:
                machine.append(name)
                cells.append("")
            elif not result.submitted:
                if result.excused:
                    excused.append(name)
                    cells.append("")
                else:
                    nothing.append(name)
                    cells.append("0")
            else:
                given = manual.get((result.student, lesson_id), {})
                waiting = [cell_id for cell_id, score in given.items() if score is None]
                if waiting:
                    pending.append(f"{name} ({', '.join(waiting)})")
                total = result.score + sum(score for score in given.values() if score is not None)
                if result.error:
                    zero.append(f"{name} ({why_not_graded(result)})")
                if result.late:
                    late.append(f"{name} -{result.penalty:g}")
                cells.append(number(total))
        table.append([*person["who"], *cells])
    if machine:
        notes.append("not graded yet, by the grading machine's fault (left blank: Canvas keeps what it has; the next "
                     f"`tfperf-lab grade` grades them, then export again): {', '.join(machine)}")
    if nothing:
        notes.append(f"nothing handed in: 0 for {', '.join(nothing)}")
    if zero:
        notes.append(f"could not be graded or did not run to the end (scored as it stands, 0 for what never ran): {'; '.join(zero)}")
    if excused:
        notes.append(f"excused by the semester file (left blank: excuse them in Canvas): {', '.join(excused)}")
    if pending:
        notes.append("written answers not graded by hand yet (left out of the total until you grade them in the "
                     f"formgrader; export again then): {', '.join(pending)}")
    if late:
        notes.append(f"late penalties taken: {', '.join(late)}")
    waiting = sorted(f"{r.student} {r.lesson}" for r in rows if r.review and not r.decision and not why_not_graded(r))
    if waiting:
        notes.append(f"on the review list, waiting for a decision (withheld cells exported as 0): {', '.join(waiting)}")
    return table, notes


@register("canvas", help="OUT/canvas/grades.csv for Canvas's Grades > Import: a row and a number for every roster "
                         "student (--roster: Canvas's own gradebook export gives the assignment ids)", files="grades.csv")
def write(request: Request) -> Written:
    """Write ``grades.csv`` (`canvas_table`, with the manual scores nbgrader's gradebook holds now)."""
    table, notes = canvas_table(request.rows, request.course, request.roster,
                                manual=manual_scores(request.course, request.work, request.rows))
    target = pathlib.Path(request.folder) / "grades.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(table)
    return Written("canvas", target.parent, [target], notes)
